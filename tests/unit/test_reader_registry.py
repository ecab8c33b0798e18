"""Readers are registered like stages: a plugin adds a format in one module, the job spec
and the trainers' inputs find it, and format guessing follows the readers' declarations."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Iterator

import pytest

from datapipe.errors import SpecError
from datapipe.plan import compile_plan
from datapipe.plugins import PluginError
from datapipe.readers import READERS, Reader, guess_format, iter_documents, reader_class, reader_registry
from datapipe.readers._streams import COMPRESSIONS, open_binary, compression_of
from datapipe.readers.base import InputFile, Rec
from datapipe.readers.warc import is_wet
from datapipe.spec import load_job


@dataclass(kw_only=True, frozen=True)
class TsvOptions:
    column: int = 0


class TsvReader(Reader):
    """A plugin's reader: one document per line of a tab-separated file, the text in
    column ``column``."""

    format = "tsv"
    Options = TsvOptions
    suffixes = (".tsv",)

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        with open_binary(f.path, compression_of(f.path), f.storage) as fh:
            for i, line in enumerate(fh):
                text = line.decode("utf-8").rstrip("\n").split("\t")[self.options.column]
                yield Rec(f"{f.rel}:{i}", f"{f.rel}:{i}", text=text)


def _plugin(**readers) -> list[tuple[str, types.ModuleType]]:
    module = types.ModuleType("toy_plugin")
    module.readers = lambda: readers
    return [("toy", module)]


def test_a_plugin_reader_serves_job_specs_and_trainer_inputs(tmp_path):
    registry = reader_registry(_plugin(tsv=TsvReader))
    assert registry["tsv"] is TsvReader and registry["warc"] is READERS["warc"]
    data = tmp_path / "rows.tsv"
    data.write_text("1\tfirst row\n2\tsecond row\n")
    job = tmp_path / "job.yaml"
    job.write_text("name: t\noutput: ../out\nsources:\n  - {name: rows, format: tsv, paths: [rows.tsv], "
                   "options: {column: 1}}\nstages: [{normalize: {}}]\n")
    spec = load_job(job, readers=registry)
    reader = compile_plan(spec).readers["rows"]
    assert isinstance(reader, TsvReader) and reader.options.column == 1
    # a misspelled option of a plugin reader is caught like a built-in's
    job.write_text(job.read_text().replace("column: 1", "colum: 1"))
    with pytest.raises(SpecError, match="unknown key 'colum'; did you mean 'column'"):
        load_job(job, readers=registry)
    # the trainers' inputs: the format is guessed from the plugin's suffix (compressed too)
    assert guess_format(str(tmp_path / "x.TSV.gz"), registry) == "tsv"
    texts = [d.text for d in iter_documents([str(data)], readers=registry)]
    assert texts == ["1", "2"]   # column 0: the default options
    with pytest.raises(SpecError, match=r"unknown format 'tsv'.*valid formats:"):
        load_job(job)   # without the plugin


def test_unknown_format_suggests_and_lists(tmp_path):
    with pytest.raises(SpecError, match=r"unknown format 'jsnol' \(did you mean 'jsonl'\?\); valid formats: "
                                         r"arxiv, code, hf, html, jsonl, mediawiki, parquet, stackexchange, text, warc"):
        reader_class(reader_registry([]), "jsnol")
    (tmp_path / "a.jsonl").write_text('{"text": "hello"}\n')
    job = tmp_path / "job.yaml"
    job.write_text("name: t\noutput: out\nsources:\n  - {name: docs, format: wrac, paths: [a.jsonl]}\n"
                   "stages: [{normalize: {}}]\n")
    with pytest.raises(SpecError, match=r"source 'docs': unknown format 'wrac' \(did you mean 'warc'\?\)"):
        load_job(job)


def test_plugin_readers_that_clash_or_lie_are_errors():
    with pytest.raises(PluginError, match="'jsonl' is registered by both 'datapipe' and plugin 'toy'"):
        reader_registry(_plugin(jsonl=type("OtherJsonl", (TsvReader,), {"format": "jsonl"})))
    with pytest.raises(PluginError, match="whose format is 'tsv'"):
        reader_registry(_plugin(csv=TsvReader))
    with pytest.raises(PluginError, match="not a Reader subclass"):
        reader_registry(_plugin(tsv=dict))


@pytest.mark.parametrize("name, fmt, wet", [
    ("CC-MAIN-1.warc.wet.gz", "warc", True),
    ("ccnet-sample.wet.txt", "warc", True),
    ("x.wet.zst", "warc", True),
    ("crawl.WARC.GZ", "warc", False),
    ("old.arc.bz2", "warc", False),
    ("notes.txt.xz", "text", False),
    ("posts.ndjson.zstd", "jsonl", False),
    ("page.htm", "html", False),
    ("t.parquet", "parquet", False),
    ("main.c", "text", False),
])
def test_one_table_for_guessing_compression_and_wet(name, fmt, wet):
    """The guess, the WARC reader's WET check and the compression table agree: every
    compression suffix readers open is one guessing strips."""
    assert guess_format(f"/d/{name}", reader_registry([])) == fmt
    assert is_wet(name) == wet
    assert READERS["warc"].guess_options(name) == ({"records": "conversion"} if wet else None)
    for ext in COMPRESSIONS:
        assert guess_format(f"/d/a.jsonl{ext}", reader_registry([])) == "jsonl"
