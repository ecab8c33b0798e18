"""Quiet, readable runs: one progress line per stage, Ray's own chatter in a log file.

:class:`Progress` is fed the stats of each finished read split (the driver calls
:meth:`Progress.split_done` as splits complete, :meth:`Progress.close` at the end). On
a terminal it keeps one line per stage up to date in place::

    read               in   1,234  out   1,230   412 docs/s  drop read:empty (4)
    langid             in   1,230  out   1,101   410 docs/s  drop langid:language (120)

Elsewhere (a log, CI, ``ray job submit``) it prints one summary line at most every
``interval`` seconds, and one at the end, so a long run's log grows by a line a minute,
not by a progress bar redraw per block.

:func:`quiet_ray` is the other half: Ray Data's progress bars and execution banners
off, and the ``ray`` loggers written to ``<staging>/logs/ray.log`` instead of the
console (``--verbose`` keeps everything on the console, as Ray prints it).
:func:`ray_init_kwargs` is what ``ray.init`` needs for the same (workers' output is not
streamed to the driver; it stays in Ray's session log folder, named in ``ray.log``).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

log = logging.getLogger(__name__)

#: Ray's Python loggers whose records go to the log file on a quiet run
RAY_LOGGERS = ("ray", "ray.data", "ray.train", "ray.tune", "ray.serve")


def _fmt(n: int) -> str:
    return f"{n:,}"


class Progress:
    """Live per-stage progress from per-split stats.

    ``stages``: stage names in chain order (``read`` first when reads are counted);
    ``echo``: where non-terminal lines go (``print``); ``stream``: the terminal for
    in-place lines (default ``sys.stderr`` when it is a TTY); ``interval``: seconds
    between non-terminal lines; ``total_splits``: shown as ``12/40 splits`` when known.
    """

    def __init__(self, stages: list[str], echo: Callable[[str], None] = print, *, stream: TextIO | None = None,
                 tty: bool | None = None, interval: float = 30.0, total_splits: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stages = list(stages)
        self.echo = echo
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(tty if tty is not None else getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval
        self.total_splits = total_splits
        self.clock = clock
        self.splits = 0
        self._t0 = clock()
        self._last_echo = self._t0
        self._drawn = 0
        self._closed = False
        self._in = {s: 0 for s in self.stages}
        self._out = {s: 0 for s in self.stages}
        self._dropped: dict[str, dict[str, int]] = {s: {} for s in self.stages}

    # -- feeding ---------------------------------------------------------------------
    def split_done(self, stats: Mapping[str, Mapping[str, Mapping[str, Any]]], *, show: bool = True) -> None:
        """Add one finished split's stats: ``{stage: {source: BatchStats dict}}``."""
        for stage, per_source in stats.items():
            if stage not in self._in:        # a stage the caller did not announce: append it
                self.stages.append(stage)
                self._in[stage], self._out[stage], self._dropped[stage] = 0, 0, {}
            for st in per_source.values():
                self._in[stage] += int(st.get("docs_in", 0))
                self._out[stage] += int(st.get("docs_out", 0))
                drops = self._dropped[stage]
                for reason, n in (st.get("dropped") or {}).items():
                    drops[reason] = drops.get(reason, 0) + int(n)
        self.splits += 1
        if show:
            self._show()

    def close(self, final: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None, *,
              splits: int | None = None) -> None:
        """Print the final state (once). ``final``: the run's merged stats, as the report
        has them (``{stage: {source: BatchStats dict}}``), and ``splits`` the read splits:
        the last line then counts what the report counts, not the sum of what each
        phase's splits (and splits run again after the id check) reported on the way."""
        if self._closed:
            return
        self._closed = True
        if final is not None:
            self._in = {s: 0 for s in self.stages}
            self._out = {s: 0 for s in self.stages}
            self._dropped = {s: {} for s in self.stages}
            self.splits = 0
            self.split_done(final, show=False)
            self.splits = splits if splits is not None else self.splits
        if self.tty:
            self._draw()
        else:
            self.echo(self.summary_line(final=True))

    # -- rendering -------------------------------------------------------------------
    def stage_lines(self) -> list[str]:
        """One line per stage: docs in/out, docs/s over the run's wall time, top drop."""
        elapsed = max(self.clock() - self._t0, 1e-9)
        width = max([len(s) for s in self.stages] + [5])
        lines = []
        for s in self.stages:
            rate = self._in[s] / elapsed
            top = self._top_drop(s)
            lines.append(f"{s:<{width}}  in {_fmt(self._in[s]):>9}  out {_fmt(self._out[s]):>9}  "
                         f"{rate:>8,.0f} docs/s" + (f"  drop {top}" if top else ""))
        return lines

    def summary_line(self, *, final: bool = False) -> str:
        """The one-line form: splits done, docs into the chain and out of it, rate, top drop."""
        elapsed = max(self.clock() - self._t0, 1e-9)
        first = self.stages[0] if self.stages else None
        docs_in = self._in.get(first, 0)
        # out of the chain: what entered less every drop (the last stage may see only some
        # sources, so its own "out" is not the chain's)
        docs_out = docs_in - sum(n for s in self.stages for n in self._dropped[s].values())
        splits = f"{self.splits}/{self.total_splits}" if self.total_splits else str(self.splits)
        drops = {}
        for s in self.stages:
            for r, n in self._dropped[s].items():
                drops[r] = drops.get(r, 0) + n
        top = max(drops.items(), key=lambda kv: (kv[1], kv[0])) if drops else None
        head = "done" if final else "progress"
        return (f"{head}: {splits} splits, {_fmt(docs_in)} docs in, {_fmt(docs_out)} out, "
                f"{docs_in / elapsed:,.0f} docs/s, {elapsed:,.0f} s"
                + (f", top drop {top[0]} ({_fmt(top[1])})" if top else ""))

    def _top_drop(self, stage: str) -> str | None:
        drops = self._dropped[stage]
        if not drops:
            return None
        reason, n = max(drops.items(), key=lambda kv: (kv[1], kv[0]))
        return f"{reason} ({_fmt(n)})"

    def _show(self) -> None:
        if self.tty:
            self._draw()
            return
        now = self.clock()
        if now - self._last_echo >= self.interval:
            self._last_echo = now
            self.echo(self.summary_line())

    def _draw(self) -> None:
        lines = self.stage_lines()
        out = []
        if self._drawn:
            out.append(f"\x1b[{self._drawn}F")      # back to the first line of the block
        out.extend(f"\x1b[2K{line}\n" for line in lines)
        self.stream.write("".join(out))
        self.stream.flush()
        self._drawn = len(lines)


