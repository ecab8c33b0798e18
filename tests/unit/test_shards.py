"""Shard writer, verify and inspect.

The reader below is written from the format description in docs/formats.md (Megatron
``MMIDIDX`` v1) and shares no code with the writer (``stages/tokenize/writer.py``): if the writer and this
reader agree on every document's exact token sequence, Megatron-style readers will too.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from datapipe.errors import JobError
from datapipe.schema import make_batch
from datapipe.errors import SpecError
from bench.shard_writers import write_shards
from datapipe.shards import add_cli, inspect_shards, verify_shards
from stages.tokenize.identity import TokenizerInfo, load_for_decoding, tokenizer_info
from stages.tokenize.writer import ShardOptions, conservation_problems
from stages.tokenize import Tokenize

SEED = 1234

# ------------------------------------------------------------------------ independent reader

_MEGATRON_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
                    7: np.float32, 8: np.uint16}


def read_megatron(bin_path: Path, idx_path: Path) -> list[np.ndarray]:
    """Documents of one Megatron indexed dataset, each a list of its sequences' tokens."""
    raw = idx_path.read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    (version,) = struct.unpack("<Q", raw[9:17])
    assert version == 1
    code = raw[17]
    n_seq, n_docidx = struct.unpack("<QQ", raw[18:34])
    pos = 34
    sizes = np.frombuffer(raw, dtype="<i4", count=n_seq, offset=pos)
    pos += 4 * n_seq
    pointers = np.frombuffer(raw, dtype="<i8", count=n_seq, offset=pos)
    pos += 8 * n_seq
    doc_idx = np.frombuffer(raw, dtype="<i8", count=n_docidx, offset=pos)
    pos += 8 * n_docidx
    assert pos == len(raw)
    dt = np.dtype(_MEGATRON_DTYPES[code]).newbyteorder("<")
    data = bin_path.read_bytes()
    seqs = [np.frombuffer(data, dtype=dt, count=int(s), offset=int(p)) for s, p in zip(sizes, pointers)]
    assert doc_idx[0] == 0 and doc_idx[-1] == n_seq
    return [np.concatenate(seqs[doc_idx[k]:doc_idx[k + 1]]) for k in range(len(doc_idx) - 1)]


def read_source(folder: Path) -> tuple[dict, list[list[int]]]:
    """Manifest + every document's tokens (EOS stripped), split documents re-joined."""
    m = json.loads((folder / "manifest.json").read_text())
    docs: list[list[int]] = []
    for shard in m["shards"]:
        pieces = read_megatron(folder / shard["bin"], folder / shard["idx"])
        if shard["first_doc_continued"]:
            docs[-1].extend(pieces.pop(0).tolist())
        docs.extend(p.tolist() for p in pieces)
    eos = m["tokenizer"]["eos_id"]
    for d in docs:
        assert d[-1] == eos
        d.pop()
    return m, docs


def expected_order(ids: list[str], seed: int) -> list[int]:
    """Document order per docs/shards.md: by xxh3_64(id, seed), then id."""
    return sorted(range(len(ids)), key=lambda i: (xxhash.xxh3_64_intdigest(ids[i].encode(), seed), ids[i]))


def token_table(source: str, docs: list[list[int]], prefix: str = "d") -> pa.Table:
    return pa.table({
        "id": pa.array([f"{source}/{prefix}{i}" for i in range(len(docs))], pa.string()),
        "source": pa.array([source] * len(docs), pa.string()),
        "tokens": pa.array(docs, pa.list_(pa.int32())),
    })


def fake_info(vocab: int) -> TokenizerInfo:
    return TokenizerInfo(path="none", fingerprint="blake2b-256:" + "0" * 64, vocab_size=vocab,
                         eos_id=vocab - 1, eos_token="<eos>")


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def gpt2(shared_dir):
    return shared_dir / "tokenizers" / "gpt2"


@pytest.fixture(scope="module")
def wiki_docs(shared_dir) -> list[str]:
    text = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    return [d for d in text.split("\n = ") if d.strip()][:60]


@pytest.fixture(scope="module")
def tokenized(gpt2, wiki_docs) -> pa.Table:
    """Two sources of real text through the tokenize stage, with one rejected row."""
    stage = Tokenize(Tokenize.Config(tokenizer=str(gpt2)))
    wiki = make_batch(source="wiki", ids=[f"wiki/{i:04d}" for i in range(40)], texts=wiki_docs[:40])
    book_texts = wiki_docs[40:]
    reasons = [None] * len(book_texts)
    reasons[3] = "read:invalid_utf8"
    books = make_batch(source="books", ids=[f"books/{i:04d}" for i in range(len(book_texts))], texts=book_texts,
                       reject_reasons=reasons)
    out = [stage.process(t)[0] for t in (wiki, books)]
    return pa.concat_tables(out)


