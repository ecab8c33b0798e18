"""`datapipe.readers.iter_documents`: the model trainers read input the way a job does."""

from __future__ import annotations

import logging

import pytest

from datapipe import schema as S
from datapipe.errors import CorruptInputError, SpecError
from datapipe.readers import READERS, InputFile, ReadSplit, ReadStats, iter_documents
from stages.extract import Extract


def _job_texts(fmt: str, path: str, options=None) -> list[str]:
    """What a job's reader + `extract: {}` keep from one file."""
    reader = READERS[fmt](source="s", options=options)
    f = InputFile(path, path, 0)
    out = []
    for table in reader.read(ReadSplit((f,))):
        table, _ = Extract().process(table)
        out += [t for t, r in zip(table.column(S.TEXT).to_pylist(), table.column(S.REJECT_REASON).to_pylist())
                if r is None]
    return out


def test_documents_are_the_jobs_text_and_bad_input_is_counted(shared_dir, tmp_path, caplog):
    web = shared_dir / "corpora" / "web"
    cut = tmp_path / "cut.warc.gz"
    data = (web / "warc" / "crawl2024-0000.warc.gz").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    lines = tmp_path / "posts.jsonl"
    lines.write_text('{"text": "a post", "lang": "en"}\nnot json\n{"text": ""}\n{"text": "another"}\n')
    page = web / "html" / "blog.python.org.html.gz"
    stats = ReadStats()
    with caplog.at_level(logging.WARNING):
        docs = list(iter_documents([str(cut), str(lines), f"html:{page}"], stages=(Extract(),), stats=stats))
    by_file = {p: [d.text for d in docs if d.path == p] for p in (str(cut), str(lines), str(page))}
    # the same text a job extracts (tables kept), page for page
    assert by_file[str(cut)] == _job_texts("warc", str(cut)) and len(by_file[str(cut)]) > 3
    assert by_file[str(page)] == _job_texts("html", str(page))
    assert by_file[str(lines)] == ["a post", "another"]
    assert [d.language for d in docs if d.path == str(lines)] == ["en", None]
    # bad input: counted per reason, the damaged file named in a warning; nothing else lost
    assert stats.rejects["read:truncated_gzip"] == 1
    assert stats.rejects["read:invalid_json"] == 1 and stats.rejects["read:empty"] == 1
    assert stats.documents == len(docs)
    assert any(str(cut) in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    with pytest.raises(CorruptInputError) as err:
        list(iter_documents([str(cut)], stages=(Extract(),), on_error="fail"))
    assert str(cut) in str(err.value)


def test_inputs_are_expanded_once_and_mistakes_are_named(repo_dir, tmp_path):
    d = repo_dir / "jobs" / "sample_data"
    news = f"{d}/news/*.jsonl*"
    once = list(iter_documents([news]))
    assert len(once) > 5 and list(iter_documents([news, f"{d}/news"])) == once   # a file reached twice: read once
    first = sorted({doc.path for doc in once})[0]
    assert first not in {doc.path for doc in iter_documents([news], exclude=[first])}
    wet = list(iter_documents([f"{d}/wet/*.wet.gz"]))   # WET: the conversion records' text
    assert wet and all(doc.raw is None and doc.text for doc in wet)
    with pytest.raises(SpecError, match="matches no files"):
        list(iter_documents([str(tmp_path / "*.none")]))
    with pytest.raises(SpecError, match="no stage extracted them"):
        list(iter_documents([f"{d}/pages/tidepool-app.html"]))
