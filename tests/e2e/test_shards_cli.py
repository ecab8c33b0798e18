"""``datapipe shards cat|grep`` on the sample job's shards (the session's one run of
jobs/sample.yaml): every kept document decodes back to its text under its id, a known
phrase is found with its document id, no planted secret reached the shards, and the same
works on shards in S3."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cli_helper import _datapipe, _env
from datapipe import fs

pytestmark = pytest.mark.e2e


def _documents(out: Path) -> dict[str, tuple[str, str]]:
    """``{id: (source, text)}`` of the job's documents output."""
    docs = {}
    for f in sorted((out / "documents").glob("*/*.parquet")):
        t = pq.read_table(f, columns=["id", "source", "text"])
        for i, s, x in zip(*(t.column(c).to_pylist() for c in ("id", "source", "text"))):
            docs[i] = (s, x)
    return docs


def _unique_phrase(docs: dict[str, tuple[str, str]], source: str) -> tuple[str, str]:
    """A 40-character phrase from the middle of one ``source`` document that no other
    document holds, and that document's id."""
    for doc_id, (src, text) in sorted(docs.items()):
        if src != source or len(text) < 400:
            continue
        phrase = text[200:240]
        if "\n" not in phrase and sum(phrase in t for _, t in docs.values()) == 1:
            return phrase, doc_id
    raise AssertionError(f"no {source} document with a unique phrase")


@pytest.fixture
def env(ray_cluster, tmp_path):
    return _env(ray_cluster, DATAPIPE_CACHE=str(tmp_path / "cache"))


def test_cat_decodes_every_document_back_to_its_text_under_its_id(sample_output, env, tmp_path):
    out, _ = sample_output
    docs = _documents(out)
    proc = _datapipe(["shards", "cat", str(out), "--jsonl"], env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == len(docs) > 100
    assert {r["id"]: (r["source"], r["text"]) for r in rows} == docs   # ids re-derived, text round-trips
    # one source, the first two documents, in shard order; then chosen ids only
    wiki = _datapipe(["shards", "cat", str(out / "shards" / "wiki"), "--limit", "2"], env, cwd=tmp_path, timeout=300)
    assert wiki.returncode == 0, wiki.stderr[-3000:]
    heads = [ln for ln in wiki.stdout.splitlines() if ln.startswith("=== ")]
    first = [r["id"] for r in rows if r["source"] == "wiki"][:2]
    assert [h.split()[1] for h in heads] == first
    assert docs[first[0]][1] in wiki.stdout
    pick = [r["id"] for r in rows if r["source"] == "news"][3]
    one = _datapipe(["shards", "cat", str(out / "shards"), "--source", "news", "--ids", pick, "--jsonl"], env,
                    cwd=tmp_path, timeout=300)
    assert [json.loads(x)["id"] for x in one.stdout.splitlines()] == [pick]


def test_grep_finds_a_known_phrase_with_its_document_id(sample_output, env, tmp_path):
    out, _ = sample_output
    docs = _documents(out)
    phrase, doc_id = _unique_phrase(docs, "news")
    proc = _datapipe(["shards", "grep", "-F", phrase, str(out / "shards")], env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and lines[0].split("\t")[0] == doc_id and f"[{phrase}]" in lines[0]
    # a regular expression, case-insensitive, limited to one source
    word = re.escape(phrase.split()[1]).upper()
    both = _datapipe(["shards", "grep", "-i", word, str(out), "--source", "news"], env, cwd=tmp_path, timeout=300)
    assert doc_id in {ln.split("\t")[0] for ln in both.stdout.splitlines()}


def test_no_planted_secret_reaches_the_shards(sample_output, env, tmp_path, repo_dir):
    out, _ = sample_output
    truth = json.loads((repo_dir / "jobs" / "sample_data" / "GROUND_TRUTH.json").read_text())
    # every planted value the pii stage scrubs (private IPs are kept by default, by design)
    values = [p["value"] for p in truth["pii"] if p["type"] != "ipv4_private"]
    assert len(values) > 40
    pattern = "|".join(re.escape(v) for v in values)
    proc = _datapipe(["shards", "grep", pattern, str(out)], env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout[:3000]
    assert f"0 match(es) in 0 of {len(_documents(out))} document(s)" in proc.stderr
    # the same search finds them in the job's input: the tool would have seen them
    raw = _datapipe(["shards", "grep", "-F", "192.168.1.34", str(out)], env, cwd=tmp_path, timeout=300)
    assert raw.returncode == 0 and raw.stdout.count("\n") >= 1


def test_a_missing_tokenizer_is_one_clear_line_and_tokenizer_overrides_it(sample_output, env, tmp_path):
    out, _ = sample_output
    loose = tmp_path / "loose" / "wiki"
    shutil.copytree(out / "shards" / "wiki", loose)
    (loose / "tokenizer.json").unlink()   # the copy beside the shards is gone, the manifest names it
    proc = _datapipe(["shards", "cat", str(loose), "--limit", "1"], env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert err[-1].startswith("datapipe: error: source wiki: tokenizer") and "--tokenizer" in err[-1]
    assert "Traceback" not in proc.stderr
    ok = _datapipe(["shards", "cat", str(loose), "--limit", "1", "--tokenizer",
                    str(out / "shards" / "wiki" / "tokenizer.json")], env, cwd=tmp_path, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    # no documents output beside these shards: ids are positions, and a warning says so
    assert ok.stdout.startswith("=== wiki-00000-00000#0 ") and "ids shown are positions" in ok.stderr


def test_grep_reads_shards_on_s3(sample_output, env, tmp_path, bucket, s3_server):
    out, _ = sample_output
    for sub in ("shards/news", "documents/news"):
        fs.upload_tree(str(out / sub), f"{bucket}/out/{sub}")
    phrase, doc_id = _unique_phrase(_documents(out), "news")
    s3_env = {**env, **s3_server["env"]}
    proc = _datapipe(["shards", "grep", "-F", phrase, f"{bucket}/out/shards"], s3_env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [ln.split("\t")[0] for ln in proc.stdout.splitlines()] == [doc_id]
