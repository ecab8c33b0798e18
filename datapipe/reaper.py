"""Stops the processes an embedded Ray started when its driver dies without stopping them.

On Linux Ray ties the GCS server and the raylet to the driver (the kernel kills them with
it), but not what the raylet starts: its dashboard agent and runtime-env agent outlive a
SIGKILLed (or OOM-killed, or crashed) ``datapipe run`` forever, and the runtime-env agent
ignores SIGTERM. Ray's own reaper is not used where the kernel ties processes together,
and it would kill the driver's whole process group, which is not only Ray.

So :func:`start` launches a small watchdog: this file run as a script, in a session of
its own (a signal to the driver's process group does not reach it). It learns what to
watch from the driver, and every :data:`SCAN_S` seconds it reads ``/proc`` and records
each process of those trees as ``(pid, start time)``; a process's children are recorded
while it lives, so the agents are known before the raylet dies and they are reparented.
When the driver is gone (its end of the watchdog's stdin closes: the kernel does that
when the driver dies, however it dies; or its pid no longer names it), the watchdog
sends SIGTERM, then after :data:`GRACE_S` SIGKILL, to every recorded process that is
still the same process (same start time; signalled through a pidfd, so a reused pid is
never hit), and exits. It stops nothing else: not the driver's other children, not a
cluster the driver joined (:func:`start` is only called for an embedded Ray).

The protocol on the watchdog's stdin, one line each:

- ``track PID:START...``: the processes Ray started (the driver's children it owns, with
  their start times); only they and their descendants are watched from then on. Before this line (while ``ray.init``
  runs) the watchdog watches the driver's children started after itself, so a driver
  killed while Ray starts is covered too.
- ``done``: the driver stopped Ray itself. Anything recorded that is still alive (none
  after a clean ``ray.shutdown()``) is stopped as above, and the watchdog exits.

Linux only (``/proc``, pidfds); elsewhere :func:`start` returns None and nothing is
watched. Standard library only: the watchdog starts with ``python -I -S`` in ~20 ms.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

log = logging.getLogger(__name__)

SCAN_S = 1.0     # how often the watched trees are read from /proc (~10 us per process on the host)
STARTING_SCAN_S = 0.2   # while ray.init runs: the raylet starts its agents then
GRACE_S = 2.0    # between SIGTERM and SIGKILL


class Reaper:
    """The driver's handle on its watchdog. :meth:`track` once Ray has started, and
    :meth:`done` once Ray is stopped; dropping the handle without :meth:`done` (or the
    driver dying) makes the watchdog stop what it recorded."""

    def __init__(self, proc: subprocess.Popen):
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _say(self, line: str) -> None:
        try:
            self._proc.stdin.write(line.encode() + b"\n")
            self._proc.stdin.flush()
        except (OSError, ValueError):   # the watchdog is gone (killed by hand): nothing to tell
            log.debug("the process reaper (pid %d) is gone", self._proc.pid)

    def track(self, pids: Iterable[int]) -> None:
        """Watch exactly ``pids`` (the driver's children that Ray started) and their
        descendants. Sent as ``pid:start time``, read here while they surely live, so the
        watchdog never takes a reused pid for one of them."""
        ids = [f"{p}:{info[1]}" for p in pids if (info := _stat(p)) is not None]
        self._say("track " + " ".join(ids))

    def done(self, timeout: float = GRACE_S + 1.0) -> None:
        """Ray is stopped: let the watchdog make sure nothing it recorded is left, and wait
        for it to exit (at once when nothing is left, which is the normal case)."""
        self._say("done")
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:   # still stopping a straggler: it exits on its own
            log.debug("the process reaper (pid %d) is still stopping leftovers", self._proc.pid)


def start() -> Reaper | None:
    """Start a watchdog for this process (call it just before ``ray.init`` starts an
    embedded Ray); None where ``/proc`` or pidfds are missing."""
    if not sys.platform.startswith("linux") or _stat(os.getpid()) is None:
        return None
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):   # Python built without it, or a kernel before 5.3
        return None
    proc = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    return Reaper(proc)


# -- the watchdog ---------------------------------------------------------------------

Proc = tuple[int, int, bytes]   # (ppid, start time in clock ticks since boot, state letter)


def _parse(stat: bytes) -> Proc:
    rest = stat[stat.rindex(b")") + 2:].split()   # the name in (...) may hold spaces and parentheses
    return int(rest[1]), int(rest[19]), rest[0]


def _stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return _parse(f.read())
    except (OSError, ValueError, IndexError):
        return None


def _table() -> dict[int, Proc]:
    table = {}
    with os.scandir("/proc") as entries:
        for e in entries:
            if e.name.isdigit():
                info = _stat(int(e.name))
                if info is not None:
                    table[int(e.name)] = info
    return table


def _alive(table: dict[int, Proc], pid: int, start: int) -> bool:
    info = table.get(pid)
    return info is not None and info[1] == start and info[2] not in (b"Z", b"X")


class _Watch:
    """What one driver's watchdog has recorded: ``pid -> (start time, parent pid)`` of
    every process of the watched trees seen so far."""

    def __init__(self, driver: int):
        table = _table()
        self.driver = driver
        self.driver_start = table[driver][1] if driver in table else None
        self.me, self.my_start = os.getpid(), table[os.getpid()][1]
        self.roots: set[tuple[int, int]] | None = None   # None until the driver says `track`
        self.ours: dict[int, tuple[int, int]] = {}

    def driver_alive(self, table: dict[int, Proc]) -> bool:
        return self.driver_start is not None and _alive(table, self.driver, self.driver_start)

    def track(self, roots: set[tuple[int, int]]) -> None:
        """From now on watch exactly ``roots`` and their trees; of what was recorded while
        Ray started, keep only what descends from them (the driver may be dead already
        and the roots with it: their children were recorded, not found now)."""
        self.roots = roots
        keep = {p: v for p, v in self.ours.items() if (p, v[0]) in roots}
        grew = True
        while grew:
            more = {p: v for p, v in self.ours.items() if p not in keep and v[1] in keep}
            keep.update(more)
            grew = bool(more)
        self.ours = keep

    def scan(self, table: dict[int, Proc]) -> None:
        if self.roots is None:   # while Ray starts: the driver's children younger than this watchdog
            anchors = {(p, s) for p, (pp, s, _) in table.items()
                       if pp == self.driver and s >= self.my_start and p != self.me}
        else:
            anchors = self.roots
        for p, s in anchors:
            if _alive(table, p, s) and self.ours.get(p, (None,))[0] != s:
                self.ours[p] = (s, self.driver)
        children: dict[int, list[int]] = {}
        for p, (pp, _, _) in table.items():
            children.setdefault(pp, []).append(p)
        if self.roots is not None:   # the parent links are no longer needed: forget the dead
            self.ours = {p: v for p, v in self.ours.items() if _alive(table, p, v[0])}
        todo = [p for p, (s, _) in self.ours.items() if _alive(table, p, s)]
        while todo:   # a live recorded process's children are ours too (pid reuse: start times checked)
            parent = todo.pop()
            for c in children.get(parent, ()):
                if c != self.me and self.ours.get(c, (None,))[0] != table[c][1]:
                    self.ours[c] = (table[c][1], parent)
                    todo.append(c)

    def stop_all(self) -> None:
        """SIGTERM, then after GRACE_S SIGKILL, every recorded process still alive."""
        held = {}
        for pid, (start, _) in self.ours.items():
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            info = _stat(pid)   # checked after the pidfd pins the process: the pidfd is this one
            if info is None or info[1] != start or info[2] in (b"Z", b"X"):
                os.close(fd)
                continue
            held[pid] = fd
        try:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for fd in held.values():
                    try:
                        signal.pidfd_send_signal(fd, sig)
                    except OSError:
                        pass
                deadline = time.monotonic() + GRACE_S
                while held and time.monotonic() < deadline:
                    exited, _, _ = select.select(list(held.values()), [], [], deadline - time.monotonic())
                    for pid in [p for p, fd in held.items() if fd in exited]:
                        os.close(held.pop(pid))
        finally:
            for fd in held.values():
                os.close(fd)


def watch(driver: int, control: int = 0) -> None:
    """The watchdog's loop: record, and stop what was recorded once the driver is gone
    (EOF on ``control``, or its pid no longer names it) or says ``done``."""
    w = _Watch(driver)
    buf, listening = b"", True
    while listening:
        table = _table()
        w.scan(table)
        driver_alive = w.driver_alive(table)
        wait = (SCAN_S if w.roots is not None else STARTING_SCAN_S) if driver_alive else 0
        if not select.select([control], [], [], wait)[0]:
            listening = driver_alive
            continue
        data = os.read(control, 4096)   # a dead driver's last words are read before stopping
        buf += data
        *lines, buf = buf.split(b"\n")
        listening = bool(data)
        for words in (line.split() for line in lines):
            if words[:1] == [b"track"]:
                w.track({(int(p), int(t)) for p, t in (word.split(b":") for word in words[1:])})
            elif words == [b"done"]:
                listening = False
    w.scan(_table())   # children started since the last scan, of recorded processes still alive
    w.stop_all()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]))
