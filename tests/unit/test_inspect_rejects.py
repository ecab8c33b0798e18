"""``datapipe inspect`` shows the part of a rejected document its rule pointed at, on a
real stage's rejects: code_filter's generated file, whose marker sits below a license
header (the decontamination case is in test_decontam.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import datapipe
from datapipe.cli import main


def test_a_generated_files_marker_is_shown_where_it_is(tmp_path, capsys):
    # a real generated C header from the venv's torch: a 17-line license block, then the marker
    torch = Path(importlib.util.find_spec("torch").origin).parent
    rel = "include/oneapi/dnnl/dnnl_debug.h"
    text = (torch / rel).read_text(encoding="utf-8")
    marker = text.index("DO NOT EDIT")
    assert marker > 400 and text[:marker].count("\n") >= 10
    table = pa.table({"id": ["dnnl_debug"], "source": ["code"], "text": [text], "path": [rel], "language": ["C"]})
    marked = datapipe.stage("code_filter").mark(table)
    assert marked.column("reject_reason").to_pylist() == ["code_filter:generated"]
    out = tmp_path / "out" / "rejects" / "code"
    out.mkdir(parents=True)
    pq.write_table(marked.filter(pc.is_valid(marked.column("reject_reason"))), out / "part-00000.parquet")
    assert main(["inspect", str(tmp_path / "out"), "--reason", "code_filter:generated"]) == 0
    shown = capsys.readouterr().out
    assert ">>>DO NOT EDIT<<<" in shown                         # the marker, marked where it is
    assert text[:80] not in shown                               # not the license header the file starts with
