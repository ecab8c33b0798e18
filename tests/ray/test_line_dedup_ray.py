"""line_dedup: a global stage that edits documents (docs/dedup.md "Line and paragraph
dedup"), run by the engine over real Project Gutenberg books, whose licence header and
footer lines repeat across books: the first copy of every line stays, later copies go,
a document left with nothing is a counted reject, and re-runs give the same bytes."""

from __future__ import annotations

import gzip
import json
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stages.dedup.lines import normalise, split_units

pytestmark = pytest.mark.ray

BOOKS = ("pg7256", "pg1080", "pg28860")   # three short books: 633, 732 and 1,522 lines


def _reference(docs: list[tuple[str, str]], *, min_chars: int = 10) -> dict[str, list[str]]:
    """A plain set over the documents in read order: each document's kept lines."""
    seen, out = set(), {}
    for doc_id, text in docs:
        kept = []
        for u in split_units(text, "line")[0]:
            n = normalise(u, lowercase=True, digits=True)
            if len(n) >= min_chars and n in seen:
                continue
            seen.add(n) if len(n) >= min_chars else None
            kept.append(u)
        out[doc_id] = kept
    return out


@pytest.fixture(scope="module")
def books(shared_dir) -> dict[str, str]:
    return {b: gzip.decompress((shared_dir / "corpora/books/gutenberg" / f"{b}.txt.gz").read_bytes()).decode("utf-8")
            for b in BOOKS}


def _footer(books: dict[str, str]) -> str:
    """The first book's licence footer, its lines of at least ``min_chars`` (10) only."""
    tail = books[BOOKS[0]][books[BOOKS[0]].index("*** END OF"):]
    return "\n".join(u for u in split_units(tail, "line")[0] if len(normalise(u, lowercase=True, digits=True)) >= 10)


def _job(tmp_path: Path, books: dict[str, str], name: str, **opts) -> Path:
    """Each book in its own file (its own read split, in file order), plus a document
    made only of the first book's licence footer lines: every line of it is a later copy."""
    data = tmp_path / "data"
    if not data.exists():
        data.mkdir()
        for i, (b, text) in enumerate(books.items()):
            (data / f"{i}-{b}.jsonl").write_text(json.dumps({"id": b, "text": text}) + "\n", encoding="utf-8")
        (data / "9-footer.jsonl").write_text(json.dumps({"id": "footer", "text": _footer(books)}) + "\n", encoding="utf-8")
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: {name}
        output: {name}
        execution: {{split_bytes: 1024}}
        sources:
          - {{name: books, format: jsonl, paths: [data/*.jsonl], options: {{id_key: id}}}}
        stages:
          - line_dedup: {json.dumps(opts)}
    """))
    return spec


def _documents(out: Path) -> dict[str, str]:
    t = pq.read_table(out / "documents")
    return dict(zip(t.column("source_id").to_pylist(), t.column("text").to_pylist()))


@pytest.mark.parametrize("opts", [{}, {"local_rows": 0, "parts": 2}], ids=["local", "distributed"])
def test_later_copies_of_lines_are_removed_across_splits(ray_session, tmp_path, books, opts):
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    result = run_job(load_job(_job(tmp_path, books, "out", **opts)), echo=lambda line: None)
    kept = _documents(tmp_path / "out")
    docs = [(b, books[b]) for b in BOOKS] + [("footer", _footer(books))]
    want = _reference(docs)
    # every book keeps its lines but the later copies (the first book: of its own lines)
    for b in BOOKS:
        assert kept[b].split("\n") == want[b]
        assert len(want[b]) < len(books[b].split("\n"))          # the licence lines went
    licence = "Project Gutenberg-tm electronic works"
    assert licence in kept[BOOKS[0]] and all(licence not in kept[b] for b in BOOKS[1:])
    # a document of nothing but later copies is a counted reject, with its text as it came
    assert "footer" not in kept and want["footer"] == []
    rejects = pq.read_table(tmp_path / "out" / "rejects")
    assert rejects.column("source_id").to_pylist() == ["footer"]
    assert rejects.column("reject_reason").to_pylist() == ["line_dedup:empty"]
    assert rejects.column("text").to_pylist() == [docs[-1][1]]
    # the report counts what went, as the reference does
    st = next(s for s in result.report["stages"] if s["stage"] == "line_dedup")
    removed = sum(len(books[b].split("\n")) - len(want[b]) for b in BOOKS)
    changed = sum(kept[b] != books[b] for b in BOOKS)
    assert st["changes"]["lines_removed"] == removed and st["docs_changed"] == changed >= 2
    assert st["changes"]["chars_removed"] == sum(len(books[b]) - len(kept[b]) for b in BOOKS)
    assert st["dropped"] == {"line_dedup:empty": 1} and st["docs_out"] == 3
    rep = result.report["stage_reports"]["line_dedup"]
    assert rep["edited"] == changed + 1 and [p["pass"] for p in rep["passes"]] == ["dups", "decisions"]


def test_rerun_is_byte_identical_and_paragraph_unit(ray_session, tmp_path, books):
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    for name in ("a", "b"):
        run_job(load_job(_job(tmp_path, books, name)), echo=lambda line: None)
    for kind in ("documents", "rejects"):
        fa = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a" / kind).rglob("*.parquet"))
        assert fa == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b" / kind).rglob("*.parquet"))
        assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in fa)
    # paragraphs: the later books lose the licence paragraphs they share with the first,
    # and keep every other paragraph, separators and all
    run_job(load_job(_job(tmp_path, books, "p", unit="paragraph", min_chars=20)), echo=lambda line: None)
    kept = _documents(tmp_path / "p")
    for b in BOOKS[1:]:
        paras = split_units(books[b], "paragraph")[0]
        assert len(split_units(kept[b], "paragraph")[0]) < len(paras)
        assert kept[b] in books[b] or all(p in books[b] for p in split_units(kept[b], "paragraph")[0])


def test_line_dedup_after_tokenize_is_refused(tmp_path, shared_dir):
    from datapipe.errors import SpecError
    from datapipe.spec import load_job

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.jsonl").write_text('{"text": "x"}\n')
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: order
        output: out
        sources:
          - {{name: s, format: jsonl, paths: [in/d.jsonl]}}
        stages:
          - tokenize: {{tokenizer: "{shared_dir / 'tokenizers' / 'tiny-2k.tokenizer.json'}"}}
          - line_dedup: {{}}
    """))
    with pytest.raises(SpecError, match=r"line_dedup.*rewrites text after.*tokenize"):
        load_job(spec)