# -- Ray's output --------------------------------------------------------------------

def ray_init_kwargs(verbose: bool) -> dict[str, Any]:
    """Arguments for ``ray.init``: workers' output streamed to the console only when
    ``verbose``; Ray's own loggers at INFO when verbose, else ERROR while it starts
    (its start-up notices would reach the console before :func:`quiet_ray` can route
    them; call that right after ``ray.init``)."""
    import ray

    return {"log_to_driver": verbose,
            "logging_config": ray.LoggingConfig(encoding="TEXT", log_level="INFO" if verbose else "ERROR")}


def quiet_ray(log_dir: str | Path, *, verbose: bool) -> logging.Handler | None:
    """Send the ``ray`` loggers to ``<log_dir>/ray.log`` and turn Ray Data's console
    output off (progress bars, execution banners, stats dumps) unless ``verbose``, and
    its ``max_errored_blocks`` to 0, so a block that keeps failing fails the job.
    Call it after ``ray.init`` (which installs Ray's console handlers). Returns the file
    handler (remove it with :func:`restore_ray_logging` when the run ends); None when
    ``verbose`` (loggers unchanged)."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.max_errored_blocks = 0  # no data is ever silently skipped
    ctx.enable_progress_bars = verbose
    ctx.enable_operator_progress_bars = verbose
    ctx.print_on_execution_start = verbose
    ctx.enable_auto_log_stats = False
    if verbose:
        return None
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_dir / "ray.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in RAY_LOGGERS:
        lg = logging.getLogger(name)
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
        lg.propagate = False
        for h in list(lg.handlers):          # Ray's own console handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler):
                lg.removeHandler(h)
                handler.__dict__.setdefault("_removed", []).append((lg, h))
    session = _session_log_dir()
    if session:
        logging.getLogger("ray").info("Ray workers' logs: %s", session)
    return handler


def restore_ray_logging(handler: logging.Handler | None) -> None:
    """Undo :func:`quiet_ray`'s logger changes (the Ray Data settings stay)."""
    if handler is None:
        return
    for name in RAY_LOGGERS:
        lg = logging.getLogger(name)
        lg.removeHandler(handler)
        lg.propagate = True
    for lg, h in handler.__dict__.get("_removed", []):
        lg.addHandler(h)
    handler.close()


def _session_log_dir() -> str | None:
    # imported here: ray_session imports this module
    from datapipe.ray_session import _embedded_node

    try:
        node = _embedded_node()   # the driver's node (embedded, or joined: connect-only)
        return str(Path(node.get_session_dir_path()) / "logs") if node is not None else None
    except Exception:  # noqa: BLE001 - only informational
        return None
