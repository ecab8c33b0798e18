"""Dedup building blocks, without Ray: datasketch-identical signatures on real text,
datasketch's LSH parameter choice and candidate rule, the partition kernels
(exact groups, bucket stars, verification, connected components, decisions) on
crafted inputs, the side rows and the one-process path of the stage's passes end to end."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from datasketch import MinHash, MinHashLSH

from datapipe import schema as S
from datapipe.errors import SpecError
from dedup_driver import run_global
from stages.dedup import Dedup, DedupConfig
from stages.dedup import graph as G
from stages.dedup import batch_kernels as P
from stages.dedup.minhash import (Normalisation, Shingling, band_buckets, batch_signatures, candidate_probability,
                                  optimal_bands_rows, permutations, s_curve, shingles)


# -- real documents ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_docs(shared_dir: Path) -> list[str]:
    """A few hundred real documents: wiki paragraphs, CCNet pages, a Gutenberg book in
    chunks (with its licence boilerplate), a French book chunk, plus short/empty edge
    cases."""
    wiki = (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    paras = [p.strip() for p in wiki.split("\n") if len(p.split()) >= 20][:200]
    cc = []
    for f in sorted((shared_dir / "corpora/ccnet").glob("cc_en_head-*.jsonl")):
        cc += [json.loads(line)["text"] for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    books = sorted((shared_dir / "corpora/books/gutenberg").glob("*.txt.gz"))
    book = gzip.decompress(books[0].read_bytes()).decode("utf-8", "replace")
    chunks = [book[i:i + 3000] for i in range(0, min(len(book), 150_000), 3000)]
    french = sorted((shared_dir / "corpora/books/gutenberg/French").glob("*.txt.gz"))
    if french:
        fr = gzip.decompress(french[0].read_bytes()).decode("utf-8", "replace")
        chunks.append(fr[20_000:26_000])
    edge = ["", "   ", "one", "two words", "a b c d", "!!! ???", "Ünïcödé  ＦＵＬＬ width\u00a0nbsp 1234 ½", "x " * 10]
    docs = paras + cc + chunks + edge
    assert len(docs) >= 250
    return docs


def _datasketch(doc: str, num_perm: int, seed: int, scheme: str, sh: Shingling) -> MinHash:
    m = MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
    for s in shingles(doc, shingling=sh):
        m.update(s)
    return m


@pytest.mark.parametrize("num_perm,seed,scheme,kind,n", [
    (128, 1, "affine32", "word", 5),
    (64, 42, "affine32", "word", 3),
    (256, 7, "affine32", "char", 5),
    (128, 1, "legacy", "word", 5),
    (32, 1234, "legacy", "char", 9),
])
def test_signatures_equal_datasketch_on_real_documents(real_docs, num_perm, seed, scheme, kind, n):
    sh = Shingling(kind=kind, n=n)
    a, b = permutations(num_perm, seed, scheme)
    bs = batch_signatures(pa.array(real_docs), norm=Normalisation(), shingling=sh, a=a, b=b, scheme=scheme)
    mismatched = []
    for i, doc in enumerate(real_docs):
        ref = _datasketch(doc, num_perm, seed, scheme, sh)
        if bs.n_shingles[i] == 0:
            assert ref.is_empty() and len(shingles(doc, shingling=sh)) == 0
        if not np.array_equal(ref.hashvalues.astype(np.uint64), bs.sig[i].astype(np.uint64)):
            mismatched.append(i)
    assert mismatched == []
    assert bs.n_shingles.sum() > 10_000


def test_signatures_do_not_depend_on_batch_boundaries(real_docs):
    a, b = permutations(128, 1)
    whole = batch_signatures(pa.array(real_docs), norm=Normalisation(), shingling=Shingling(), a=a, b=b)
    parts = [batch_signatures(pa.array(real_docs[i:i + 37]), norm=Normalisation(), shingling=Shingling(), a=a, b=b)
             for i in range(0, len(real_docs), 37)]
    assert np.array_equal(whole.sig, np.concatenate([p.sig for p in parts]))
    assert whole.exact == [e for p in parts for e in p.exact]


def test_normalisation_options_change_shingles():
    text = "The  Cat, sat on 12 mats!"
    assert shingles(text, shingling=Shingling(n=2)) == [b"the cat", b"cat sat", b"sat on", b"on 00", b"00 mats"]
    raw = Normalisation(lowercase=False, punctuation=False, digits=False)
    assert shingles(text, norm=raw, shingling=Shingling(n=2))[0] == b"The Cat,"
    assert shingles("abcd", shingling=Shingling(kind="char", n=3)) == [b"abc", b"bcd"]
    assert shingles("ab", shingling=Shingling(kind="char", n=3)) == [b"ab"]
    assert shingles("  ", shingling=Shingling()) == []


def test_shingle_sets_for_jaccard_are_distinct_sorted_hashes(real_docs):
    a, b = permutations(16, 1)
    bs = batch_signatures(pa.array(real_docs[:50]), norm=Normalisation(), shingling=Shingling(), a=a, b=b,
                          keep_shingles=True)
    from datasketch.hashfunc import sha1_hash32

    for i in range(50):
        got = bs.shingle_values[bs.shingle_ptr[i]:bs.shingle_ptr[i + 1]]
        want = sorted({sha1_hash32(s) for s in shingles(real_docs[i])})
        assert got.tolist() == want


# -- LSH parameters and candidates -----------------------------------------------------------

@pytest.mark.parametrize("threshold,num_perm,weights", [
    (0.5, 128, (0.5, 0.5)), (0.8, 128, (0.5, 0.5)), (0.8, 128, (0.2, 0.8)), (0.9, 64, (0.5, 0.5)),
    (0.7, 256, (0.3, 0.7)),
])
def test_bands_rows_match_datasketch(threshold, num_perm, weights):
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
    assert optimal_bands_rows(threshold, num_perm, weights) == (lsh.b, lsh.r)
    cfg = DedupConfig(threshold=threshold, num_perm=num_perm, weights=weights)
    assert cfg.bands_rows() == (lsh.b, lsh.r)


def test_default_weights_favour_recall_only_when_verified():
    assert DedupConfig().lsh_weights == (0.05, 0.95)
    assert DedupConfig(verify="none").lsh_weights == (0.5, 0.5)
    assert DedupConfig(bands=20, rows=5).bands_rows() == (20, 5)


def test_s_curve_is_the_candidate_probability():
    curve = s_curve(12, 10)
    assert list(curve) == ["0.50", "0.55", "0.60", "0.65", "0.70", "0.75", "0.80", "0.85", "0.90", "0.95"]
    assert curve["0.80"] == pytest.approx(1 - (1 - 0.8 ** 10) ** 12, abs=1e-4)
    vals = list(curve.values())
    assert vals == sorted(vals) and vals[-1] > 0.99
    assert candidate_probability(1.0, 3, 4) == 1.0


def test_shared_bucket_is_datasketch_candidate_rule(real_docs):
    """Pairs sharing one of our band buckets == pairs datasketch's MinHashLSH returns
    for the same (bands, rows), on near-duplicate variants of real documents."""
    rng = random.Random(3)
    base = [d for d in real_docs if len(d.split()) > 60][:40]
    docs = list(base)
    for d in base:   # variants: drop a few words at random
        w = d.split()
        for _ in range(rng.randint(1, 4)):
            del w[rng.randrange(len(w))]
        docs.append(" ".join(w))
    bands, rows = 9, 13
    a, b = permutations(128, 1)
    bs = batch_signatures(pa.array(docs), norm=Normalisation(), shingling=Shingling(), a=a, b=b)
    buckets = band_buckets(bs.sig, bands, rows)
    ours = set()
    for i in range(len(docs)):
        for j in range(i + 1, len(docs)):
            if np.any(buckets[i] == buckets[j]):
                ours.add((i, j))
    lsh = MinHashLSH(num_perm=128, params=(bands, rows))
    ms = []
    for i, d in enumerate(docs):
        m = MinHash(num_perm=128, hashvalues=bs.sig[i], scheme="affine32")
        ms.append(m)
        lsh.insert(i, m)
    theirs = set()
    for i, m in enumerate(ms):
        theirs |= {(min(i, j), max(i, j)) for j in lsh.query(m) if j != i}
    assert ours == theirs
    assert len(ours) >= 20   # most variants are candidates, a few are not: both sides agree


# -- kernels ---------------------------------------------------------------------------------

def _key(name: str, tier: int = 1, rank: int = 0, exact: int = 0, row: int = 0, split: str = "s") -> str:
    return f"{tier}{rank:04d}\x1fsrc\x1f{name}\x1f{0:016x}\x1f{exact:016x}\x1f{row:012d}\x1f{split}"


def test_make_and_split_keys_round_trip():
    keys = G.make_keys(1, np.array([0, 3]), pa.array(["wiki", "web"]), pa.array(["wiki/a", "web/b"]),
                       np.array([5, 6], np.uint64), np.array([1, 2**63], np.uint64), np.array([7, 12]),
                       pa.array(["part-1", "odd\x1fsplit"]))
    f = G.key_fields(keys)
    assert f["row"].to_pylist() == [f"{7:012d}", f"{12:012d}"]
    assert f["split"].to_pylist() == ["part-1", "odd\x1fsplit"]     # any character is safe in the last field
    assert f["source"].to_pylist() == ["wiki", "web"]
    assert f["id"].to_pylist() == ["wiki/a", "web/b"]
    assert f["tier"].to_pylist() == ["1", "1"]
    assert f["exact"].to_pylist() == [f"{1:016x}", f"{2**63:016x}"]
    # survival order: rank first, then id
    assert sorted(keys.to_pylist())[0].startswith("10000")


def test_exact_groups_keep_smallest_key():
    t = pa.table({"key": ["k3", "k1", "k2", "k9"], "exact": pa.array([b"A" * 16, b"A" * 16, b"B" * 16, b"A" * 16],
                                                                      pa.binary(16)),
                  "buckets": pa.array([[1], [2], [3], [4]], pa.list_(pa.uint64()))})
    out = G.exact_groups(t)
    rep = dict(zip(out["key"].to_pylist(), out["rep"].to_pylist()))
    assert rep == {"k1": None, "k3": "k1", "k9": "k1", "k2": None}


def test_bucket_edges_are_stars_from_the_smallest_key_without_index_pairs():
    t = pa.table({"bucket": pa.array([7, 7, 7, 8, 8, 9, 10, 10, 10], pa.uint64()),
                  "key": [_key("c"), _key("a"), _key("b"), _key("a"), _key("d"), _key("z"),
                          _key("o1", tier=0), _key("o2", tier=0), _key("n")]})
    e = G.bucket_edges(t)
    got = {(x.split("\x1f")[2], y.split("\x1f")[2]) for x, y in zip(e["a"].to_pylist(), e["b"].to_pylist())}
    assert got == {("a", "b"), ("a", "c"), ("a", "d"), ("o1", "n")}   # no o1-o2: both kept anyway


def test_similarities_exact_jaccard_and_signature_estimate():
    sig_t = pa.list_(pa.uint32(), 4)
    t = pa.table({
        "a": ["x", "y"], "b": ["p", "q"],
        "a_sig": pa.array([[1, 2, 3, 4], [1, 2, 3, 4]], sig_t), "b_sig": pa.array([[1, 2, 0, 0], [1, 0, 0, 0]], sig_t),
        "a_sh": pa.array([[1, 2, 3, 4], None], pa.list_(pa.uint32())),
        "b_sh": pa.array([[3, 4, 5], [1]], pa.list_(pa.uint32())),
    })
    sim = G.similarities(t)
    assert sim[0] == pytest.approx(2 / 5)        # |{3,4}| / |{1,2,3,4,5}|
    assert sim[1] == pytest.approx(1 / 4)        # no shingles on one side: signature estimate


def _reference_components(edges: list[tuple[str, str]]) -> dict[str, str]:
    parent: dict[str, str] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {n: find(n) for n in parent if find(n) != n}


def _graphs():
    rng = random.Random(11)
    names = [f"n{i:04d}" for i in range(400)]
    order = names[:120]
    rng.shuffle(order)
    yield "long path in random order", [tuple(sorted(p)) for p in zip(order, order[1:])]
    yield "star", [("n0000", n) for n in names[1:50]]
    yield "reverse star", [(n, "n0399") for n in names[:50]]
    yield "cycle", [tuple(sorted(p)) for p in zip(names[:30], names[1:30] + names[:1])]
    yield "two cliques", [(x, y) for grp in (names[:8], names[100:108]) for i, x in enumerate(grp) for y in grp[i + 1:]]
    for k in range(6):
        m = rng.randint(10, 600)
        yield f"random {k}", list({tuple(sorted(rng.sample(names, 2))) for _ in range(m)})


@pytest.mark.parametrize("label,edges", list(_graphs()))
def test_components_local_and_large_small_star_match_union_find(label, edges):
    t = pa.table({"a": [a for a, _ in edges], "b": [b for _, b in edges]})
    want = _reference_components(edges)
    local = G.local_components(t)
    assert dict(zip(local["node"].to_pylist(), local["root"].to_pylist())) == want, label
    stars, rounds = G.components_in_memory(t)
    assert dict(zip(stars["node"].to_pylist(), stars["root"].to_pylist())) == want, label
    assert rounds <= 20


def test_large_small_star_kernels_work_on_any_partitioning():
    """The distributed rounds cut the edges into partitions by node; results must not
    depend on the cut."""
    edges = dict(_graphs())["random 3"]
    want = _reference_components(edges)
    cur = pa.table({"a": [a for a, _ in edges], "b": [b for _, b in edges]})
    for parts in (1, 3, 7):
        e = cur
        for _ in range(50):
            d = P.directed_rows(e, parts=parts)
            ls = pa.concat_tables(G.large_star(d.filter(pc.equal(d["_part"], p)).drop_columns(["_part"]))
                                  for p in range(parts))
            bb = P.by_b_rows(ls, parts=parts)
            ss = pa.concat_tables(G.small_star(bb.filter(pc.equal(bb["_part"], p)).drop_columns(["_part"]))
                                  for p in range(parts))
            changed = pc.any(ls["changed"]).as_py() or pc.any(ss["changed"]).as_py()
            e = ss.select(["a", "b"])
            if not changed:
                break
        got = dict(zip(e["b"].to_pylist(), e["a"].to_pylist()))
        assert got == want


def test_decisions_label_exact_and_near_and_skip_index_documents():
    root = _key("wiki/1", rank=0, exact=5)
    old = _key("wiki/0", tier=0, exact=9)
    t = pa.table({"_part": [0, 0, 0, 0],
                  "node": [_key("web/1", rank=1, exact=5), _key("web/2", rank=1, exact=6), root,
                           _key("web/3", rank=1, exact=9)],
                  "root": [root, root, old, old]})
    d = P.decide_kernel(t)
    rows = {r["id"]: r for r in d.to_pylist()}
    assert rows["web/1"]["_split"] == "s" and rows["web/1"]["_row"] == 0
    assert set(rows) == {"web/1", "web/2", "wiki/1", "web/3"}
    assert rows["web/1"]["reason"] == "exact" and rows["web/1"]["kept"] == "wiki/1"
    assert rows["web/2"]["reason"] == "near"
    assert rows["web/3"]["reason"] == "exact" and rows["web/3"]["kept"] == "wiki/0"
    assert rows["web/1"]["size"] == 3 and rows["web/3"]["size"] == 3
    assert sum(r["first"] for r in rows.values()) == 2
    partial = P.report_partials(d)
    sizes = partial.filter(pc.equal(partial["kind"], "size"))
    assert sizes["size"].to_pylist() == [3] and sizes["n"].to_pylist() == [2]


# -- side rows and the one-process path ---------------------------------------------------------

def test_side_rows_are_compact_one_per_document_and_datasketch_equal(real_docs):
    texts = [real_docs[0], "", real_docs[1], None, real_docs[0], "!!! ???"]
    batch = S.make_batch(source="web", ids=[f"web/{i}" for i in range(6)], texts=texts)
    side = Dedup(DedupConfig()).side(batch)
    assert side.num_rows == 6 and "text" not in side.column_names
    assert side.schema == P.side_schema(128)
    assert side["id"].to_pylist() == batch["id"].to_pylist()
    eligible = [v is not None for v in side["exact"].to_pylist()]
    assert eligible == [True, False, True, False, True, False]          # nothing to shingle: null
    assert side["exact"][0] == side["exact"][4]
    assert side["sig"].null_count == side["buckets"].null_count == side["sh"].null_count == 3
    assert len(side["buckets"][0]) == DedupConfig().bands_rows()[0]
    ref = _datasketch(real_docs[1], 128, 1, "affine32", Shingling())
    assert side["sig"][2].as_py() == ref.hashvalues.astype(np.uint32).tolist()
    from datasketch.hashfunc import sha1_hash32

    assert side["sh"][2].as_py() == sorted({sha1_hash32(s) for s in shingles(real_docs[1])})
    exact_only = Dedup(DedupConfig(near=False)).side(batch)
    assert exact_only["exact"].to_pylist() == side["exact"].to_pylist()
    assert exact_only["sig"].null_count == 6


def test_local_decide_removes_planted_copies_and_keeps_distinct(tmp_path, real_docs):
    paras = [d for d in real_docs if len(d.split()) >= 60][:40]
    base = S.make_batch(source="wiki", ids=[f"wiki/{i:02d}" for i in range(40)], texts=paras)
    words = paras[3].split(" ")
    words[len(words) // 2] = "zzzq"
    copies = S.make_batch(source="web", ids=["web/0", "web/1", "web/2", "web/3"],
                          texts=[paras[0].upper(), " ".join(words), paras[5][: len(paras[5]) // 2], paras[7]],
                          reject_reasons=[None, None, None, "c4:lines"])
    splits = {"a": base, "b": copies}
    stage = Dedup(DedupConfig(source_priority=("wiki", "web")))
    removed, report, uri = run_global(stage, splits, tmp_path / "w", ("wiki", "web"))
    assert removed == {"web/0": ("dedup:exact", "wiki/00"), "web/1": ("dedup:near", "wiki/03")}
    assert report["path"] == "local" and report["counts"]["removed"] == 2
    assert report["removed_per_source"]["web"] == {"exact": 1, "near": 1}
    # no duplicates: no decisions file
    none, rep, uri = run_global(stage, {"a": base}, tmp_path / "x", ("wiki",))
    assert none == {} and uri is None and rep["counts"]["removed"] == 0


def test_index_out_holds_the_survivors_also_when_nothing_is_removed(tmp_path, real_docs):
    """The executor publishes the index the stage declares: every survivor, with or
    without removals, and a next run against it removes its copies."""
    paras = [d for d in real_docs if len(d.split()) >= 60][:10]
    base = S.make_batch(source="wiki", ids=[f"wiki/{i:02d}" for i in range(10)], texts=paras)
    first = Dedup(DedupConfig(source_priority=("wiki", "web"), index_out=str(tmp_path / "index")))
    removed, rep, uri = run_global(first, {"a": base}, tmp_path / "w1", ("wiki",))
    assert removed == {} and uri is None
    assert rep["index_out"] == {"path": str(tmp_path / "index"), "documents": 10, "added": 10}
    meta = json.loads((tmp_path / "index" / "meta.json").read_text())
    assert (meta["segments"], meta["documents"]) == (["seg-0000"], 10)
    assert pq.read_table(tmp_path / "index" / "seg-0000").column("id").to_pylist() == [f"wiki/{i:02d}" for i in
                                                                                       range(10)]
    copies = S.make_batch(source="web", ids=["web/0", "web/1"], texts=[paras[2], "a new text " * 30])
    second = Dedup(DedupConfig(source_priority=("wiki", "web"), index_in=str(tmp_path / "index")))
    removed, rep, _ = run_global(second, {"b": copies}, tmp_path / "w2", ("web",))
    assert removed == {"web/0": ("dedup:exact", "wiki/02")} and rep["index_in"]["documents"] == 10


@pytest.mark.parametrize("kwargs,field", [
    ({"exact": False, "near": False}, "exact/near"), ({"threshold": 1.2}, "threshold"),
    ({"bands": 4}, "bands/rows"), ({"bands": 20, "rows": 10}, "bands/rows"), ({"num_perm": 1}, "num_perm"),
    ({"weights": (0.3, 0.3)}, "weights"), ({"source_priority": ("a", "a")}, "source_priority"),
    ({"ngram": 0}, "ngram"),
])
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(SpecError, match=f"dedup: {field}"):
        DedupConfig(**kwargs)


def test_index_options_are_checked():
    with pytest.raises(SpecError, match="index_in/index_out"):
        DedupConfig(near=False, index_out="/tmp/x")
    with pytest.raises(SpecError, match="index_out"):
        DedupConfig(index_in="/tmp/idx", index_out="/tmp/idx/")


def test_index_built_with_other_parameters_is_refused(tmp_path):
    from stages.dedup.stage import INDEX_FORMAT, INDEX_VERSION, _open_index
    from stages.dedup.minhash import BUCKET_HASH_VERSION

    params = DedupConfig(num_perm=64).signature_params()
    (tmp_path / "meta.json").write_text(json.dumps({
        "format": INDEX_FORMAT, "version": INDEX_VERSION, "bucket_hash": BUCKET_HASH_VERSION, "params": params,
        "segments": ["seg-0000"], "documents": 3, "segment_documents": [3]}))
    assert _open_index(str(tmp_path), DedupConfig(num_perm=64))["documents"] == 3
    with pytest.raises(SpecError, match=r"num_perm: index 64 vs job 128"):
        _open_index(str(tmp_path), DedupConfig())
    with pytest.raises(SpecError, match="not a dedup index"):
        _open_index(str(tmp_path / "nothing"), DedupConfig())


CODE_NORM = Normalisation(lowercase=False, punctuation=False, digits=False)   # the code settings (docs/code.md)


def _stdlib_code() -> list[str]:
    import json as _json
    import sysconfig
    from pathlib import Path

    lib = Path(sysconfig.get_paths()["stdlib"])
    files = [lib / "json" / n for n in ("encoder.py", "decoder.py", "scanner.py")] + [Path(_json.__file__)]
    return [f.read_text(encoding="utf-8") for f in files]


def test_token_shingles_equal_datasketch_on_real_code():
    docs = _stdlib_code()
    sh = Shingling(kind="token", n=5)
    a, b = permutations(128, 1)
    bs = batch_signatures(pa.array(docs), norm=CODE_NORM, shingling=sh, a=a, b=b)
    for i, doc in enumerate(docs):
        ref = MinHash(num_perm=128, seed=1)
        for s in shingles(doc, norm=CODE_NORM, shingling=sh):
            ref.update(s)
        assert np.array_equal(ref.hashvalues.astype(np.uint64), bs.sig[i].astype(np.uint64))
    assert shingles("x+=foo_bar(1)", norm=CODE_NORM, shingling=Shingling(kind="token", n=3)) == [
        b"x + =", b"+ = foo_bar", b"= foo_bar (", b"foo_bar ( 1", b"( 1 )"]


def test_token_shingles_see_through_reformatted_code():
    """A real module and the same code with its spacing around operators and commas
    changed (what a formatter or a fork's style does) are near-duplicates under token
    shingles at the code threshold (0.8) and not under word shingles; another module is
    not a near-duplicate of it under either."""
    enc, dec = _stdlib_code()[:2]
    reformatted = enc.replace(" = ", "=").replace(", ", ",").replace(" == ", "==").replace("(self,", "( self ,")

    def jaccard(x: str, y: str, kind: str) -> float:
        sx = set(shingles(x, norm=CODE_NORM, shingling=Shingling(kind=kind, n=5)))
        sy = set(shingles(y, norm=CODE_NORM, shingling=Shingling(kind=kind, n=5)))
        return len(sx & sy) / len(sx | sy)

    assert reformatted != enc
    assert jaccard(enc, reformatted, "token") == 1.0
    assert jaccard(enc, reformatted, "word") < 0.8
    assert jaccard(enc, dec, "token") < 0.3