# ------------------------------------------------------------------------ round trip


@pytest.mark.parametrize("span", [False, True])
def test_independent_reader_gets_exact_documents_uint16(tmp_path, gpt2, tokenized, span):
    info = tokenizer_info(gpt2)
    result = write_shards([tokenized.slice(0, 25), tokenized.slice(25)], tmp_path, tokenizer_info=info,
                          shard_tokens=4096, seed=SEED, lineage={"job_hash": "test"}, span_documents=span)
    assert sorted(result) == ["books", "wiki"]
    from stages.tokenize.identity import load_tokenizer

    tok = load_tokenizer(gpt2)
    for source in ("wiki", "books"):
        rows = tokenized.filter(pa.compute.equal(tokenized["source"], source))
        alive = [r for r in rows.to_pylist() if r["_reject_reason"] is None]
        m, docs = read_source(tmp_path / source)
        assert m["dtype"] == "uint16" and m["tokenizer"]["fingerprint"] == info.fingerprint
        order = expected_order([r["id"] for r in alive], SEED)
        assert docs == [alive[i]["tokens"] for i in order]
        # byte-level BPE is lossless: the shards decode back to the kept texts
        assert [tok.decode(d) for d in docs] == [alive[i]["text"] for i in order]
        if span:
            assert any(s["last_doc_split"] for s in m["shards"]), "test needs a document split across shards"
            assert all(s["tokens"] == 4096 for s in m["shards"][:-1])
        else:  # one Megatron document per document: the count a Megatron user splits by
            assert sum(len(read_megatron(tmp_path / source / s["bin"], tmp_path / source / s["idx"]))
                       for s in m["shards"]) == len(alive)
            assert not any(s["last_doc_split"] or s["first_doc_continued"] for s in m["shards"])
        # conservation: document tokens + one EOS each == tokens in shards == bytes / 2
        assert m["totals"]["tokens"] == sum(r["num_tokens"] for r in alive) + len(alive)
        assert m["totals"]["documents"] == len(alive)
        assert m["totals"]["tokens"] == sum((tmp_path / source / s["bin"]).stat().st_size for s in m["shards"]) // 2
        assert len(m["shards"]) > 1 and 0 < m["shards"][-1]["tokens"] <= 4096
    assert verify_shards(tmp_path) == []


def test_int32_shards_long_and_empty_documents(tmp_path):
    rng = np.random.default_rng(7)
    vocab = 100_000
    docs = [rng.integers(0, vocab - 1, size=int(n)).tolist() for n in rng.integers(0, 60, size=50)]
    docs[5] = rng.integers(60_000, vocab - 1, size=333).tolist()  # spans 3+ shards of 100
    docs[6] = []  # an empty document is just an EOS
    table = token_table("synthetic", docs)
    write_shards([table], tmp_path, tokenizer_info=fake_info(vocab), shard_tokens=100, seed=SEED, lineage={},
                 span_documents=True)
    m, got = read_source(tmp_path / "synthetic")
    assert m["dtype"] == "int32"
    raw = (tmp_path / "synthetic" / m["shards"][0]["idx"]).read_bytes()
    assert raw[17] == 4  # Megatron's int32 code
    ids = table["id"].to_pylist()
    assert got == [docs[i] for i in expected_order(ids, SEED)]
    middle = [s for s in m["shards"] if s["first_doc_continued"] and s["last_doc_split"]]
    # a shard holding only the middle of the long document: one sequence, no document starts in it
    assert any(s["documents"] == 0 and s["tokens"] == 100 for s in middle)
    assert m["totals"]["tokens"] == sum(map(len, docs)) + len(docs)
    assert verify_shards(tmp_path) == []


