"""Numbering-plan checks of phone candidates, from Google's libphonenumber metadata.

The detectors in :mod:`stages.pii.detect` propose a number from its shape and the
words around it; where those words are weak ("reach the desk at ...", "... (Office)")
or the grouping is the plan's own and not one our layout rules know
(``+63 1800 3 287 7645``), the ``phonenumbers`` library (the Python port of
libphonenumber, pinned in ``pyproject.toml``) decides: the country code must exist and
the national number must fit one of that country's number ranges.

A national number (no ``+``) carries no country, so it is tried against the plans of
:data:`PHONE_REGIONS` (the 30 most populous countries' plans and the rest of the EU's),
and passes when any of them accepts it. That is loose on purpose – these plans cover
most of what a ten-digit string can be – and it is used only where a word next to the
number already says "phone"; structure, not this check, keeps tables out.

Only reached for candidates the cheap rules leave undecided, so the library's cost
(about 20 microseconds per parse) stays off the batch path's common case.
"""

from __future__ import annotations

import phonenumbers

from stages.pii import _tables as T


def _intl(number: str) -> str | None:
    """``number`` in ``+CC...`` form when it is written internationally, else None."""
    core = number.strip().lstrip("(").lstrip()
    if core.startswith("+"):
        return core
    if core.startswith("00") and not core.startswith("000"):
        return "+" + core[2:]
    return None


def plan_valid(number: str) -> bool:
    """True when a numbering plan accepts ``number`` as written (international: its
    country's plan; national: any plan of :data:`PHONE_REGIONS`)."""
    intl = _intl(number)
    try:
        if intl is not None:
            return phonenumbers.is_valid_number(phonenumbers.parse(intl, None))
        for region in T.PHONE_REGIONS:
            try:
                num = phonenumbers.parse(number, region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number_for_region(num, region):
                return True
    except phonenumbers.NumberParseException:
        return False
    return False


def country_code(number: str) -> str:
    """The country calling code of an internationally written, valid number."""
    intl = _intl(number)
    return str(phonenumbers.parse(intl, None).country_code) if intl else ""
