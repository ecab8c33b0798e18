"""The project's error types.

User mistakes (a bad job spec, a missing file, an impossible stage chain) raise
:class:`SpecError`, a ``ValueError``; failures while a job runs that the user must act
on (a corrupt file under ``on_error: fail``, a broken accounting invariant) raise
:class:`JobError`. Bad *records* are never exceptions: they become rejects.
"""

from __future__ import annotations


class DatapipeError(Exception):
    """Base class for every error datapipe raises on purpose."""


class SpecError(DatapipeError, ValueError):
    """A job spec, mix or stage config is wrong; the message says where and how to fix it."""


class JobError(DatapipeError, RuntimeError):
    """A running job cannot go on (corrupt input under ``on_error: fail``, lost documents)."""


class CorruptInputError(JobError):
    """A whole input file is unreadable; names the file and what is wrong with it."""

    def __init__(self, path: str, reason: str, detail: str = "") -> None:
        self.path = path
        self.reason = reason
        self.detail = detail
        msg = f"{path}: {reason}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)

    def __reduce__(self):  # picklable across Ray workers
        return (type(self), (self.path, self.reason, self.detail))
