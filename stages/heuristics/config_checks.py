"""Config checks shared by the heuristic rule sets (C4, FineWeb, Gopher quality and
repetition): one wording for each kind of mistake, whichever stage it is made in."""

from __future__ import annotations

from typing import Any, Iterable

from datapipe.errors import SpecError

#: what a rule set's ``reference`` may name
REFERENCES = ("paper", "datatrove")


def check_reference(stage: str, value: str) -> None:
    if value not in REFERENCES:
        raise SpecError(f"{stage}: reference must be one of {list(REFERENCES)}, got {value!r} "
                        "(paper: the published rules; datatrove: datatrove's implementation decisions)")


def check_fractions(stage: str, cfg: Any, names: Iterable[str]) -> None:
    """Each of ``cfg``'s fields ``names`` is a fraction in [0, 1] or null (rule off)."""
    for name in names:
        v = getattr(cfg, name)
        if v is not None and not 0.0 <= v <= 1.0:
            raise SpecError(f"{stage}: {name} must be a fraction between 0 and 1 (or null to disable), got {v}")


def check_non_negative(stage: str, cfg: Any, names: Iterable[str]) -> None:
    """Each of ``cfg``'s fields ``names`` is >= 0 or null (rule off)."""
    for name in names:
        v = getattr(cfg, name)
        if v is not None and v < 0:
            raise SpecError(f"{stage}: {name} must be >= 0 (or null to disable), got {v}")


def check_single_chars(stage: str, name: str, chars: tuple[str, ...], *, non_empty: bool = True) -> None:
    """``chars`` (a list of marks such as terminal punctuation) holds single characters."""
    if (non_empty and not chars) or any(len(c) != 1 for c in chars):
        what = "a non-empty list of single characters" if non_empty else "single characters"
        raise SpecError(f"{stage}: {name} must be {what}, got {list(chars)}")
