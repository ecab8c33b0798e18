"""What a detected span becomes: a typed placeholder, a pseudonym, or nothing.

Pseudonyms come from a keyed hash (HMAC-SHA256) of the value, its type and – with the
default ``document`` scope – the document id, so:

* within a document the same value always maps to the same fake value;
* a re-run with the same key produces the same output (no randomness);
* across documents the same address maps to different fakes (no cross-document
  linkage) unless the scope is ``corpus``;
* without the key a fake cannot be tied back to a guessed original.

Every fake keeps the shape of its type but is drawn from a space that belongs to no one
and that the detectors never report, so scrubbing scrubbed text changes nothing:

=============  =================================================================
type           fake
=============  =================================================================
email          local part with the original's shape, at example.com/.net/.org
ip             IPv4 from the documentation nets (192.0.2/24, 198.51.100/24,
               203.0.113/24); IPv6 from 2001:db8::/32
phone          a NANP number with an N9X area code (reserved for the plan's
               expansion: nobody's number); a NANP original keeps its layout,
               others read ``+1 N9X NXX XXXX``
card           same network digit, length and grouping; the Luhn check fails
iban           same country, length and grouping; the mod-97 check fails
ssn            area 000 (never issued), original layout
api_key, jwt,  token prefix and shape kept, ending in ``EXAMPLE`` (AWS's marker for
private_key,   documentation keys; the detectors skip values carrying it)
password
=============  =================================================================
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import logging
import string
from typing import Mapping

from stages.pii.detect import DOC_NET_V6, DOC_NETS_V4, EXAMPLE_MARK, Span, iban_mod97, luhn_check_digit

logger = logging.getLogger(__name__)

POLICIES: tuple[str, ...] = ("placeholder", "pseudonym", "remove")

#: Default placeholder text per type.
DEFAULT_PLACEHOLDERS: dict[str, str] = {
    "email": "<EMAIL>", "ip": "<IP_ADDRESS>", "phone": "<PHONE>", "card": "<CARD_NUMBER>",
    "iban": "<IBAN>", "ssn": "<SSN>", "api_key": "<API_KEY>", "private_key": "<PRIVATE_KEY>",
    "jwt": "<JWT>", "password": "<PASSWORD>",
}

_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_DIGITS = string.digits
_B64 = string.ascii_letters + string.digits + "+/"
_B64URL = string.ascii_letters + string.digits + "-_"
_EMAIL_DOMAINS = ("example.com", "example.net", "example.org")


class _Stream:
    """Deterministic pseudo-random choices from an HMAC digest (SHA-256 in counter
    mode), so a fake of any length is a pure function of (key, scope, type, value)."""

    def __init__(self, seed: bytes) -> None:
        self._seed = seed
        self._buf = b""
        self._counter = 0

    def _byte(self) -> int:
        if not self._buf:
            self._buf = hashlib.sha256(self._seed + self._counter.to_bytes(4, "big")).digest()
            self._counter += 1
        b, self._buf = self._buf[0], self._buf[1:]
        return b

    def below(self, n: int) -> int:
        """Uniform in ``range(n)`` (rejection sampling, n <= 256)."""
        limit = 256 - 256 % n
        while True:
            b = self._byte()
            if b < limit:
                return b % n

    def choice(self, alphabet: str) -> str:
        return alphabet[self.below(len(alphabet))]

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.choice(alphabet) for _ in range(n))


def _shape(value: str, rnd: _Stream) -> str:
    """Same length and character classes: digits to digits, letters to letters of
    the same case, everything else kept."""
    out = []
    for ch in value:
        if "0" <= ch <= "9":
            out.append(rnd.choice(_DIGITS))
        elif "a" <= ch <= "z":
            out.append(rnd.choice(_LOWER))
        elif "A" <= ch <= "Z":
            out.append(rnd.choice(_UPPER))
        else:
            out.append(ch)
    return "".join(out)


def _fill_digits(template: str, digits: str) -> str:
    """Write ``digits`` into the digit positions of ``template`` (left to right)."""
    it = iter(digits)
    return "".join(next(it) if ch.isdigit() else ch for ch in template)


def _mark(value: str, keep: int = 0) -> str:
    """End ``value`` with the EXAMPLE marker, keeping its first ``keep`` characters
    and its length where it is long enough."""
    body = value[keep:]
    if len(body) >= len(EXAMPLE_MARK) + 3:
        return value[:keep] + body[: len(body) - len(EXAMPLE_MARK)] + EXAMPLE_MARK
    return value + EXAMPLE_MARK


def _canonical(span: Span, value: str) -> str:
    t = span.type
    if t == "email":
        return value.lower()
    if t == "ip":
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            return value
    if t == "phone":
        return "".join(c for c in value.replace("(0)", "") if c.isdigit())
    if t in ("card", "iban", "ssn"):
        return "".join(c for c in value if c.isalnum()).upper()
    return value


class Replacer:
    """Applies the per-type policies to detected spans.

    ``policies`` maps every enabled type to one of :data:`POLICIES`;
    ``placeholders`` gives the text for the ``placeholder`` policy.
    """

    def __init__(self, *, policies: Mapping[str, str], placeholders: Mapping[str, str],
                 key: str, scope: str = "document") -> None:
        self.policies = dict(policies)
        self.placeholders = {**DEFAULT_PLACEHOLDERS, **placeholders}
        self._key = key.encode("utf-8")
        self.scope = scope

    def apply(self, text: str, spans: list[Span], doc_id: str = "") -> str:
        """``text`` with every span replaced; bytes outside the spans untouched."""
        if not spans:
            return text
        out: list[str] = []
        last = 0
        cache: dict[tuple[str, str], str] = {}
        for sp in spans:
            out.append(text[last:sp.start])
            out.append(self.replacement(sp, text[sp.start:sp.end], doc_id, cache))
            last = sp.end
        out.append(text[last:])
        return "".join(out)

    def replacement(self, span: Span, value: str, doc_id: str = "",
                    cache: dict[tuple[str, str], str] | None = None) -> str:
        policy = self.policies.get(span.type, "placeholder")
        if policy == "remove":
            return ""
        if policy == "placeholder":
            return self.placeholders[span.type]
        canon = _canonical(span, value)
        ck = (span.type, canon)
        if cache is not None and ck in cache:
            return _restyle(span, value, cache[ck])
        scope = doc_id if self.scope == "document" else ""
        msg = "\x1f".join((scope, span.type, canon)).encode("utf-8", "surrogatepass")
        rnd = _Stream(hmac.new(self._key, msg, hashlib.sha256).digest())
        fake = getattr(self, "_fake_" + span.type)(span, value, rnd)
        if cache is not None:
            cache[ck] = fake
        return fake

    # one fake per type -------------------------------------------------------------
    def _fake_email(self, span: Span, value: str, rnd: _Stream) -> str:
        local = value.rsplit("@", 1)[0]
        return _shape(local, rnd) + "@" + _EMAIL_DOMAINS[rnd.below(len(_EMAIL_DOMAINS))]

    def _fake_ip(self, span: Span, value: str, rnd: _Stream) -> str:
        if span.info == "6":
            base = int(DOC_NET_V6.network_address)
            host = int.from_bytes(bytes(rnd.below(256) for _ in range(12)), "big")
            return str(ipaddress.IPv6Address(base | host))
        net = DOC_NETS_V4[rnd.below(len(DOC_NETS_V4))]
        return str(net.network_address + 1 + rnd.below(254))

    def _fake_phone(self, span: Span, value: str, rnd: _Stream) -> str:
        area = rnd.choice("23456789") + "9" + rnd.choice(_DIGITS)
        while True:
            exchange = rnd.choice("23456789") + rnd.chars(_DIGITS, 2)
            if exchange[1:] != "11":
                break
        line = rnd.chars(_DIGITS, 4)
        fake10 = area + exchange + line
        ndigits = sum(c.isdigit() for c in value)
        if span.info in ("nanp", "intl:1") and ndigits in (10, 11):
            return _fill_digits(value, ("1" + fake10)[-ndigits:])
        sep = next((c for c in value if c in " -."), " ")
        return f"+1{sep}{area}{sep}{exchange}{sep}{line}"

    def _fake_card(self, span: Span, value: str, rnd: _Stream) -> str:
        digits = [c for c in value if c.isdigit()]
        payload = digits[0] + rnd.chars(_DIGITS, len(digits) - 2)
        good = int(luhn_check_digit(payload))
        bad = (good + 1 + rnd.below(9)) % 10
        return _fill_digits(value, payload + str(bad))

    def _fake_iban(self, span: Span, value: str, rnd: _Stream) -> str:
        compact = "".join(c for c in value if c.isalnum())
        bban = _shape(compact[4:], rnd)
        good = 98 - iban_mod97(compact[:2] + "00" + bban)
        check = (good + 1 + rnd.below(90)) % 100
        if (check - good) % 97 == 0:
            check = (good + 1) % 100
        fake = compact[:2] + f"{check:02d}" + bban
        it = iter(fake)
        return "".join(next(it) if c.isalnum() else c for c in value)

    def _fake_ssn(self, span: Span, value: str, rnd: _Stream) -> str:
        group = f"{1 + rnd.below(99):02d}"
        serial = f"{1 + (rnd.below(100) * 100 + rnd.below(100)) % 9999:04d}"
        return _fill_digits(value, "000" + group + serial)

    def _fake_api_key(self, span: Span, value: str, rnd: _Stream) -> str:
        keep = len(span.info)
        return _mark(value[:keep] + _shape(value[keep:], rnd), keep)

    def _fake_password(self, span: Span, value: str, rnd: _Stream) -> str:
        return _mark(_shape(value, rnd))

    def _fake_jwt(self, span: Span, value: str, rnd: _Stream) -> str:
        header, _, rest = value.partition(".")
        claims = {"sub": rnd.chars(_LOWER + _DIGITS, 12)}
        payload = base64.urlsafe_b64encode(json.dumps(claims, separators=(",", ":")).encode()).decode().rstrip("=")
        sig_len = max(len(rest.partition(".")[2]), 16)
        return f"{header}.{payload}.{_mark(rnd.chars(_B64URL, sig_len))}"

    def _fake_private_key(self, span: Span, value: str, rnd: _Stream) -> str:
        label = span.info or "PRIVATE KEY"
        lines = [EXAMPLE_MARK + rnd.chars(_B64, 64 - len(EXAMPLE_MARK)), rnd.chars(_B64, 64), rnd.chars(_B64, 40) + "=="]
        body = "\n".join(lines)
        return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def _restyle(span: Span, value: str, fake: str) -> str:
    """A repeat of a value already seen in the document, maybe written differently
    (``Bob@X.com`` after ``bob@x.com``): same fake, in this occurrence's layout
    where the layout is only separators."""
    if span.type in ("card", "ssn") and sum(c.isdigit() for c in value) == sum(c.isdigit() for c in fake):
        return _fill_digits(value, "".join(c for c in fake if c.isdigit()))
    if span.type == "iban":
        alnum = [c for c in fake if c.isalnum()]
        if len(alnum) == sum(c.isalnum() for c in value):
            it = iter(alnum)
            return "".join(next(it) if c.isalnum() else c for c in value)
    return fake

