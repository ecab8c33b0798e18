"""Secrets in code and config through the ``pii`` stage: every credential of the
realistic set (bench/data/build_secret_set.py: provider-format keys in real file
shapes) is replaced; real code that holds none (standard-library modules and their
test fixtures, ``*.dist-info/RECORD`` hash lists, UUID-laden dashboards, a lock file)
comes out byte for byte unchanged."""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from pathlib import Path

import pytest

from datapipe import schema as S
from stages.pii import PiiStage
from stages.pii.stage import PiiConfig
from stages.pii import secrets as X

import ray

SECRET_TYPES = ("api_key", "private_key", "jwt", "password")
STDLIB = Path(sysconfig.get_paths()["stdlib"])
RAY = Path(ray.__file__).parent


@pytest.fixture(scope="module")
def secret_set(repo_dir):
    name = "build_secret_set"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, repo_dir / "bench" / "data" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name].build(seed=0, copies=2)


def scrub(texts: list[str], policy: str = "placeholder") -> list[str]:
    stage = PiiStage(PiiConfig(types=SECRET_TYPES, policy=policy, key="k"))
    batch = S.make_batch(source="code", ids=[f"f{i}" for i in range(len(texts))], texts=texts)
    return stage.process(batch)[0].column(S.TEXT).to_pylist()


def test_every_realistic_secret_is_replaced(secret_set):
    kinds = {k for f in secret_set for _, _, k in f.gold}
    assert kinds == {"api_key", "password", "private_key"} and sum(len(f.gold) for f in secret_set) >= 50
    out = scrub([f.text for f in secret_set])
    for f, o in zip(secret_set, out):
        for a, b, kind in f.gold:
            assert f.text[a:b] not in o, (f.path, kind, f.text[a:b][:40])
    # the case: AWS key id and secret key in a settings file, beside a GitHub token
    settings = next(o for f, o in zip(secret_set, out) if f.path.endswith("settings.py"))
    assert "AWS_ACCESS_KEY_ID = '<API_KEY>'" in settings and "AWS_SECRET_ACCESS_KEY = '<API_KEY>'" in settings
    assert "GITHUB_TOKEN = '<API_KEY>'" in settings and "'PASSWORD': '<PASSWORD>'" in settings
    # what is not a secret stays
    assert "AWS_STORAGE_BUCKET_NAME = 'mysite-static'" in settings


def test_pseudonyms_are_not_detected_again(secret_set):
    once = scrub([f.text for f in secret_set], policy="pseudonym")
    assert once != [f.text for f in secret_set]
    assert scrub(once, policy="pseudonym") == once


def _clean_corpus() -> dict[str, str]:
    files = ["uuid.py", "secrets.py", "hmac.py", "netrc.py", "smtplib.py", "imaplib.py", "ftplib.py",
             "urllib/parse.py", "http/cookiejar.py", "getpass.py", "tokenize.py", "base64.py",
             "test/test_netrc.py", "test/test_smtplib.py", "test/test_imaplib.py", "test/test_ftplib.py",
             "test/test_hmac.py", "test/test_uuid.py", "test/test_base64.py", "test/test_tokenize.py"]
    out = {p: (STDLIB / p).read_text(encoding="utf-8") for p in files if (STDLIB / p).is_file()}
    site = RAY.parent
    for rec in sorted(site.glob("*.dist-info/RECORD"))[:20]:  # sha256 of every installed file
        out[str(rec.relative_to(site))] = rec.read_text(encoding="utf-8")
    for dash in sorted((RAY / "dashboard").rglob("*grafana_dashboard_base.json"))[:3]:  # UUIDs, uids
        out[dash.name] = dash.read_text(encoding="utf-8")
    lock = Path("/usr/lib/google-cloud-sdk/platform/gsutil/third_party/rsa/Pipfile.lock")
    if lock.is_file():
        out["Pipfile.lock"] = lock.read_text(encoding="utf-8")
    return out


def test_real_code_without_secrets_is_unchanged():
    corpus = _clean_corpus()
    assert len(corpus) >= 35
    out = scrub(list(corpus.values()))
    changed = [p for p, a, b in zip(corpus, corpus.values(), out) if a != b]
    assert changed == []


def test_names_and_values_that_are_not_secrets():
    found = lambda t: [t[s.start:s.end] for s in X.find(t)]  # noqa: E731
    assert found('tokenizer = "bert-base-uncased-whole-word"\nmax_tokens = "8192"\n') == []
    assert found('secret_name = "prod-db-credentials-v2"\nPASSWORD_FIELD = "user_password"\n') == []
    assert found('id = "123e4567-e89b-12d3-a456-426614174000"\n') == []
    assert found('api_key = "${API_KEY}"\ntoken = os.environ["TOKEN"]\npassword = "changeme"\n') == []
    assert found('password = "hunter2"\nSECRET = "AWS_SECRET_ACCESS_KEY"\n') == []
    assert found('"AWS::ApiGateway::ApiKey": "48205d4ffd7feba3"\n') == []
    # the same shapes assigned to secret names are secrets
    assert found('api_key = "123e4567-e89b-12d3-a456-426614174000"\n') == ["123e4567-e89b-12d3-a456-426614174000"]
    assert found("DB_PASSWORD=Tr0ub4dor&3x\n") == []  # & ends a bare value (a query string's next parameter)
    assert found("DB_PASSWORD=Tr0ub4dor3x!\n") == ["Tr0ub4dor3x!"]