def test_documents_never_span_shards_by_default(tmp_path):
    """Read with the independent Megatron-layout reader: every Megatron document is exactly
    one input document (so a split by document ranges never cuts one), shards stay at or
    under the target except a lone over-long document, and the manifest's counts match."""
    rng = np.random.default_rng(21)
    docs = [rng.integers(0, 999, size=int(n)).tolist() for n in rng.integers(0, 90, size=150)]
    docs[7] = rng.integers(0, 999, size=450).tolist()  # longer than a shard: a shard of its own
    docs[8] = rng.integers(0, 999, size=199).tolist()  # exactly a shard with its EOS
    table = token_table("s", docs)
    write_shards([table.slice(0, 40), table.slice(40)], tmp_path, tokenizer_info=fake_info(1000),
                 shard_tokens=200, seed=SEED, lineage={}, batch_rows=17)
    m = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert m["span_documents"] is False
    order = expected_order(table["id"].to_pylist(), SEED)
    got: list[list[int]] = []
    for k, shard in enumerate(m["shards"]):
        seqs = read_megatron(tmp_path / "s" / shard["bin"], tmp_path / "s" / shard["idx"])
        assert shard["documents"] == len(seqs) and not shard["first_doc_continued"] and not shard["last_doc_split"]
        assert all(seq[-1] == 999 for seq in seqs)  # every sequence ends its document
        size = sum(len(seq) for seq in seqs)
        assert size == shard["tokens"] and (size <= 200 or len(seqs) == 1)
        if k + 1 < len(m["shards"]):  # a shard ends only where the next document would not fit
            nxt = read_megatron(tmp_path / "s" / m["shards"][k + 1]["bin"], tmp_path / "s" / m["shards"][k + 1]["idx"])
            assert size + len(nxt[0]) > 200
        got.extend(seq[:-1].tolist() for seq in seqs)
    assert got == [docs[i] for i in order]
    assert m["totals"]["documents"] == len(docs) == sum(s["documents"] for s in m["shards"])
    assert m["totals"]["tokens"] == sum(map(len, docs)) + len(docs)
    assert any(s["tokens"] == 451 for s in m["shards"]) and any(s["tokens"] == 200 for s in m["shards"])
    assert verify_shards(tmp_path) == []


def test_same_documents_any_batching_same_bytes(tmp_path):
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 2000, size=int(n)).tolist() for n in rng.integers(1, 80, size=120)]
    table = token_table("s", docs)
    write_shards([table], tmp_path / "a", tokenizer_info=fake_info(2020), shard_tokens=500, seed=5, lineage={})
    shuffled = table.take(pa.array(rng.permutation(table.num_rows)))
    parts = [shuffled.slice(i, 7) for i in range(0, shuffled.num_rows, 7)]
    write_shards(parts, tmp_path / "b", tokenizer_info=fake_info(2020), shard_tokens=500, seed=5, lineage={},
                 batch_rows=13)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    # another seed gives another order (same tokens in total)
    write_shards([table], tmp_path / "c", tokenizer_info=fake_info(2020), shard_tokens=500, seed=6, lineage={})
    assert files(tmp_path / "a")["s/s-00000.bin"] != files(tmp_path / "c")["s/s-00000.bin"]


def test_rerun_keeps_identical_shards_and_refuses_different_ones(tmp_path):
    docs = [[1, 2, 3]] * 10 + [[4, 5]]
    t = token_table("s", docs)
    kw = dict(tokenizer_info=fake_info(100), shard_tokens=8, seed=1, lineage={"job_hash": "a"})
    write_shards([t], tmp_path, **kw)
    before = files(tmp_path)
    write_shards([t], tmp_path, **kw)  # a re-run of the same job: nothing changes
    assert files(tmp_path) == before
    changed = token_table("s", [[1, 2, 3]] * 10 + [[4, 6]])
    with pytest.raises(JobError, match="write-once"):
        write_shards([changed], tmp_path, **kw)
    assert not list(tmp_path.rglob("*.tmp"))


def test_duplicate_id_with_different_tokens_is_an_error(tmp_path):
    t = pa.table({"id": ["s/x", "s/x"], "source": ["s", "s"],
                  "tokens": pa.array([[1, 2], [3]], pa.list_(pa.int32()))})
    with pytest.raises(JobError, match="appears twice"):
        write_shards([t], tmp_path, tokenizer_info=fake_info(100), shard_tokens=8, seed=1, lineage={})


def test_out_of_vocabulary_ids_are_an_error(tmp_path):
    t = token_table("s", [[1, 2, 300]])
    with pytest.raises(JobError, match="outside the vocabulary"):
        write_shards([t], tmp_path, tokenizer_info=fake_info(100), shard_tokens=8, seed=1, lineage={})


def test_empty_source_gets_an_empty_manifest(tmp_path):
    t = token_table("a", [[1, 2]])
    res = write_shards([t], tmp_path, tokenizer_info=fake_info(100), shard_tokens=8, seed=1, lineage={},
                       sources=["a", "b"])
    m = json.loads(Path(res["b"]).read_text())
    assert m["shards"] == [] and m["totals"] == {"tokens": 0, "documents": 0, "shards": 0}
    assert verify_shards(tmp_path) == []


