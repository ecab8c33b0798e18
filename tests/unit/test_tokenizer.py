"""Tokenizer training, loading, fingerprints and EOS resolution (offline, fast)."""

from __future__ import annotations

import argparse
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe.errors import SpecError
from stages.tokenize.identity import fingerprint, load_tokenizer, resolve_eos, tokenizer_info
from stages.tokenize.train import TrainConfig, add_cli, train_tokenizer, training_texts


@pytest.fixture(scope="module")
def wiki_text(shared_dir) -> list[str]:
    text = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    return [d for d in text.split("\n = ") if d.strip()][:120]


def test_train_tiny_vocab_is_lossless_and_deterministic(tmp_path, wiki_text):
    cfg = TrainConfig(vocab_size=400, special_tokens=("<|endoftext|>", "<|pad|>"))
    a = train_tokenizer(wiki_text, tmp_path / "a", config=cfg)
    b = train_tokenizer(iter(wiki_text), tmp_path / "b", config=cfg)
    assert a.fingerprint == b.fingerprint and a.fingerprint.startswith("blake2b-256:")
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()
    assert a.vocab_size == 400 and a.eos_token == "<|endoftext|>" and a.eos_id == 0
    meta = json.loads((tmp_path / "a" / "tokenizer.meta.json").read_text())
    assert meta["fingerprint"] == a.fingerprint and meta["trained_on"]["documents"] == len(wiki_text)
    # reloading the written file gives the same fingerprint, and byte-level BPE round-trips any text
    tok = load_tokenizer(tmp_path / "a" / "tokenizer.json")
    assert fingerprint(tok) == a.fingerprint == tokenizer_info(tmp_path / "a").fingerprint
    sample = wiki_text[5] + " Ünïcödé ✓ 日本語 \x00"
    ids = tok.encode(sample, add_special_tokens=False).ids
    assert max(ids) < 400 and tok.decode(ids) == sample
    # a different vocabulary size is a different tokenizer
    c = train_tokenizer(wiki_text, tmp_path / "c", config=TrainConfig(vocab_size=420))
    assert c.fingerprint != a.fingerprint


def test_shared_tokenizers_resolve_eos(shared_dir):
    tk = shared_dir / "tokenizers"
    g = tokenizer_info(tk / "gpt2")
    assert (g.vocab_size, g.eos_id, g.eos_token) == (50257, 50256, "<|endoftext|>")
    n = tokenizer_info(tk / "gpt-neox-20b.tokenizer.json")
    assert (n.vocab_size, n.eos_id) == (50280, 50279)
    assert g.fingerprint != n.fingerprint
    # formatting does not change the fingerprint; content does
    tok = load_tokenizer(tk / "gpt2")
    assert fingerprint(load_tokenizer(tk / "gpt2")) == fingerprint(tok) == g.fingerprint


def test_eos_text_inside_a_document_is_not_an_eos_id(shared_dir):
    for path in (shared_dir / "tokenizers" / "gpt2", shared_dir / "tokenizers" / "gpt-neox-20b.tokenizer.json"):
        tok = load_tokenizer(path)
        _, eos = resolve_eos(tok, path=path)
        ids = tok.encode("before <|endoftext|> after", add_special_tokens=False).ids
        assert eos not in ids and tok.decode(ids) == "before <|endoftext|> after"


def test_missing_eos_is_a_clear_error(tmp_path, wiki_text):
    info = train_tokenizer(wiki_text[:20], tmp_path, config=TrainConfig(vocab_size=300, special_tokens=("<s>", "</s>")))
    assert info.eos_token == "</s>"
    tok = load_tokenizer(tmp_path)
    with pytest.raises(SpecError, match="not in its vocabulary"):
        resolve_eos(tok, "<|im_end|>")
    with pytest.raises(SpecError, match="known EOS token"):
        TrainConfig(vocab_size=300, special_tokens=("<pad>",))
    with pytest.raises(SpecError, match="at least 257"):
        TrainConfig(vocab_size=100)
    with pytest.raises(SpecError, match="does not exist"):
        load_tokenizer(tmp_path / "nope.json")


def test_code_prefix_reads_a_tree_as_a_job_would(tmp_path):
    """``code:`` on a package tree (npm's ``abbrev``: ``lib/index.js``, ``package.json``,
    ``LICENSE``; a real package with a ``.json``) reads every file as a file of the tree,
    as a job's ``format: code`` source does: ``package.json`` is training text, not a
    Stack table whose rows lack columns (issue #36). A folder of Stack tables still
    reads as tables."""
    import shutil
    from pathlib import Path

    from datapipe.readers import ReadStats

    pkg = Path("/usr/lib/node_modules/npm/node_modules/abbrev")
    if not (pkg / "package.json").is_file():
        pytest.skip("npm's abbrev package is not installed here")
    tree = tmp_path / "tree" / "abbrev"
    shutil.copytree(pkg, tree)
    stats = ReadStats()
    texts = list(training_texts([f"code:{tmp_path / 'tree'}"], stats=stats))
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    assert sorted(texts) == sorted(p.read_text(encoding="utf-8") for p in files)
    assert stats.rejects == {} and stats.documents == len(files) == 3
    table = tmp_path / "stack" / "rows.jsonl"
    table.parent.mkdir()
    table.write_text(json.dumps({"content": "def f():\n    return 1\n", "repo_name": "a/b", "path": "f.py"}) + "\n")
    assert list(training_texts([f"code:{table.parent}"])) == ["def f():\n    return 1\n"]


def test_cli_train_on_text_and_job_parquet(tmp_path, shared_dir, capsys):
    docs = tmp_path / "docs.parquet"
    pq.write_table(pa.table({
        "id": ["a/1", "a/2", "b/1"], "source": ["a", "a", "b"],
        "text": ["kept text of source a " * 20, "REJECTED " * 50, "other source " * 20],
        "_reject_reason": [None, "length:too_short", None],
    }), docs)
    assert list(training_texts([docs], sources=["a"])) == ["kept text of source a " * 20]
    ap = argparse.ArgumentParser()
    add_cli(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args([
        "tokenizer", "train", "--source-glob", str(shared_dir / "corpora/books/tinyshakespeare.txt"),
        "--source-glob", str(docs), "--vocab-size", "300", "--max-bytes", "200000", "--out", str(tmp_path / "tok"),
    ])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["vocab_size"] == 300 and (tmp_path / "tok" / "tokenizer.json").is_file()
    meta = json.loads((tmp_path / "tok" / "tokenizer.meta.json").read_text())
    assert 200_000 <= meta["trained_on"]["bytes"] < 300_000
    args = ap.parse_args(["tokenizer", "train", "--source-glob", str(tmp_path / "*.none"), "--vocab-size", "300",
                          "--out", str(tmp_path / "x")])
    with pytest.raises(SpecError, match="matches no files"):
        args.func(args)
