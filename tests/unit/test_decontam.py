"""decontaminate on real text: the evaluation fixture (cloze questions built from
WikiText-2 test sentences by jobs/curate_data/build_eval.py) against the WikiText
articles they came from, the same articles with case and punctuation edited, and
unrelated real documents (C4, Gutenberg) that share only short common phrases."""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import datapipe
from datapipe.api import StageRunner
from datapipe.errors import SpecError
from datapipe.passes import run_prepared
from datapipe.stage import StageContext
from stages.decontam import Decontaminate, DecontamConfig
from stages.decontam import index_passes as P
from stages.decontam.ngrams import BloomIndex, NgramIndex, build_index, match

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "jobs" / "curate_data"))
from build_eval import build as build_eval  # noqa: E402


@pytest.fixture(scope="module")
def eval_file(shared_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "wikitext_cloze.jsonl"
    assert build_eval(shared_dir, out) > 200
    return out


@pytest.fixture(scope="module")
def corpus(shared_dir, eval_file):
    EVAL = eval_file
    raw = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    articles = [a for a in re.split(r"\n = [^=\n]+ = \n", raw) if len(a.split()) > 200]
    items = [json.loads(line) for line in EVAL.read_text(encoding="utf-8").splitlines()]
    quoted = [a for a in articles if any(it["question"][:-7] in a for it in items)]
    web = [json.loads(line)["text"] for f in sorted((shared_dir / "corpora" / "redpajama").glob("*.jsonl"))
           for line in f.read_text(encoding="utf-8").splitlines()]
    books = sorted((shared_dir / "corpora" / "books" / "gutenberg").glob("*.txt.gz"))[:3]
    book_chunks = []
    for b in books:
        words = gzip.decompress(b.read_bytes()).decode("utf-8", "replace").split()
        book_chunks += [" ".join(words[i:i + 800]) for i in range(0, min(len(words), 40_000), 800)]
    return {"items": items, "quoted": quoted, "clean": web + book_chunks, "books": book_chunks}


def _edit(text: str) -> str:
    """Case and punctuation edits a web copy of an article would have."""
    t = text.replace(" @-@ ", "-").replace(" , ", ", ").replace(" .", ".").replace(" 's", "'s")
    t = t.replace(" ; ", "; ").replace('" ', '"')
    return "".join(c.upper() if i % 7 == 0 else c for i, c in enumerate(t))


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_quoted_items_are_caught_verbatim_and_edited_and_clean_text_is_kept(corpus, eval_file, kind):
    EVAL = eval_file
    assert len(corpus["quoted"]) >= 10 and len(corpus["clean"]) >= 100
    stage = datapipe.stage("decontaminate", eval_sets={"wikitext_cloze": [str(EVAL)]}, text_fields=["question"],
                           index_kind=kind)
    docs = corpus["quoted"] + [_edit(a) for a in corpus["quoted"]] + corpus["clean"]
    # a clean document that shares 12 consecutive words (< n = 13) with an item stays
    q = corpus["items"][3]["question"].split()
    docs.append(corpus["books"][0] + " " + " ".join(q[2:14]) + " " + corpus["books"][1])
    kept, rejects = stage(pa.table({"text": docs}))
    n_q = len(corpus["quoted"])
    rejected = set(rejects.column("text").to_pylist())
    assert all(d in rejected for d in docs[: 2 * n_q])                 # recall 1.0: verbatim and edited
    assert kept.num_rows == len(docs) - 2 * n_q                         # no clean document dropped
    detail = rejects.column("reject_detail").to_pylist()[0]
    assert rejects.column("reject_reason").to_pylist()[0] == "decontaminate:contaminated"
    bench, _, gram = detail.partition(": ")
    assert bench == "wikitext_cloze" and len(gram.split('"')[1].split()) == 13


def test_cut_mode_removes_only_the_quoted_span(corpus, eval_file):
    EVAL = eval_file
    item = corpus["items"][5]["question"]
    before, after = corpus["books"][2][:3000], corpus["books"][3][:3000]
    doc = f"{before}\n\nAs the quiz put it: {item.upper()}\n\n{after}"
    kept, rejects = datapipe.stage("decontaminate", eval_sets={"wikitext_cloze": [str(EVAL)]},
                                   text_fields=["question"], mode="cut")(pa.table({"text": [doc]}))
    assert rejects.num_rows == 0
    out = kept.column("text")[0].as_py()
    assert before.split()[-1] in out and after.split()[0] in out and "As the quiz put it" in out
    assert len(out) < len(doc) - len(item) // 2
    assert not match(pa.array([out]), build_index({"b": [str(EVAL)]}, fields=("question",))).count.any()


def test_index_artifact_and_plain_text_sets_decide_the_same(corpus, tmp_path):
    txt = tmp_path / "items.txt"
    txt.write_text("\n".join(it["question"] for it in corpus["items"]), encoding="utf-8")
    idx = build_index({"cloze_txt": [str(txt)]})
    idx.save(str(tmp_path / "index.npz"))
    loaded = NgramIndex.load(str(tmp_path / "index.npz"))
    assert len(loaded) == len(idx) > 3000 and np.array_equal(loaded.hashes, idx.hashes)
    docs = pa.table({"text": corpus["quoted"][:5] + corpus["clean"][:20]})
    a = datapipe.stage("decontaminate", index=str(tmp_path / "index.npz")).mark(docs)
    b = datapipe.stage("decontaminate", eval_sets={"cloze_txt": [str(txt)]}).mark(docs)
    assert a.column("reject_reason").to_pylist() == b.column("reject_reason").to_pylist()
    assert a.column("reject_reason").null_count == 20


def _shakespeare(shared_dir, tmp_path) -> Path:
    lines = [ln for ln in (shared_dir / "corpora" / "books" / "tinyshakespeare.txt").read_text(encoding="utf-8")
             .split("\n\n") if len(ln.split()) >= 20][:300]
    out = tmp_path / "shakespeare.txt"
    out.write_text("\n".join(" ".join(p.split()) for p in lines), encoding="utf-8")
    return out


def test_bloom_index_names_the_benchmark_among_several(corpus, eval_file, shared_dir, tmp_path):
    play = _shakespeare(shared_dir, tmp_path)
    cfg = dict(eval_sets={"wikitext_cloze": [str(eval_file)], "shakespeare": [str(play)]},
               text_fields=["question", "text"], index_kind="bloom")
    stage = datapipe.stage("decontaminate", **cfg)
    stage.stage.ensure_setup()
    assert isinstance(stage.stage.index, BloomIndex) and len(stage.stage.index.per) == 2
    speech = " ".join(play.read_text(encoding="utf-8").splitlines()[40].split()[:30]).upper()
    docs = [corpus["books"][0][:2000] + " " + speech + " " + corpus["books"][1][:2000], corpus["quoted"][0],
            *corpus["clean"][:50]]
    kept, rejects = stage(pa.table({"text": docs}))
    assert rejects.column("text").to_pylist() == docs[:2] and kept.num_rows == 50
    details = rejects.column("reject_detail").to_pylist()
    assert details[0].startswith("shakespeare: ") and details[1].startswith("wikitext_cloze: ")


def _prepare(tmp_path, **cfg) -> tuple[Decontaminate, StageContext]:
    stage = Decontaminate(DecontamConfig(**cfg))
    ctx = StageContext(work_dir=str(tmp_path / "work"), sources=("web",))
    run_prepared(stage, ctx)
    return stage, ctx


def test_index_passes_run_once_are_reused_and_ship_to_setup(corpus, eval_file, shared_dir, tmp_path):
    play = _shakespeare(shared_dir, tmp_path)
    cfg = dict(eval_sets={"wikitext_cloze": [str(eval_file)]}, text_fields=["question"], index_kind="bloom",
               bloom_fpr=1e-7)
    first, ctx = _prepare(tmp_path, **cfg)
    names = [t["pass"] for t in ctx.report["passes"]]
    assert names == ["items", "summary", "index", "bloom"] and not any(t["reused"] for t in ctx.report["passes"])
    ref = build_index({"wikitext_cloze": [str(eval_file)]}, fields=("question",))
    assert ctx.report["ngrams"] == len(ref) and ctx.report["index_kind"] == "bloom"
    per = ctx.report["per_benchmark"]["wikitext_cloze"]
    assert per["items"] == ref.items["wikitext_cloze"] and per["distinct_ngrams"] == len(ref)
    assert 0 < ctx.report["index_bytes"] < 10 * len(ref)   # bloom: smaller than the exact index
    again, ctx2 = _prepare(tmp_path, **cfg)                  # same files and params: every pass reused
    assert all(t["reused"] for t in ctx2.report["passes"]) and again.prepared == first.prepared
    exact = P.load({"index": first.prepared["index"]}, n=13, names=["wikitext_cloze"], storage=None)
    assert np.array_equal(exact.hashes, ref.hashes) and np.array_equal(exact.bench, ref.bench)
    # the workers use the shipped artifact, not their config's files: a stage configured with
    # other files but handed these artifacts decides by the artifacts
    other = Decontaminate(DecontamConfig(eval_sets={"wikitext_cloze": [str(play)]}, index_kind="bloom"))
    other.prepared = dict(first.prepared)
    docs = pa.table({"text": corpus["quoted"][:3] + corpus["clean"][:10]})
    assert StageRunner(other).mark(docs).column("reject_reason").null_count == 10


def test_bad_evaluation_file_is_an_error_naming_it(eval_file, tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"question": "fine"}\n{"question": "cut off', encoding="utf-8")
    with pytest.raises(SpecError, match="broken.jsonl"):
        _prepare(tmp_path, eval_sets={"ok": [str(eval_file)], "bad": [str(bad)]}, text_fields=["question"])


def test_compressed_evaluation_sets_read_like_plain_ones_and_validate_opens_them(corpus, eval_file, tmp_path):
    """Benchmarks ship compressed (``HumanEval.jsonl.gz``): every compression the inputs
    read is read here too, the format taken from the name without the suffix; and the
    spec check opens each file, so a damaged one is one line naming it before Ray starts."""
    import bz2
    import zstandard

    from datapipe.cli import main

    raw = eval_file.read_bytes()
    packed = {".gz": gzip.compress(raw, mtime=0), ".zst": zstandard.ZstdCompressor().compress(raw),
              ".bz2": bz2.compress(raw)}
    docs = pa.table({"text": corpus["quoted"][:4] + corpus["clean"][:10]})
    want = datapipe.stage("decontaminate", eval_sets={"cloze": [str(eval_file)]},
                          text_fields=["question"]).mark(docs).column("reject_reason").to_pylist()
    assert want.count("decontaminate:contaminated") == 4
    for suffix, data in packed.items():
        f = tmp_path / f"cloze.jsonl{suffix}"
        f.write_bytes(data)
        got = datapipe.stage("decontaminate", eval_sets={"cloze": [str(f)]}, text_fields=["question"]).mark(docs)
        assert got.column("reject_reason").to_pylist() == want, suffix
        stage, ctx = _prepare(tmp_path / suffix, eval_sets={"cloze": [str(f)]}, text_fields=["question"])
        assert ctx.report["per_benchmark"]["cloze"]["items"] == len(corpus["items"])

    cut = tmp_path / "HumanEval.jsonl.gz"
    cut.write_bytes(packed[".gz"][: len(packed[".gz"]) // 2])
    docs_file = tmp_path / "docs" / "d.jsonl"
    docs_file.parent.mkdir()
    docs_file.write_text(json.dumps({"text": "x"}) + "\n", encoding="utf-8")
    spec = tmp_path / "job.yaml"
    spec.write_text(f"name: t\noutput: {tmp_path / 'out'}\nsources:\n  - name: d\n    format: jsonl\n"
                    f"    paths: [{docs_file}]\nstages:\n  - decontaminate:\n"
                    f"      eval_sets: {{humaneval: [{cut}]}}\n      text_fields: [prompt]\n", encoding="utf-8")
    assert main(["validate", str(spec)]) == 2
    with pytest.raises(SpecError, match=r"HumanEval\.jsonl\.gz cannot be read: truncated_gzip"):
        DecontamConfig(eval_sets={"humaneval": [str(cut)]}, text_fields=["prompt"])


def test_inspect_marks_the_matched_span_in_the_document_as_written(corpus, eval_file, tmp_path, capsys):
    """The detail says where the first match lies (``at chars A-B``), so ``datapipe
    inspect`` shows the quoted item in context, with its original case and punctuation,
    not the document's beginning."""
    import pyarrow.parquet as pq

    from datapipe.cli import main

    item = corpus["items"][7]["question"]
    edited = _edit(item)
    doc = corpus["books"][0][:3000] + "\n\nFrom the quiz: " + edited + "\n\n" + corpus["books"][1][:3000]
    table = pa.table({"id": ["quiz-doc", "clean"], "source": ["web", "web"], "text": [doc, corpus["clean"][0]]})
    marked = datapipe.stage("decontaminate", eval_sets={"cloze": [str(eval_file)]},
                            text_fields=["question"]).mark(table)
    detail = marked.column("reject_detail")[0].as_py()
    a, b = map(int, re.search(r" at chars (\d+)-(\d+)$", detail).groups())
    assert doc.index(edited[:20]) <= a < b <= doc.index(edited[:20]) + len(edited)
    gram = detail.split('"')[1]
    assert " ".join(re.findall(r"[^\W_]+", doc[a:b].lower())) == gram          # the n-gram as written
    (tmp_path / "out" / "rejects" / "web").mkdir(parents=True)
    pq.write_table(marked.filter(pa.compute.is_valid(marked.column("reject_reason"))),
                   tmp_path / "out" / "rejects" / "web" / "part-00000.parquet")
    assert main(["inspect", str(tmp_path / "out"), "--reason", "decontaminate:contaminated"]) == 0
    shown = capsys.readouterr().out
    assert ">>>" + doc[a:b] + "<<<" in shown
    assert doc[:100] not in shown                                              # not the beginning
