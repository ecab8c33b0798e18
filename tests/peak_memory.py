"""Peak memory of a block of a test, measured honestly.

``ru_maxrss`` is a high-water mark for the whole life of a process (and survives
``exec``): a block that stays under what an earlier test reached shows no growth at all,
so a memory bound checked that way passes whether or not the code is bounded. Linux lets
a process reset its own mark (``/proc/self/clear_refs``, ``5``): :func:`rss_mark` does
and returns where memory stands; :func:`maxrss_mb` minus that is the block's own peak."""

from __future__ import annotations


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":")) / 1024


def rss_mark() -> float:
    """Reset this process's peak-memory mark; its resident MB now."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _status_mb("VmRSS")


def maxrss_mb() -> float:
    """This process's peak resident MB since the last :func:`rss_mark`."""
    return _status_mb("VmHWM")
