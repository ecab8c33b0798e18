"""The progress display fed with per-split stats, as the runner feeds it."""

from __future__ import annotations

import io
import re

from datapipe.progress import Progress


def _split(read_in, length_drop, lang_drop):
    """Stats of one split: read -> length -> langid, two sources."""
    out = {"read": {}, "length": {}, "langid": {}}
    for src, n in (("web", read_in), ("books", read_in // 2)):
        after_len = n - length_drop
        out["read"][src] = {"docs_in": n, "docs_out": n, "dropped": {}}
        out["length"][src] = {"docs_in": n, "docs_out": after_len, "dropped": {"length:too_short": length_drop}}
        out["langid"][src] = {"docs_in": after_len, "docs_out": after_len - lang_drop,
                              "dropped": {"langid:language": lang_drop} if lang_drop else {}}
    return out


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_log_mode_prints_a_line_at_most_every_interval():
    lines, clock = [], Clock()
    p = Progress(["read", "length", "langid"], lines.append, tty=False, interval=10, total_splits=6, clock=clock)
    for i in range(6):
        clock.t = 4.0 * (i + 1)        # a split every 4 s
        p.split_done(_split(100, 10, 5))
    p.close()
    p.close()                          # idempotent
    # at 12 s and 24 s (10 s apart at least), plus the final line
    assert len(lines) == 3
    assert lines[0].startswith("progress: 3/6 splits, 450 docs in, 360 out")
    assert lines[-1] == ("done: 6/6 splits, 900 docs in, 720 out, 38 docs/s, 24 s, "
                         "top drop length:too_short (120)")


def test_terminal_mode_redraws_one_line_per_stage():
    stream, clock = io.StringIO(), Clock()
    p = Progress(["read", "length", "langid"], lambda s: None, stream=stream, tty=True, clock=clock)
    clock.t = 2.0
    p.split_done(_split(100, 10, 0))
    clock.t = 4.0
    p.split_done(_split(100, 10, 30))
    p.close()
    text = stream.getvalue()
    assert text.count("\x1b[3F") == 2                  # moved back over the 3 stage lines before each redraw
    final = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", x) for x in text.split("\x1b[3F")[-1].splitlines()]
    assert [x.split()[0] for x in final] == ["read", "length", "langid"]
    read, length, langid = final
    assert "in       300  out       300" in read and "75 docs/s" in read
    assert "drop length:too_short (40)" in length
    assert "in       260  out       200" in langid and "drop langid:language (60)" in langid


def test_an_unannounced_stage_gets_its_own_line():
    stream = io.StringIO()
    p = Progress(["read"], lambda s: None, stream=stream, tty=True)
    p.split_done({"read": {"a": {"docs_in": 1, "docs_out": 1}}, "dedup": {"a": {"docs_in": 1, "docs_out": 0,
                                                                              "dropped": {"dedup:exact": 1}}}})
    assert p.stages == ["read", "dedup"] and "drop dedup:exact (1)" in stream.getvalue()
