"""Whitespace that carries meaning survives the stages that rewrite text (issue #36, item
1): code read by the ``code`` reader passes ``normalize`` byte for byte, indentation in a
``<pre>`` block survives ``extract`` + ``normalize``, and ``collapse_spaces`` (off by
default) never touches the spaces that start a line."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pyarrow as pa

import datapipe
from datapipe.readers import READERS, InputFile

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PAGE = Path(__file__).resolve().parents[2] / "jobs" / "sample_data" / "pages" / "python-merge-two-dicts.html"


def _code_rows(names: list[str]) -> pa.Table:
    """Real standard-library files read by the ``code`` reader, as a job reads them."""
    files = [InputFile(str(STDLIB / n), n, (STDLIB / n).stat().st_size) for n in sorted(names)]
    reader = READERS["code"](source="code", options=None, on_error="skip")
    tables = [t for split in reader.plan(files, split_bytes=1 << 20) for t in reader.read(split)]
    return pa.concat_tables(tables).drop_columns(["_reject_stage", "_reject_reason", "_reject_detail"])


def test_normalize_passes_code_documents_byte_for_byte():
    names = ["textwrap.py", "json/encoder.py", "heapq.py"]     # heapq.py holds a non-ASCII character
    rows = _code_rows(names)
    assert rows.column("repo").null_count == 0
    kept, rejects = datapipe.stage("normalize")(rows)
    assert rejects.num_rows == 0
    got = dict(zip(kept.column("path").to_pylist(), kept.column("text").to_pylist()))
    for n in names:
        src = (STDLIB / n).read_text(encoding="utf-8")
        assert got[n] == src, n                           # indentation, blank runs, final newline
    assert sum(line.startswith("    ") for line in got["textwrap.py"].splitlines()) > 300
    # asked to, normalize treats code as prose: the final newline goes, indentation stays
    forced, _ = datapipe.stage("normalize", code="normalize")(rows)
    text = dict(zip(forced.column("path").to_pylist(), forced.column("text").to_pylist()))["textwrap.py"]
    assert text == (STDLIB / "textwrap.py").read_text().strip("\n")


def test_pre_block_indentation_survives_extract_and_normalize():
    """The sample's Q&A page holds a ``<pre><code>`` Python function: its indentation is
    in the text after extraction and after normalize's defaults."""
    table = pa.table({"raw": [PAGE.read_bytes()], "text": pa.array([None], pa.string())})
    extracted, _ = datapipe.stage("extract")(table)
    normalized, _ = datapipe.stage("normalize")(extracted)
    block = ("def deep_merge(a: dict, b: dict) -> dict:\n    out = dict(a)\n    for key, value in b.items():\n"
             "        if isinstance(value, dict) and isinstance(out.get(key), dict):\n")
    assert block in extracted.column("text")[0].as_py()
    assert block in normalized.column("text")[0].as_py()


def test_prose_normalisation_keeps_indentation_and_aligned_columns():
    diagram = "  +------+      +------+\n  | read | ---> | scan |\n  +------+      +------+"
    text = f"\r\n\r\n{diagram}\r\n\n\n\n\n\nAfter the diagram.\u00a0  \n"
    kept, _ = datapipe.stage("normalize")(pa.table({"text": [text]}))
    assert kept.column("text")[0].as_py() == f"{diagram}\n\n\nAfter the diagram."
    # collapse_spaces: runs inside a line become one space; the indentation stays
    kept, _ = datapipe.stage("normalize", collapse_spaces=True)(
        pa.table({"text": ["def f():\n    x  =\t1   \n\treturn  x"]}))
    assert kept.column("text")[0].as_py() == "def f():\n    x = 1\n\treturn x"