# ------------------------------------------------------------------------ verify


@pytest.fixture
def written(tmp_path):
    rng = np.random.default_rng(11)
    docs = [rng.integers(0, 999, size=int(n)).tolist() for n in rng.integers(1, 50, size=60)]
    write_shards([token_table("src", docs)], tmp_path, tokenizer_info=fake_info(1000), shard_tokens=300,
                 seed=SEED, lineage={"job_hash": "h"})
    folder = tmp_path / "src"
    assert verify_shards(tmp_path) == []
    return folder


def test_verify_catches_a_flipped_byte(written):
    p = written / "src-00001.bin"
    data = bytearray(p.read_bytes())
    data[101] ^= 0x01
    p.write_bytes(bytes(data))
    problems = verify_shards(written)
    assert problems and all("src-00001" in x for x in problems)
    assert any(".bin hash" in x for x in problems)


def test_verify_catches_a_truncated_bin(written):
    p = written / "src-00002.bin"
    p.write_bytes(p.read_bytes()[:-10])
    problems = verify_shards(written)
    assert any("src-00002" in x and "bytes" in x for x in problems)
    assert all("src-00002" in x for x in problems)


def test_verify_catches_a_missing_shard(written):
    (written / "src-00000.bin").unlink()
    problems = verify_shards(written.parent)
    assert any("src-00000" in x and "missing" in x for x in problems)


def test_verify_catches_an_idx_that_disagrees_with_the_bin(written):
    p = written / "src-00000.idx"
    raw = bytearray(p.read_bytes())
    n_seq = struct.unpack("<Q", raw[18:26])[0]
    a, b = struct.unpack_from("<ii", raw, 34)
    struct.pack_into("<ii", raw, 34, a + 1, b - 1)  # same total, shifted boundary
    p.write_bytes(bytes(raw))
    problems = verify_shards(written)
    assert n_seq >= 2
    assert any("src-00000" in x and ".idx hash" in x for x in problems)
    assert any("src-00000" in x and "pointer" in x for x in problems)


def test_verify_and_inspect_cli(written, capsys):
    ap = argparse.ArgumentParser()
    add_cli(ap.add_subparsers(dest="cmd", required=True), load=load_for_decoding)
    args = ap.parse_args(["shards", "verify", str(written.parent)])
    assert args.func(args) == 0
    args = ap.parse_args(["shards", "inspect", str(written.parent), "--json"])
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    src = report["sources"]["src"]
    assert src["documents"] == 60 and sum(src["doc_length_histogram"].values()) == 60
    (written / "src-00001.idx").write_bytes(b"MMIDIDX")
    args = ap.parse_args(["shards", "verify", str(written)])
    assert args.func(args) == 1
    assert "src-00001" in capsys.readouterr().out


def test_inspect_decodes_an_excerpt(tmp_path, gpt2, tokenized):
    info = tokenizer_info(gpt2)
    write_shards([tokenized], tmp_path, tokenizer_info=info, shard_tokens=1 << 16, seed=SEED, lineage={})
    rep = inspect_shards(tmp_path / "wiki", excerpt_tokens=16, load=load_for_decoding)["sources"]["wiki"]
    first = expected_order([f"wiki/{i:04d}" for i in range(40)], SEED)[0]
    text = tokenized.filter(pa.compute.equal(tokenized["id"], f"wiki/{first:04d}"))["text"][0].as_py()
    assert rep["excerpt"] and text.startswith(rep["excerpt"])
    assert rep["documents"] == 40 and rep["split_documents"] == 0


def test_conservation_check_and_options(tmp_path):
    docs = [[1, 2, 3], [], [4] * 20]
    res = write_shards([token_table("s", docs)], tmp_path, tokenizer_info=fake_info(100), shard_tokens=10, seed=1,
                       lineage={})
    assert conservation_problems({"s": (3, 23)}, res) == []
    assert conservation_problems({"s": (3, 24)}, res) == [
        "source s: shards hold 26 tokens, kept documents have 24 + 3 EOS = 27"]
    assert conservation_problems({"s": (3, 23), "t": (1, 5)}, res) == ["source t: 1 kept documents but no shard manifest"]
    assert ShardOptions().shard_tokens == 2**27
    with pytest.raises(SpecError, match="shard_tokens"):
        ShardOptions(shard_tokens=2**31)
