"""The project's error types.

User mistakes (a bad job spec, a missing file, an impossible stage chain) raise
:class:`SpecError`, a ``ValueError``; failures while a job runs that the user must act
on (a corrupt file under ``on_error: fail``, a broken accounting invariant) raise
:class:`JobError`; another run in the way (a held lock, an output written by another
job) raises :class:`ConflictError`. Bad *records* are never exceptions: they become
rejects. :func:`user_error` finds the error a user must act on inside Ray's wrappers;
:func:`describe_error` says it in one line.
"""

from __future__ import annotations

import errno


class DatapipeError(Exception):
    """Base class for every error datapipe raises on purpose."""


class SpecError(DatapipeError, ValueError):
    """A job spec, mix or stage config is wrong; the message says where and how to fix it."""


class JobError(DatapipeError, RuntimeError):
    """A running job cannot go on (corrupt input under ``on_error: fail``, lost documents)."""


class ConflictError(DatapipeError, RuntimeError):
    """The output is another run's: its lock is held by a live run, or it holds what a
    different job wrote. Nothing is wrong with the spec; wait, use ``--force``, or choose
    another output, as the message says."""


class CorruptInputError(JobError):
    """A whole input file is unreadable; names the file and what is wrong with it."""

    def __init__(self, path: str, reason: str, detail: str = "") -> None:
        self.path = path
        self.reason = reason
        self.detail = " ".join(str(detail).split()) if "\n" in str(detail) else detail   # one line
        msg = f"{path}: {reason}"
        if self.detail:
            msg += f" ({self.detail})"
        super().__init__(msg)

    def __reduce__(self):  # picklable across Ray workers
        return (type(self), (self.path, self.reason, self.detail))


#: errors of a full device: nothing a retry or a resume can fix until space is made
FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def user_error(exc: BaseException) -> BaseException | None:
    """The error a user must act on inside ``exc``: a datapipe error, else an
    ``OSError`` (full disk, permission denied, object-store failure), unwrapped from Ray's
    task errors and Ray Data's user-code wrappers (``.cause``, ``__cause__``,
    ``__context__``, exception arguments); None for a bug (which keeps its traceback)."""
    seen: set[int] = set()
    stack = [exc]
    found: BaseException | None = None
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, DatapipeError):
            return e
        cause = getattr(e, "cause", None)   # Ray's task errors carry the original here
        if isinstance(cause, BaseException):
            stack.append(cause)
            continue
        if isinstance(e, OSError) and found is None:
            found = e
        stack.extend([e.__cause__, e.__context__])
        stack.extend(a for a in getattr(e, "args", ()) if isinstance(a, BaseException))
    return found


def describe_error(exc: BaseException) -> str:
    """``<path>: <cause>`` for an OS error, the message for a datapipe error; one line."""
    if isinstance(exc, OSError) and not isinstance(exc, DatapipeError):
        if exc.filename is not None:
            cause = exc.strerror or type(exc).__name__
            return f"{exc.filename}: {cause}"
        msg = str(exc) or type(exc).__name__
    else:
        msg = str(exc)
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    return lines[0] if len(lines) == 1 else msg
