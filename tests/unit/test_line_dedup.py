"""line_dedup's pure parts: units, normalisation, removal; and its declared passes run by
the engine's executor in one process over side rows, against a plain set."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import SIDE, PassExecutor
from stages.dedup.lines import LineDedup, LineDedupConfig, normalise, remove_units, split_units


def test_units_rebuild_the_text_and_removal_keeps_the_rest_byte_for_byte():
    text = "Intro line one\r\n\r\n  \nSecond para\r\nstill second\n\n\nLast para"
    for unit in ("line", "paragraph"):
        units, seps = split_units(text, unit)
        assert "".join(u + s for u, s in zip(units, seps + [""])) == text
    assert split_units(text, "paragraph")[0] == ["Intro line one\r", "Second para\r\nstill second", "Last para"]
    assert remove_units(text, "paragraph", [1]) == "Intro line one\r\n\r\n  \nLast para"
    assert remove_units(text, "paragraph", [2]) == "Intro line one\r\n\r\n  \nSecond para\r\nstill second"
    assert remove_units("a\nb\nc\n", "line", [1]) == "a\nc\n"
    assert remove_units("a\nb\nc", "line", [2]) == "a\nb"
    assert normalise("  Page 12\tof  30 \r", lowercase=True, digits=True) == "page 00 of 00"
    assert normalise("Page 12", lowercase=False, digits=False) == "Page 12"


def test_config_errors_name_the_field():
    with pytest.raises(SpecError, match="unit='sentence'"):
        LineDedupConfig(unit="sentence")
    with pytest.raises(SpecError, match="min_chars=0"):
        LineDedupConfig(min_chars=0)


def test_passes_remove_what_a_plain_set_removes(tmp_path, shared_dir):
    # real news text (the Lee corpus) as sentences, one a line, in overlapping windows so
    # that copies occur across documents and splits, plus repeated boilerplate lines
    lines = (shared_dir / "corpora" / "misc").glob("lee*.cor")
    sents = [s.strip() + "." for f in sorted(lines) for line in f.read_text(errors="replace").splitlines()
             for s in line.split(". ") if s.strip()][:600]
    boiler = ["Subscribe to our newsletter for updates", "Copyright 2004 all rights reserved", "Home"]
    docs = []
    for i in range(120):
        body = sents[(i * 7) % 500:(i * 7) % 500 + 9]
        docs.append("\n".join(([boiler[i % 2]] if i % 3 else []) + body + [boiler[2], boiler[(i + 1) % 2]]))
    stage = LineDedup(LineDedupConfig(parts=3))
    files = []
    for s in range(3):   # three splits of 40 documents
        chunk = docs[s * 40:(s + 1) * 40]
        side = stage.side(S.make_batch(source="web", ids=[str(i) for i in range(40)], texts=chunk))
        side = side.append_column("_split", pa.array([f"web/{s:05d}"] * 40))
        side = side.append_column("_row", pa.array(range(40), pa.int64()))
        files.append(str(tmp_path / f"{s}.parquet"))
        pq.write_table(side, files[-1])
    plan = stage.passes(None)
    art = PassExecutor(str(tmp_path / "w"), None, inputs={SIDE: files}, local=True).run(plan)["decisions"]
    dec = pq.read_table(art.uri)
    got = {int(sp[-5:]) * 40 + r: e for sp, r, e in zip(dec.column("_split").to_pylist(), dec.column("_row").to_pylist(),
                                                        dec.column("edit").to_pylist())}
    seen, want = set(), {}
    for d, text in enumerate(docs):
        for i, u in enumerate(text.split("\n")):
            n = normalise(u, lowercase=True, digits=True)
            if len(n) >= 10:
                if n in seen:
                    want.setdefault(d, []).append(i)
                seen.add(n)
    assert got == want and len(want) > 100
    new, changes = stage.apply_edits([docs[d] for d in sorted(got)], [got[d] for d in sorted(got)])
    assert all("Home" in t for t in new if t is not None)          # short lines are never removed
    assert changes["lines_removed"] == [len(got[d]) for d in sorted(got)]
