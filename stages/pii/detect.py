"""PII detectors: a pattern proposes candidates, a validator keeps the real ones.

A bare regex is not enough for pretraining text: ``1.2.3.4`` is a version as often as
an address, a 16-digit run is usually an id, and a dated ``07.04.2023 15`` looks like a
phone number. Every detector here therefore pairs a candidate pattern with the check
the format itself offers (Luhn for cards, mod-97 for IBANs, number-plan rules for
phones, ``ipaddress`` for IPs, JSON for JWT headers) and with a look at the words just
before the candidate (``version``, ``ISBN``, ``order #`` ...).

Contract of :meth:`Detector.find`: spans are half-open ``[start, end)`` offsets into
the ``str`` (code points), sorted, never overlapping; where two detectors claim the
same characters the more specific type wins (a private key block over the JWT or
token inside it, an IBAN over the card-like digits inside it).

Values this module's own pseudonyms produce are never detected (reserved e-mail
domains, documentation IP ranges, NANP area codes reserved for expansion (N9X), Luhn- and
mod-97-failing numbers, SSN area 000, secrets carrying the ``EXAMPLE`` marker), which
is what makes scrubbing idempotent under every policy.

Detectors are grouped into *families* that share a cheap necessary condition, the
gate (:data:`GATES`, per detector ``Detector.gates``): a document on which a family's
gate does not match cannot contain a detection of that family, so the stage evaluates
the gates over a whole Arrow batch with RE2 and runs the Python detectors only where
a gate fired. The Python patterns start with a literal or a character class (boundary
checks come after the first character or in code) so that ``re`` can skip ahead
instead of trying every position.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import logging
import math
import re
from collections import Counter
from typing import Iterable, Iterator, NamedTuple

from stages.pii import _tables as T
from stages.pii import phones as P
from stages.pii import secrets as _secrets

logger = logging.getLogger(__name__)

#: Every type the stage knows, in the order of the ``pii_counts`` struct fields.
PII_TYPES: tuple[str, ...] = (
    "email", "ip", "phone", "card", "iban", "ssn", "api_key", "private_key", "jwt", "password",
)

#: Overlap resolution: lower wins.
_PRIORITY = {
    "private_key": 0, "jwt": 1, "api_key": 2, "password": 3, "email": 4, "iban": 5,
    "card": 6, "ssn": 7, "phone": 8, "ip": 9,
}

#: Marker carried by every secret pseudonym (AWS's own convention for documentation
#: keys, ``AKIAIOSFODNN7EXAMPLE``); a secret containing it is never reported.
EXAMPLE_MARK = "EXAMPLE"


class Span(NamedTuple):
    """One detection: ``text[start:end]`` is PII of ``type``. ``info`` carries what
    the pseudonymiser needs to keep the value's shape (a token's fixed prefix, a
    phone's numbering plan)."""

    start: int
    end: int
    type: str
    info: str = ""


# -- gates ------------------------------------------------------------------------
# Each gate is a necessary condition for its family (written for both Python ``re``
# and RE2, which pyarrow uses): if it does not match, the family finds nothing.

#: words after which a number is a phone in any grouping ("Tel. 467 3395"), and the
#: short words allowed between them and the number ("call me on", "number is"); plain
#: letters, ``[..]`` classes and spaces only, so they can be written backwards too
_PHONE_WORDS = (
    "tel", "tele", "phone", "phones", "telephone", "mobile", "mob", "cell", "cellphone", "fax", "call", "calling",
    "ring", "dial", "reach", "whatsapp", "sms", "hotline", "helpline", "t[eé]l[eé]phone", "t[eé]l", "telefon",
    "telefono", "tel[eé]fono", "telefonnummer", "handy", "mobil", "portable", "m[oó]vil", "cellulare",
    "kom[oó]rka", "tlf", "ph", "contact number", "phone number", "mobile number", "cell number", "fax number",
    "my number", "his number", "her number", "our number", "their number", "your number",
)
_GAP_WORDS = ("no", "nr", "num", "number", "me", "us", "him", "her", "them", "on", "at", "is", "to", "under",
              "unter", "au", "al", "sur")
#: phone words of languages not written in Latin letters (no ``\b`` around them: RE2's
#: and ``re.ASCII``'s word boundaries know only ASCII letters), and Latin ones of the
#: populous plans' languages (Indonesian ``telp``, Swahili ``simu``)
_PHONE_WORDS_OTHER = (
    "[Тт]елефон", "[Тт]ел", "电话", "電話", "手机", "携帯", "전화", "휴대폰", "फ़ोन", "फोन", "ফোন", "هاتف", "تلفن",
    "تلفن همراه", "موبايل", "โทร", "โทรศัพท์", "ဖုန်း", "ስልክ", "[Đđ]i[eệ]n tho[aạ]i",
)
_PHONE_WORDS_LATIN_EXTRA = ("telp", "simu", "nomor", "no telp", "sdt")
#: weaker words: a number right after them is a phone only when the numbering-plan
#: metadata (``phonenumbers``) calls it a valid number ("reach the desk at ...",
#: "registered under ...", "text ... for details")
_WEAK_PHONE_WORDS = ("at", "under", "unter", "text", "txt", "registered", "contact", "bookings", "reservations",
                     "enquiries", "inquiries", "office", "desk", "landline")
#: kind words written after a number ("... mobile", "... -Fax", "... / cell", "(home)"):
#: the strong ones say "phone" as a phone word before it does; the weak ones only in a
#: tight label form ("(home)", "-Work", "/office", "[work]"), otherwise when a numbering
#: plan accepts the number
_AFTER_STRONG_WORDS = (
    "fax", "mobile", "mob", "cell", "cellphone", "cell phone", "mobile phone", "tel", "tele", "telephone", "phone",
    "whatsapp", "landline", "hotline", "helpline", "pager", "handy", "mobil", "portable", "telefon",
    "t[eé]l[eé]phone", "tel[eé]fono", "m[oó]vil", "celular", "cellulare", "fixe", "home phone", "work phone",
    "office phone", "business phone", "direct line", "direct dial", "fax number", "phone number", "mobile number",
)
_AFTER_WEAK_WORDS = ("office", "home", "work", "main", "direct", "business", "private", "voice", "toll-free",
                     "toll free", "desk", "switchboard", "reception")


def _alternation(words: tuple[str, ...], backwards: bool = False) -> str:
    out = []
    for w in words:
        tokens = re.findall(r"\[[^\]]*\]|.", w)
        out.append("".join(reversed(tokens) if backwards else tokens).replace(" ", r"[ \t]+"))
    return "|".join(sorted(out, key=len, reverse=True))


_AFTER_LABEL_RE = re.compile(
    r"(?P<sep>[ \t]?[-\u2013\u2014/(\[,][ \t]?|[ \t])(?i:(?P<strong>" + _alternation(_AFTER_STRONG_WORDS) + r")|"
    r"(?P<weak>" + _alternation(_AFTER_WEAK_WORDS) + r"))\.?(?![A-Za-z0-9]|-[A-Za-z])", re.ASCII)
#: the marks that start a phone extension ("x769", "ext. 12", "Ext: 4021", "poste 12")
_EXT_MARKS = r"x|ext|extn|extension|poste"
#: gaps between a phone word and a number: a few marks, and at most one line break
#: ("Phone:\n467 3395"; checked in code, the gate only bounds the length)
_LEAD_GAP = r"[^0-9A-Za-z]{0,13}"

GATES: dict[str, str] = {
    "email": r"[A-Za-z0-9._%+\-]@[A-Za-z0-9]",
    "url_password": r"://[^\s/?#\"'<>]*:[^\s/?#\"'<>]*@",
    "conn_password": r"[Pp](?:assword|ASSWORD|wd|WD)[ \t]*=",
    "ipv4": r"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]",
    # a public IPv6 starts with a 4-digit group in 2000::/3, or maps an IPv4 (ffff:)
    # (or NAT64's 64:ff9b::/96, which carries an IPv4 one)
    "ipv6": r"[23][0-9A-Fa-f]{3}:[0-9A-Fa-f]{0,4}:|[fF]{4}:[0-9A-Fa-f]|64:[fF]{2}9[bB]:",
    "numeric": r"[0-9](?:[ ./()\-]{0,5}[0-9]){7}",
    "iban": r"[A-Z]{2}[0-9]{2}[ \-]?[A-Z0-9]{4}|[a-z]{2}[0-9]{2}[ \-]?[a-z0-9]{4}",
    # a phone word right before a number: short local numbers ("Tel. 467 3395") have
    # fewer digits than the numeric gate asks for
    "phone_cue": r"(?i:\b(?:" + _alternation(_PHONE_WORDS + _PHONE_WORDS_LATIN_EXTRA) + r")\b" + _LEAD_GAP + r"(?:(?:"
                 + _alternation(_GAP_WORDS) + r")\b" + _LEAD_GAP + r"){0,3}[0-9])|\b[TMF][:.]" + _LEAD_GAP + r"[0-9]"
                 r"|(?:" + _alternation(_PHONE_WORDS_OTHER) + r")" + _LEAD_GAP + r"(?:(?i:" + _alternation(_GAP_WORDS)
                 + r")\b" + _LEAD_GAP + r"){0,3}[0-9]"
                 # a weak word and a number-shaped run, or a number and a label or an extension after it
                 r"|(?i:\b(?:" + _alternation(_WEAK_PHONE_WORDS) + r")\b)[^0-9A-Za-z\n]{1,6}[+(]?[0-9][0-9 ()./\-]{5,}[0-9]"
                 r"|[0-9][0-9 ()./\-]{5,}[0-9][^0-9A-Za-z\n]{0,3}(?i:" + _alternation(_AFTER_STRONG_WORDS + _AFTER_WEAK_WORDS)
                 + r")\b|[0-9][0-9 ()./\-]{5,}[0-9],?[ ]?(?i:" + _EXT_MARKS + r")[.:]{0,2}[ ]?[0-9]",
    "token": (
        r"AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA|gh[pousr]_|github_pat_"
        r"|xox[abposre]-|[rs]k_(?:live|test)_|AIza|sk-|glpat-|npm_|hf_|SG\.|hooks\.slack\.com"
        r"|(?i:aws_?secret)"
    ),
    "jwt": r"eyJ[A-Za-z0-9_\-]{2,}\.",
    "private_key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY",
    "secret_assign": _secrets.ASSIGN_GATE,  # values assigned to secret-looking names (secrets.py)
}

#: The IPv6 gate when private addresses are scrubbed too: any ``::`` or full form.
IPV6_ANY_GATE = r"::|(?:[0-9A-Fa-f]{1,4}:){6}"

#: Which PII types each family can produce.
FAMILY_TYPES: dict[str, tuple[str, ...]] = {
    "email": ("email",),
    "url_password": ("password",),
    "conn_password": ("password",),
    "ipv4": ("ip",),
    "ipv6": ("ip",),
    "numeric": ("phone", "card", "ssn"),
    "phone_cue": ("phone",),
    "iban": ("iban",),
    "token": ("api_key",),
    "jwt": ("jwt",),
    "private_key": ("private_key",),
    "secret_assign": ("api_key", "password"),
}

_A = re.ASCII

# -- e-mail -----------------------------------------------------------------------
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-'")
_DOMAIN_RE = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+(?:[A-Za-z]{2,24}|(?i:xn--)[A-Za-z0-9\-]{2,59})"
    r"(?![A-Za-z0-9\-])", _A)
_SCP_AFTER_RE = re.compile(r":[A-Za-z0-9_~/.\-]", _A)

# -- IP addresses -----------------------------------------------------------------
_IPV4_RE = re.compile(r"[0-9](?<![0-9A-Za-z._][0-9])[0-9]{0,2}\.(?:[0-9]{1,3}\.){2}[0-9]{1,3}(?![0-9A-Za-z_]|\.[0-9])", _A)
_IPV6_SEED_RE = re.compile(r":[0-9A-Fa-f]{0,4}:", _A)
_HEX_COLON = frozenset("0123456789abcdefABCDEF:")
# starts after a non-address character, or right after a label's colon ("ip:2a02:...",
# "IPv6:2a02:...": a word with a letter no hex group has); ends before one, or before a
# colon that ends a clause ("client 2a02:c7f::1: connected")
_IPV6_RE = re.compile(
    r"(?:(?<![0-9A-Za-z:._\-])|(?<=[G-Zg-z]:)|(?<=[G-Zg-z][0-9]:))"
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}(?!\.[0-9])|[0-9]{1,3}(?:\.[0-9]{1,3}){3})?"
    r"(?:%[0-9A-Za-z.]+)?(?![0-9A-Za-z_\-]|:[0-9A-Za-z:])", _A)
_VERSION_CUE_RE = re.compile(
    r"(?i)\b(?:v|ver|version|versions|release|released|releases|build|builds|firmware|kernel|rev|"
    r"revision|sdk|driver|drivers|patch|patched|upgrade|upgraded|upgrading|update|updated|updating|"
    r"install|installed|installing|package|library|python|java|node|php|ruby|perl|android|ios|"
    r"windows|chrome|firefox|edge|tag|tagged|bump|bumped|section|sections|chapter|clause|article|"
    r"paragraph|rule|figure|fig|table|step|oid|isbn|changelog|ec|ec_number)\b[^.\n]{0,12}$|(?:==|>=|<=|~=|@)[ ]?$", _A)
_PACKAGE_DASH_RE = re.compile(r"[A-Za-z][\-_]$", _A)  # "openssl-1.0.2.17"
_IP_CUE_RE = re.compile(
    r"(?i)\b(?:ip|ips|ipv4|address|addresses|addr|server|servers|host|hosts|hostname|dns|ping|gateway|"
    r"proxy|ssh|connect|connected|connecting|connection|resolve|resolves|resolved|router|client|"
    r"nameserver|resolver|subnet|route|traceroute|firewall|blocked|ban|banned|whitelist|blacklist|"
    r"allowlist|denylist|inet|listen|bind|visitor|logged|login|origin|source|remote|peer|node)\b", _A)
_GLOBAL_V6 = ipaddress.ip_network("2000::/3")
#: IPv6 prefixes that carry an IPv4 address in their last 32 bits (RFC 6052 NAT64,
#: RFC 6145 IPv4-translated): such an address is public when the IPv4 one is
_V4_EMBEDDING_V6 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::ffff:0:0:0/96"))
_SHARED_V4 = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL_V6 = ipaddress.ip_network("fc00::/7")
DOC_NETS_V4 = tuple(ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
DOC_NET_V6 = ipaddress.ip_network("2001:db8::/32")

# -- digits: phones, cards, SSNs, IBANs --------------------------------------------
# A run of digit groups; the validators decide which sub-run (if any) is a phone.
_PHONE_RUN_RE = re.compile(
    r"(?<![0-9A-Za-z_+\-./])(?<![0-9]:)(?=\(?[+(]?[0-9][0-9 ./()\-]{7})"
    r"(?:\(?\+[ ]?|(?<![0-9])00[ ]?(?=[1-9]))?"
    r"\(?[0-9]++\)?"
    r"(?:(?:[ ]?[.\-/][ ]?|[ ]{1,2}|(?<=\))|[ ]?(?=\())\(?[0-9]++\)?){0,7}+"
    r"(?!(?!x[0-9])[0-9A-Za-z_]|[.\-/][0-9A-Za-z])", _A)
# where phones, cards and SSNs can be: 8 digits with short gaps, plus the digit-ish tail
_CLUSTER_RE = re.compile(r"[0-9](?:[ ./()\-]{0,5}[0-9]){7}[0-9 ./()\-]*", _A)
_PHONE_SEED_RE = re.compile(r"[+(0-9][0-9 ./()\-]{7}", _A)
_GROUP_RE = re.compile(r"\(?[0-9]+\)?", _A)
_PHONE_CUE_RE = re.compile(
    r"(?i)(?:\b(?:tel|tele|phone|phones|telephone|telephones|mobile|mob|cell|cellphone|fax|call|"
    r"calls|calling|contact|whatsapp|sms|ring|dial|hotline|helpline|tel\.?no|t[eé]l|"
    r"llam[aeo]n?|llamar|ll[aá]menos|llamada|m[oó]vil|appel(?:ez|er)?|appelez-nous|joindre|anrufen|"
    r"erreichbar|chiama(?:re|te)?|cellulare|zadzwo[nń]|kom[oó]rka|reach|reached|reachable|"
    r"(?:my|his|her|our|their|your)[ \t]+number|"
    r"t[eé]l[eé]phone|telefon|telefono|tel[eé]fono|telefonnummer|handy|mobil|portable|ph|tlf|ruf|rufnummer)\b"
    r"[^\n]{0,24}|(?-i:(?<![A-Za-z0-9])[TMPF][:.])[ \t\xa0]*|(?:" + _alternation(_PHONE_WORDS_OTHER) + r")[^\n]{0,24})$", _A)
_NEG_CUE_RE = re.compile(
    r"(?i)(?:\b(?:isbn|isbn-1[03]|issn|doi|serial|s/n|part|p/n|model|sku|order|orders|invoice|"
    r"reference|ticket|case|tracking|patent|item|article|product|lot|batch|version|"
    r"build|id|ids|account|routing|iban|bic|swift|vat|tax|ein|ssn|zip|postcode|"
    r"code|pin|otp|receipt|transaction|txn|confirmation|booking|reservation|isin|cusip|upc|ean|gtin|"
    r"asin|imei|mac|page|pages|volume|chapter|issue|issues|pr|commit|hash|checksum|seed|"
    r"population|total|sum|kg|km|km2|mi|ft|lbs|usd|eur|gbp|jpy|rs|inr|price|cost|costs)\b"
    r"[ \t:#№()\-]{0,3}"   # a word right before, no sentence end in between ("... the case. 020 ...")
    r"|\b(?:no|nr|num|inv|ref|pat|art|ver|rev|sn|pn|acct|pp|vol|pop)\b\.?[ \t:#№]{0,3}"  # abbreviations
    r"|[#№$€£¥=+*×÷^][^A-Za-z0-9\n]{0,3}|\d[ ]?[x×*/+\-][ ]?)$", _A)
_SSN_RE = re.compile(r"([0-9](?<![0-9A-Za-z_\-./][0-9])[0-9]{2})([ \-]?)([0-9]{2})\2([0-9]{4})(?![0-9A-Za-z_]|[\-./][0-9])", _A)
_SSN_CUE_RE = re.compile(r"(?i)(?:\bssn|\bss#|\bsocial[ \-]security(?:[ \-]number|[ \-]no\.?|[ \-]#)?|\bsoc\.?[ ]?sec\.?)[^\n]{0,20}$", _A)
_SSN_DENY = frozenset({"078051120", "219099999", "123456789"})
_CARD_RE = re.compile(r"[0-9](?<![0-9A-Za-z_.\-+/][0-9])(?:[ \-]?[0-9]){11,18}(?![0-9A-Za-z_]|[.\-/][0-9])", _A)
_CARD_NEG_RE = re.compile(
    r"(?i)\b(?:isbn|issn|doi|serial|s/n|sku|order|tracking|invoice|imei|upc|ean|gtin|isin|"
    r"transaction|txn|patent|ticket|id|uuid|hash|timestamp)\b[^A-Za-z0-9\n]{0,4}$", _A)
# a card word right before a number: a Luhn-valid number there is a card even when the
# issuer table does not know its prefix (new and regional networks, JCB's old 15-digit ranges)
_CARD_CUE_RE = re.compile(
    r"(?i)\b(?:card|cards|cc|cc#|credit|debit|visa|mastercard|master card|amex|american express|discover|"
    r"diners|jcb|maestro|unionpay|kreditkarte|karte|carte|tarjeta|carta|cart[aã]o|karta|kaart)\b"
    r"(?:[ \t]*(?:no|nr|num|number|nummer|numéro|n[uú]mero|#)\.?)?[ \t]*[:#]?[ \t]*$", _A)
# a phone word, the few words people put between it and the number, then the number in
# any grouping (validated in code: 7-15 digits, not a date, a year range or a sequence)
_CUED_NUMBER_RE = re.compile(
    r"[(+0-9](?<![0-9A-Za-z_+(.\-/].)(?:(?<=\()\+?\(?[0-9]|(?<=\+)\(?[0-9]|(?<=[0-9]))"
    r"(?:[0-9]|[ ./\-]{1,2}(?=[(0-9])|\(|\)){5,28}[0-9]",
    _A)
# the phone word and gap before a number, matched on the text before it read backwards
# (one anchored attempt per number instead of a search through the 60 characters)
# (a line break may sit in one of the gaps: "Phone:\n467 3395"; _lead_ok checks the label's line)
_CUED_LEAD_REV_RE = re.compile(
    r"(?:[^0-9A-Za-z\n]{0,6}\n)?[^0-9A-Za-z\n]{0,6}(?:(?i:" + _alternation(_GAP_WORDS, True)
    + r")(?:[^0-9A-Za-z\n]{0,6}\n)?[^0-9A-Za-z\n]{1,6}){0,3}"
    r"(?:(?i:" + _alternation(_PHONE_WORDS + _PHONE_WORDS_LATIN_EXTRA, True) + r")|(?<=[:.])[TMF]|(?:"
    + _alternation(_PHONE_WORDS_OTHER, True) + r"))(?![A-Za-z0-9])", _A)
# a weak word right before a number (read backwards like the above; no gap words)
_WEAK_LEAD_REV_RE = re.compile(
    r"[^0-9A-Za-z\n]{1,6}(?i:" + _alternation(_WEAK_PHONE_WORDS, True) + r")(?![A-Za-z0-9])", _A)
_CUED_NUMBER_END_RE = re.compile(r"(?![0-9A-Za-z_]|[.\-/:][0-9A-Za-z])", _A)
# a phone extension right after the number: "x769", " ext. 12", ", ext 12", " Ext: 4021",
# " extension 4", " #123" (the "#" form only extends a number found otherwise: "#" alone
# is not evidence of a phone)
_PHONE_EXT_RE = re.compile(
    r"(?:,?[ ]?(?P<mark>" + _EXT_MARKS + r")\.?:?[ ]?|[ ]?#[ ]?)[0-9]{1,6}(?![0-9A-Za-z_])", re.I | _A)
# the tail of an IBAN-like code: digits after it belong to that code, not to a phone or card
_IBAN_HEAD_RE = re.compile(r"(?<![0-9A-Za-z])[A-Z]{2}[0-9]{2}(?:[ \-]?[A-Z0-9]{4})*[ \-]?$", _A)
_IBAN_RE = re.compile(
    r"([A-Z](?<![0-9A-Za-z_][A-Z])[A-Z])([0-9]{2})((?:[ \-]?[A-Z0-9]{4}){2,8}(?:[ \-]?[A-Z0-9]{1,4})?)(?![0-9A-Za-z])", _A)
# the same all in lower case ("de89 3704 0044 ..."), as people type it in forms and chats
# (matched from the check digits, which a scan finds faster than a lower-case letter pair)
_IBAN_LOWER_RE = re.compile(
    r"[0-9]{2}(?<=[a-z]{2}[0-9]{2})(?<![0-9A-Za-z_][a-z]{2}[0-9]{2})"
    r"(?:[ \-]?[a-z0-9]{4}){2,8}(?:[ \-]?[a-z0-9]{1,4})?(?![0-9A-Za-z])", _A)

# -- secrets ----------------------------------------------------------------------
_TOKEN_END = r"(?![A-Za-z0-9_\-])"
#: (literals that must occur – empty when the pattern itself starts with a literal and
#: scans as fast –, pattern, weak prefix?); a weak prefix (``sk-``) needs a body with
#: mixed character classes before it counts.
_TOKEN_SPECS: tuple[tuple[tuple[str, ...], re.Pattern[str], bool], ...] = tuple(
    (lits, re.compile(rx + _TOKEN_END, _A), weak) for lits, rx, weak in (
        ((), r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|PKA|ROA|SCA)[A-Z0-9]{16}", False),
        (("gh",), r"gh[pousr]_[A-Za-z0-9]{36,251}", False),
        (("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,255}", False),
        (("xox",), r"xox[abposre]-[A-Za-z0-9\-]{10,250}", False),
        (("k_live_", "k_test_"), r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,247}", False),
        (("AIza",), r"AIza[A-Za-z0-9_\-]{35}", False),
        (("sk-",), r"sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)[0-9]{2}-)?[A-Za-z0-9_\-]{20,200}", True),
        (("glpat-",), r"glpat-[A-Za-z0-9_\-]{20,50}", True),
        (("npm_",), r"npm_[A-Za-z0-9]{36}", False),
        (("hf_",), r"hf_[A-Za-z]{34}", False),
        (("SG.",), r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", False),
    ))
_TOKEN_BOUNDARY = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_TOKEN_BOUNDARY_DOT = _TOKEN_BOUNDARY | {"."}
_TOKEN_PREFIX_RE = re.compile(
    r"AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA|gh[pousr]_|github_pat_|xox[abposre]-"
    r"|[rs]k_(?:live|test)_|AIza|sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)[0-9]{2}-)?|glpat-|npm_|hf_|SG\.", _A)
_AWS_SECRET_RE = re.compile(
    r"(?i:aws_?secret_?(?:access_?)?key)[\"']?[ \t]*(?:=>|:=|[:=])[ \t]*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", _A)
_SLACK_HOOK_RE = re.compile(r"hooks\.slack\.com/services/(T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,32})(?![A-Za-z0-9])", _A)
_JWT_RE = re.compile(
    r"(eyJ[A-Za-z0-9_\-]{2,})\.([A-Za-z0-9_\-]{2,})\.([A-Za-z0-9_\-]*)(?![A-Za-z0-9_\-])", _A)
_PK_BEGIN_RE = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----", _A)
_PK_B64_LINE_RE = re.compile(r"[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*", _A)
# the short last line of a base64 body ("MF80remPQk4="): padded, or not a word
_PK_B64_TAIL_RE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/]{2,15}={1,2}|(?=[A-Za-z]*[0-9+/])[A-Za-z0-9+/]{4,15})[ \t]*", _A)
_PK_HEADER_LINE_RE = re.compile(r"[ \t]*[A-Za-z\-]+:[^\n]*", _A)
_URL_PW_RE = re.compile(r"://([^\s/?#@:\"'<>]*):([^\s/?#\"'<>]+)@(?=[A-Za-z0-9\[_])", _A)
_SCHEME_TAIL_RE = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}$", _A)
_CONN_PW_RE = re.compile(
    r"[Pp](?:assword|ASSWORD|wd|WD)[ \t]*=[ \t]*"
    r"(?:'([^'\n]{1,128})'"                            # 'quoted'
    r"|\"([^\"\n]{1,128})\""                           # "quoted"
    r"|(?![A-Za-z_][A-Za-z0-9_]*=)"                    # not the next key=value (an emptied password)
    r"((?:[^;&\s\"'<>]|&(?![A-Za-z_][A-Za-z0-9_]*=)){1,128}))",  # bare, up to ; & (a new param) or space
    _A)
_CONN_CUE_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:server|data source|host|hostname|addr|address|uid|user id|user|username|"
    r"database|initial catalog|dbname|port|sslmode|trusted_connection|driver|provider)[ \t]*=", _A)
_PW_PLACEHOLDER_RE = re.compile(
    r"(?i)^(?:(?:your|my|the|db|user|admin|some|new|old|secret|super)?[_\-.]?"
    r"(?:pass(?:word|wd|phrase)?|pw|pwd|secret|token|key|redacted|hidden|changeme|example|test|"
    r"sample|dummy|foo|bar|baz|x+|\*+|\.+|_+|-+|\?+|•+)(?:[_\-.]?here)?[0-9]?"
    r"|<.*>|\{.*\}|\[.*\]|\(.*\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%\(?[A-Za-z_]*\)?[sd]|:[A-Za-z_]+"
    r"|\.\.\.|…|[\*x•]{3,}.*)$")


# -- validators -------------------------------------------------------------------


def luhn_ok(digits: str) -> bool:
    """True when the digit string passes the Luhn (mod 10) check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def luhn_check_digit(payload: str) -> str:
    """The digit that makes ``payload + digit`` pass Luhn."""
    for d in "0123456789":
        if luhn_ok(payload + d):
            return d
    raise AssertionError("unreachable")


def card_network_ok(digits: str) -> bool:
    """True when the number's issuer prefix (IIN) and length fit a real network."""
    n = len(digits)
    if n < 12 or n > 19:
        return False
    p2, p3, p4 = int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":                        # Visa
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:    # Mastercard
        return n == 16
    if p2 in (34, 37):                          # American Express
        return n == 15
    if p4 == 6011 or 644 <= p3 <= 649 or p2 == 65:  # Discover
        return 16 <= n <= 19
    if 3528 <= p4 <= 3589:                      # JCB
        return 16 <= n <= 19
    if 300 <= p3 <= 305 or p2 in (36, 38, 39):  # Diners Club
        return 14 <= n <= 19
    if 2200 <= p4 <= 2204:                      # Mir
        return 16 <= n <= 19
    if p2 in (62, 81):                          # UnionPay
        return 16 <= n <= 19
    if p2 == 50 or 56 <= p2 <= 69:              # Maestro
        return 12 <= n <= 19
    return False


def _placeholder_digits(digits: str) -> bool:
    """A made-up number people write as an example ("1234 5678 9012 3452"): a long
    counting run or few distinct digits."""
    return "12345678" in digits or "87654321" in digits or len(set(digits)) < 4


def iban_mod97(compact: str) -> int:
    """ISO 7064 mod 97-10 of an IBAN (1 for a valid one)."""
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97


def iban_ok(compact: str) -> bool:
    """Country known, length as registered, and the mod-97 check holds."""
    want = T.IBAN_LENGTHS.get(compact[:2])
    return want == len(compact) and compact[2:4].isdigit() and iban_mod97(compact) == 1


def ssn_ok(area: str, group: str, serial: str) -> bool:
    """US SSN ranges: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    if area == "000" or area == "666" or area[0] == "9" or group == "00" or serial == "0000":
        return False
    return (area + group + serial) not in _SSN_DENY


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, -translated or NAT64 IPv6 address carries."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if any(ip in net for net in _V4_EMBEDDING_V6):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def ip_is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Globally routable unicast, outside documentation ranges."""
    if ip.version == 6:
        mapped = _embedded_v4(ip)
        if mapped is not None:
            return ip_is_public(mapped)
        return ip in _GLOBAL_V6 and ip.is_global and ip not in DOC_NET_V6
    return ip.is_global and not ip.is_multicast and not ip.is_reserved and not any(ip in n for n in DOC_NETS_V4)


def ip_is_private(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Private, loopback, link-local, CGNAT or unique-local host addresses (not the
    documentation, unspecified, broadcast or multicast ones)."""
    if ip.version == 6:
        mapped = _embedded_v4(ip)
        if mapped is not None:
            return ip_is_private(mapped)
        if ip in DOC_NET_V6 or ip.is_unspecified or ip.is_multicast:
            return False
        return ip.is_loopback or ip.is_link_local or ip in _UNIQUE_LOCAL_V6
    if any(ip in n for n in DOC_NETS_V4) or ip.is_unspecified or ip.is_multicast:
        return False
    if int(ip) == 0xFFFFFFFF:
        return False
    return ip.is_private or ip.is_loopback or ip.is_link_local or ip in _SHARED_V4


def _b64url_json(part: str) -> object | None:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


def jwt_ok(header: str) -> bool:
    """The header part decodes (base64url) to a JSON object with an ``alg``."""
    obj = _b64url_json(header)
    return isinstance(obj, dict) and isinstance(obj.get("alg"), str)


_PLACEHOLDER_WORDS = ("your", "xxxx", "example", "secret", "token", "placeholder", "redacted", "dummy", "sample")


def secret_plausible(body: str, strict: bool = True) -> bool:
    """A token body that is random-looking and not a documentation placeholder.

    ``strict`` (for prefixes that alone say little, like ``sk-``): upper, lower and
    digit classes mixed and at least 3 bits of entropy per character. Formats whose
    prefix and length pin them down (AWS key ids are upper-case base32 and may lack
    digits) only need enough distinct characters and no placeholder words."""
    if EXAMPLE_MARK in body:
        return False
    low = body.lower()
    if any(w in low for w in _PLACEHOLDER_WORDS):
        return False
    chars = [c for c in body if c.isalnum()]
    if len(chars) < 10:
        return False
    counts = Counter(chars)
    if len(counts) < min(10, len(chars) // 3):
        return False
    if not strict:
        return True
    classes = any(c.isupper() for c in chars) + any(c.islower() for c in chars) + any(c.isdigit() for c in chars)
    if classes < 2:
        return False
    n = len(chars)
    entropy = -sum(k / n * math.log2(k / n) for k in counts.values())
    return entropy >= 3.0


def password_plausible(pw: str) -> bool:
    """A real-looking password: not a placeholder (``password``, ``<pass>``,
    ``${DB_PASS}``, ``****``) and not one of our own pseudonyms."""
    return bool(pw) and EXAMPLE_MARK not in pw and _PW_PLACEHOLDER_RE.match(pw) is None


# -- the detector ------------------------------------------------------------------


class Detector:
    """Finds PII spans in a ``str`` for a fixed set of enabled types.

    Stateless after construction (safe to share); build one per config.
    """

    def __init__(self, types: Iterable[str] = PII_TYPES, *, scrub_private_ip: bool = False) -> None:
        self.types = frozenset(types)
        unknown = self.types - set(PII_TYPES)
        if unknown:
            raise ValueError(f"unknown PII types {sorted(unknown)}; valid: {list(PII_TYPES)}")
        self.scrub_private_ip = scrub_private_ip
        self.families: tuple[str, ...] = tuple(
            f for f, ts in FAMILY_TYPES.items() if self.types.intersection(ts))
        #: the gate pattern of every enabled family (RE2- and ``re``-compatible)
        self.gates: dict[str, str] = {f: GATES[f] for f in self.families}
        if scrub_private_ip and "ipv6" in self.gates:
            self.gates["ipv6"] = IPV6_ANY_GATE
        self._gates = {f: re.compile(p, _A) for f, p in self.gates.items()}

    # public API -------------------------------------------------------------------
    def families_for(self, text: str) -> tuple[str, ...]:
        """The families whose gate matches ``text`` (Python ``re``; the stage uses
        the same patterns through RE2 on whole batches)."""
        return tuple(f for f in self.families if self._gates[f].search(text))

    def find(self, text: str, families: Iterable[str] | None = None, *, gated: bool = True) -> list[Span]:
        """Detected spans, sorted and non-overlapping.

        ``families`` restricts the work to those families (the stage passes the
        ones whose gate fired); ``gated=False`` runs every enabled detector with no
        pre-check (the naive baseline; same result, slower)."""
        if families is None:
            families = self.families_for(text) if gated else self.families
        cands: list[Span] = []
        for fam in families:
            if fam in self._gates:
                cands.extend(getattr(self, "_f_" + fam)(text))
        cands = [s for s in cands if s.type in self.types]
        return _resolve(cands)

    # families ---------------------------------------------------------------------
    def _f_email(self, text: str) -> Iterator[Span]:
        pos = text.find("@")
        while pos >= 0:
            nxt = text.find("@", pos + 1)
            span = self._email_at(text, pos)
            if span is not None:
                yield span
            pos = nxt

    def _email_at(self, text: str, at: int) -> Span | None:
        lo = max(0, at - 65)
        i = at
        while i > lo and text[i - 1] in _LOCAL_CHARS:
            i -= 1
        if i == lo and lo > 0 and text[lo - 1] in _LOCAL_CHARS:
            return None  # local part longer than 64
        while i < at and text[i] in "._%+-'":
            i += 1
        if i >= at or text[at - 1] == "." or ".." in text[i:at]:
            return None
        if i > 0 and (text[i - 1].isalnum() or text[i - 1] in "@"):
            return None
        m = _DOMAIN_RE.match(text, at + 1)
        if m is None:
            return None
        domain = m.group().lower()
        tld = domain.rsplit(".", 1)[1]
        if not (len(tld) == 2 or tld in T.GENERIC_TLDS or tld.startswith("xn--")):
            return None
        if domain in T.RESERVED_EMAIL_DOMAINS or tld in T.RESERVED_EMAIL_TLDS:
            return None
        if any(domain.endswith("." + d) for d in T.RESERVED_EMAIL_DOMAINS):
            return None
        end = m.end()
        if end < len(text) and text[end] == "@":
            return None
        if _SCP_AFTER_RE.match(text, end):
            return None  # git@github.com:org/repo (an SSH remote, not a mailbox)
        if _in_url_authority(text, i):
            return None  # scheme://user:pass@host: userinfo, not a mailbox
        return Span(i, end, "email")

    def _ip_wanted(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return ip_is_public(ip) or (self.scrub_private_ip and ip_is_private(ip))

    def _f_ipv4(self, text: str) -> Iterator[Span]:
        for m in _IPV4_RE.finditer(text):
            parts = m.group().split(".")
            if any((len(p) > 1 and p[0] == "0") or int(p) > 255 for p in parts):
                continue
            ip = ipaddress.IPv4Address(m.group())
            if not self._ip_wanted(ip):
                continue
            before = text[max(0, m.start() - 40):m.start()]
            before = before.rsplit("\n", 1)[-1]
            if _VERSION_CUE_RE.search(before) or _PACKAGE_DASH_RE.search(before):
                continue  # "version 1.2.3.4", "openssl-1.0.2.17"
            if all(len(p) == 1 for p in parts) and not _IP_CUE_RE.search(text[max(0, m.start() - 60):m.start()]):
                continue  # 1.2.3.4 with no network context reads as a version
            if text.startswith(".in-addr.arpa", m.end()):
                continue  # a reverse-DNS name: the address written backwards
            yield Span(m.start(), m.end(), "ip", "4")

    def _ipv6_candidates(self, text: str) -> Iterator[re.Match[str]]:
        """IPv6-shaped matches, found from the ``:hex:`` seeds every one contains."""
        pos = 0
        while True:
            seed = _IPV6_SEED_RE.search(text, pos)
            if seed is None:
                return
            st = seed.start()
            while st > 0 and seed.start() - st < 45 and text[st - 1] in _HEX_COLON:
                st -= 1
            m = None
            for cand in range(st, seed.start() + 1):
                m = _IPV6_RE.match(text, cand)
                if m is not None:
                    break
            if m is None:
                pos = seed.start() + 1
                continue
            yield m
            pos = max(m.end(), seed.start() + 1)

    def _f_ipv6(self, text: str) -> Iterator[Span]:
        for m in self._ipv6_candidates(text):
            cand = m.group()
            if cand.count(":") < 2:
                continue
            addr = cand.split("%", 1)[0]
            if addr.endswith(":") and not addr.endswith("::"):
                addr = addr[:-1]   # "... 2a02:c7f::1: connected": the colon ends the clause
            try:
                ip = ipaddress.IPv6Address(addr)
            except ValueError:
                continue
            if not self._ip_wanted(ip):
                continue
            yield Span(m.start(), m.start() + len(addr), "ip", "6")

    def _f_numeric(self, text: str) -> Iterator[Span]:
        """Cards, SSNs and phones, looked for only inside digit clusters."""
        n = len(text)
        for c in _CLUSTER_RE.finditer(text):
            start, end = c.start(), min(n, c.end() + 2)  # 2: room for the trailing look-aheads
            while start > 0 and c.start() - start < 3 and text[start - 1] in "+( ":
                start -= 1
            if "card" in self.types:
                yield from self._cards(text, start, end)
            if "ssn" in self.types:
                yield from self._ssns(text, start, end)
            if "phone" in self.types:
                yield from self._phones(text, start, end)

    def _f_phone_cue(self, text: str) -> Iterator[Span]:
        """Numbers right after a phone word, in any grouping (``Tel. 467 3395``,
        ``call me on 699 956 915``, ``Phone: +1-903-140-4508x769``, the word ending the
        line above: ``Phone:\n467 3395``), or with an extension (``... 4508 x769``,
        ``... ext. 12``) or a kind word after them (``... mobile``, ``... -Fax``,
        ``... (home)``); after a weak word (``reach the desk at``, ``registered under``)
        or before a loose label (``... office``) only when the numbering plans know the
        number."""
        for m in _CUED_NUMBER_RE.finditer(text):
            s = m.start()
            lead = text[s - 1:s - 61 if s > 60 else None:-1] if s else ""
            lead_m = _CUED_LEAD_REV_RE.match(lead) if lead else None
            strong = lead_m is not None and _lead_ok(text, s, lead_m.end())
            weak = not strong and bool(lead) and _WEAK_LEAD_REV_RE.match(lead) is not None
            # the longest leading groups that make a phone: "+370 2249 2898 6 - a list item"
            groups = _groups(text, s, m.end())
            ends = sorted((g.end for g in groups), reverse=True)
            for e in ends:
                if text[e - 1] == ")" and text.count("(", s, e) < text.count(")", s, e):
                    e -= 1
                ext = _PHONE_EXT_RE.match(text, e)
                full_end = ext.end() if ext else e
                label = _AFTER_LABEL_RE.match(text, full_end) if text[full_end - 1].isdigit() else None
                whole = e >= ends[0] - 1   # a word after the number takes the whole run, never a few table columns
                # an extension mark or a kind word in label form says "phone" as a word before it does
                sure = whole and (ext is not None and ext.group("mark") is not None or label is not None and (
                    label.group("strong") is not None or any(c in label.group("sep") for c in "-\u2013\u2014/([")))
                if not (strong or sure or (weak or label is not None) and whole):
                    continue
                if not _CUED_NUMBER_END_RE.match(text, full_end) and label is None:
                    continue
                number = text[s:e]
                plan = cued_phone_plan(number)
                if plan is not None and not strong and sure and not _self_evident(text, s, number):
                    plan = None
                if plan is not None and not (strong or sure) and (_thousands(number) or not P.plan_valid(number)):
                    plan = None
                if plan is None and number.lstrip("( ").startswith("+")  and P.plan_valid(number):
                    plan = "intl:" + P.country_code(number)  # "+63 1800 3 287 7645": the plan's own grouping
                if plan is not None:
                    yield Span(s, full_end, "phone", plan)
                    break

    def _f_iban(self, text: str) -> Iterator[Span]:
        yield from self._ibans(text, _IBAN_RE, str, 0)
        yield from self._ibans(text, _IBAN_LOWER_RE, str.upper, 2)

    def _ibans(self, text: str, pattern: re.Pattern[str], canon, back: int) -> Iterator[Span]:
        """IBANs whose match starts ``back`` characters after the country code."""
        for m in pattern.finditer(text):
            start = m.start() - back
            want = T.IBAN_LENGTHS.get(canon(text[start:start + 2]))
            if want is None:
                continue
            # map compact positions back to text offsets; cut at the registered length
            compact, ends = [], []
            for off, ch in enumerate(text[start:m.end()], start):
                if ch not in " -":
                    compact.append(ch)
                    ends.append(off + 1)
            if len(compact) < want:
                continue
            end = ends[want - 1]
            if len(compact) > want and end < m.end() and text[end] not in " -":
                continue  # the cut would split a group
            code = canon("".join(compact[:want]))
            seps = {ch for ch in text[start:end] if ch in " -"}
            if len(seps) > 1 or not iban_ok(code):
                continue
            yield Span(start, end, "iban")

    def _cards(self, text: str, start: int, end: int) -> Iterator[Span]:
        for m in _CARD_RE.finditer(text, start, end):
            if _IBAN_HEAD_RE.search(text, max(0, m.start() - 40), m.start()):
                continue
            # the longest leading groups that make a network-valid number decide: a run
            # that swallowed a year ("4111 1111 1111 1111 2023") still yields its card,
            # a Luhn-failing 16-digit number yields nothing (not a 12-digit prefix of it)
            cued = _CARD_CUE_RE.search(text, max(0, m.start() - 40), m.start()) is not None
            for s, e, digits in _group_prefixes(text, m.start(), m.end(), card_layout_ok, 12, 19):
                if not (card_network_ok(digits) or cued and not _placeholder_digits(digits)):
                    continue
                if luhn_ok(digits) and not _CARD_NEG_RE.search(text[max(0, s - 24):s]):
                    yield Span(s, e, "card")
                break

    def _ssns(self, text: str, start: int, end: int) -> Iterator[Span]:
        for m in _SSN_RE.finditer(text, start, end):
            area, sep, group, serial = m.groups()
            if not ssn_ok(area, group, serial):
                continue
            before = text[max(0, m.start() - 40):m.start()]
            if sep != "-" and not _SSN_CUE_RE.search(before):
                continue
            if sep == "-" and not _SSN_CUE_RE.search(before) and _NEG_CUE_RE.search(before[-24:]):
                continue
            yield Span(m.start(), m.end(), "ssn")

    def _phone_runs(self, text: str, start: int, end: int) -> Iterator[re.Match[str]]:
        """Maximal runs of digit groups, tried only where 8 digit-ish characters
        start (``_PHONE_SEED_RE``) instead of at every character."""
        pos = start
        while True:
            seed = _PHONE_SEED_RE.search(text, pos, end)
            if seed is None:
                return
            st = seed.start()
            if st > 0 and text[st - 1] == "(" and text[st] == "+":
                st -= 1
            m = _PHONE_RUN_RE.match(text, st, end)
            if m is None or m.end() <= seed.start():
                pos = seed.start() + 1
                continue
            yield m
            pos = m.end()

    def _phones(self, text: str, start: int, end: int) -> Iterator[Span]:
        for m in self._phone_runs(text, start, end):
            run = m.group()
            if sum(c.isdigit() for c in run) < 8:
                continue
            found = _phone_in_run(text, m.start(), m.end())
            if found is None:
                continue
            if text[found.end - 1] == ")" and text.count("(", found.start, found.end) < text.count(")", found.start, found.end):
                found = found._replace(end=found.end - 1)  # "(tel. 0123 45678)": the ")" closes the aside
            ext = _PHONE_EXT_RE.match(text, found.end)
            yield found._replace(end=ext.end()) if ext else found

    def _f_token(self, text: str) -> Iterator[Span]:
        for lits, rx, weak in _TOKEN_SPECS:
            if lits and not any(lit in text for lit in lits):
                continue
            for m in rx.finditer(text):
                if m.start() and text[m.start() - 1] in _TOKEN_BOUNDARY:
                    continue
                tok = m.group()
                p = _TOKEN_PREFIX_RE.match(tok)
                prefix = p.group() if p else ""
                if secret_plausible(tok[len(prefix):], strict=weak):
                    yield Span(m.start(), m.end(), "api_key", prefix)
        if "ecret" in text or "ECRET" in text:
            for m in _AWS_SECRET_RE.finditer(text):
                if secret_plausible(m.group(1), strict=True):
                    yield Span(m.start(1), m.end(1), "api_key", "")
        if "hooks.slack.com" not in text:
            return
        for m in _SLACK_HOOK_RE.finditer(text):
            if EXAMPLE_MARK not in m.group(1):
                yield Span(m.start(1), m.end(1), "api_key", "")

    def _f_jwt(self, text: str) -> Iterator[Span]:
        for m in _JWT_RE.finditer(text):
            if m.start() and text[m.start() - 1] in _TOKEN_BOUNDARY_DOT:
                continue
            if EXAMPLE_MARK in m.group(3) or not jwt_ok(m.group(1)):
                continue
            yield Span(m.start(), m.end(), "jwt")

    def _f_private_key(self, text: str) -> Iterator[Span]:
        pos = 0
        while True:
            m = _PK_BEGIN_RE.search(text, pos)
            if m is None:
                return
            label, block = m.group(1), m.group(2) or ""
            end_marker = f"-----END {label}PRIVATE KEY{block}-----"
            end = text.find(end_marker, m.end(), m.end() + 64_000)
            if end >= 0:
                stop = end + len(end_marker)
                body = text[m.end():end]
            else:  # truncated block: take the key-material lines that follow
                stop, body_lines = _pk_truncated_end(text, m.end())
                body = text[m.end():stop]
                if body_lines == 0:
                    pos = m.end()
                    continue
            pos = stop
            if EXAMPLE_MARK in body or len(re.sub(r"\s", "", body)) < 16:
                continue
            yield Span(m.start(), stop, "private_key", label + "PRIVATE KEY" + block)

    def _f_secret_assign(self, text: str) -> Iterator[Span]:
        return (Span(sp.start, sp.end, sp.type) for sp in _secrets.find(text))

    def _f_url_password(self, text: str) -> Iterator[Span]:
        for m in _URL_PW_RE.finditer(text):
            if _SCHEME_TAIL_RE.search(text, max(0, m.start() - 40), m.start()) is None:
                continue
            if password_plausible(m.group(2)):
                yield Span(m.start(2), m.end(2), "password")

    def _f_conn_password(self, text: str) -> Iterator[Span]:
        for m in _CONN_PW_RE.finditer(text):
            if m.start() and text[m.start() - 1] in _TOKEN_BOUNDARY_DOT:
                continue
            g = 1 if m.group(1) is not None else 2 if m.group(2) is not None else 3
            value = m.group(g)
            if not password_plausible(value):
                continue
            if g == 3 and (re.search(r"[(\[]|^self\.|[,)]$", value)
                           or value in ("None", "null", "nil", "true", "false", "True", "False")):
                continue  # code, not a connection string: "password = None", "pw = info.partition(':')"
            window = text[max(0, m.start() - 160):m.end() + 160]
            if len(_CONN_CUE_RE.findall(window)) < 1:
                continue
            yield Span(m.start(g), m.end(g), "password")


# -- phone parsing -----------------------------------------------------------------


def _pk_truncated_end(text: str, pos: int) -> tuple[int, int]:
    """End of the base64 lines (and armour headers) following a BEGIN line that has
    no END line, and how many base64 lines there were."""
    stop, b64_lines = pos, 0
    while pos < len(text) and text[pos] == "\n":
        nl = text.find("\n", pos + 1)
        line_end = len(text) if nl < 0 else nl
        line = text[pos + 1:line_end].rstrip("\r")
        if not line.strip():
            if b64_lines:
                break
        elif _PK_B64_LINE_RE.fullmatch(line) or (b64_lines and _PK_B64_TAIL_RE.fullmatch(line)):
            b64_lines += 1
        elif not _PK_HEADER_LINE_RE.fullmatch(line) or b64_lines:
            break
        stop = pos = line_end
    return stop, b64_lines


def _in_url_authority(text: str, pos: int) -> bool:
    """True when ``pos`` is inside the ``user:password@`` part of a URL."""
    lo = max(0, pos - 200)
    scheme = text.rfind("://", lo, pos)
    if scheme < 0:
        return False
    between = text[scheme + 3:pos]
    return not any(c in between for c in " \t\n/?#\"'<>")


class _Group(NamedTuple):
    start: int       # offset of the group (including a "(")
    end: int         # offset after the group (including a ")")
    digits: str
    paren: bool
    sep: str         # separator text before this group ("" for the first)


def _groups(text: str, start: int, end: int) -> list[_Group]:
    out: list[_Group] = []
    prev = start
    for g in _GROUP_RE.finditer(text, start, end):
        raw = g.group()
        out.append(_Group(g.start(), g.end(), raw.strip("()"), raw.startswith("(") and raw.endswith(")"),
                          text[prev:g.start()] if out else ""))
        prev = g.end()
    return out


def _norm_sep(sep: str) -> str:
    s = sep.strip()
    return s if s else (" " if sep else "")


def card_layout_ok(groups: list[_Group]) -> bool:
    if any(g.paren for g in groups) or len({g.sep for g in groups[1:]}) > 1:
        return False
    if len(groups) == 1:
        return True
    sizes = [len(g.digits) for g in groups]
    if sizes in ([4, 6, 5], [4, 6, 4]):
        return True
    return all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4


def _group_prefixes(text: str, start: int, end: int, layout_ok, lo: int, hi: int) -> Iterator[tuple[int, int, str]]:
    """Leading group windows of a candidate with ``lo..hi`` digits and a valid
    layout, longest first."""
    groups = _groups(text, start, end)
    total = 0
    sizes = []
    for g in groups:
        total += len(g.digits)
        sizes.append(total)
    for size in range(len(groups), 0, -1):
        if lo <= sizes[size - 1] <= hi:
            win = groups[:size]
            if layout_ok(win):
                yield win[0].start, win[-1].end, "".join(g.digits for g in win)


def _is_date(groups: list[_Group]) -> bool:
    """Some three consecutive groups read as a date (y-m-d, d.m.y, m/d/y)."""
    return any(_date3(*(g.digits for g in groups[i:i + 3])) for i in range(len(groups) - 2))


def _date3(a: str, b: str, c: str) -> bool:
    if len(a) == 4 and len(b) <= 2 and len(c) <= 2:
        y, mo, d = int(a), int(b), int(c)
    elif len(c) == 4 and len(a) <= 2 and len(b) <= 2:
        y, d, mo = int(c), int(a), int(b)
        if mo > 12 and d <= 12:
            d, mo = mo, d
    else:
        return False
    return 1000 <= y <= 2999 and 1 <= mo <= 12 and 1 <= d <= 31


def _progression(groups: list[_Group]) -> bool:
    if len(groups) < 3 or len({len(g.digits) for g in groups}) > 1:
        return False
    vals = [int(g.digits) for g in groups]
    steps = {b - a for a, b in zip(vals, vals[1:])}
    return len(steps) == 1


def _country_code(digits: str) -> str | None:
    for k in (1, 2, 3):
        if digits[:k] in T.COUNTRY_CODES:
            return digits[:k]
    return None


def _nanp_ok(nsn: str) -> bool:
    """NANP: NXX-NXX-XXXX, no N11 area or exchange, and not an N9X area code (reserved
    for the plan's expansion, so never anyone's number; phone pseudonyms live there)."""
    if len(nsn) != 10 or nsn[0] in "01" or nsn[3] in "01":
        return False
    if nsn[1:3] == "11" or nsn[4:6] == "11":
        return False
    return nsn[1] != "9"


def _seps_consistent(groups: list[_Group], intl: bool) -> bool:
    """Separators agree, except the one after the area code (``089 / 123 456``) and,
    in international form, the one after the country code; parentheses excused."""
    seps = [_norm_sep(g.sep) for prev, g in zip(groups, groups[1:]) if not g.paren and not prev.paren]
    rest = seps[2:] if intl else seps[1:]
    return len(set(rest)) <= 1


def _phone_layout(groups: list[_Group], intl: bool, cue: bool) -> str | None:
    """Return the numbering plan a window of groups fits ("intl:<cc>", "nanp",
    "national"), or None."""
    digits = "".join(g.digits for g in groups)
    nd = len(digits)
    if nd < 8 or nd > 15 or set(digits) <= {"0", "1"}:
        return None
    if not _seps_consistent(groups, intl) or _is_date(groups) or _progression(groups):
        return None
    if any(g.paren and g.digits != "0" for g in groups[2:]):
        return None  # "(1985)", "407-437 (2005)": only an area code or country code sits in parentheses
    if len(groups) == 4 and all(_norm_sep(g.sep) == "." and len(g.digits) <= 3 for g in groups[1:]) and len(groups[0].digits) <= 3:
        return None  # dotted quad: an IPv4 address or a version
    if not intl and [len(g.digits) for g in groups] == [3, 2, 4] and groups[1].sep == groups[2].sep == "-":
        return None  # 123-45-6789 is the SSN layout
    body = [g for g in groups if not (g.paren and g.digits == "0")]
    inner = body[2:-1] if intl else body[1:-1]
    if any(len(g.digits) == 1 for g in inner):
        return None
    if len(groups) > 1 and len(groups[-1].digits) == 1 and _norm_sep(groups[-1].sep) != "-":
        return None
    if intl:
        body = [g for g in groups if not (g.paren and g.digits == "0")]
        d = "".join(g.digits for g in body)
        cc = _country_code(d)
        if cc is None:
            return None
        nsn = d[len(cc):]
        if nsn.startswith("0") and cc != "39":
            nsn = nsn[1:]
        lo, hi = T.NSN_LENGTHS.get(cc, T.DEFAULT_NSN_LENGTH)
        if not lo <= len(nsn) <= hi or len(nsn) < 6:
            return None
        if cc == "1" and not _nanp_ok(nsn):
            return None
        if len(groups) == 1 and not cue and len(d) < 10:
            return None
        return "intl:" + cc
    first = groups[0]
    if len(groups) == 1:  # bare digits: only with a phone word before it
        if not cue:
            return None
        if digits[0] == "0" and 9 <= nd <= 12 and digits[1] != "0":
            return "national"
        if nd == 10 and _nanp_ok(digits) or nd == 11 and digits[0] == "1" and _nanp_ok(digits[1:]):
            return "nanp"
        return None
    sizes = [len(g.digits) for g in groups]
    # NANP: (NXX) NXX-XXXX, NXX-NXX-XXXX, 1-NXX-NXX-XXXX
    if sizes[-2:] == [3, 4] and (sizes == [3, 3, 4] and digits[0] != "0" or sizes == [1, 3, 3, 4] and digits[0] == "1"):
        nsn = digits[-10:]
        if _nanp_ok(nsn):
            return "nanp"
        return None
    # trunk-prefix national plans (UK, DE, FR, NL, AU, ...): 0 + area + subscriber
    if first.digits[0] == "0" and len(first.digits) >= 2 and first.digits[1] != "0":
        if not 9 <= nd <= 12 or len(first.digits) > 6:
            return None
        if len(groups) > 6:
            return None
        if not cue and not _national_groups_ok(groups):
            return None
        return "national"
    if cue and 8 <= nd <= 12 and len(groups) <= 5 and all(len(g.digits) >= 2 for g in groups):
        if all(len(g.digits) == 4 and 1800 <= int(g.digits) <= 2099 for g in groups):
            return None  # "1844-1994": years
        return "national"
    return None


def _thousands(number: str) -> bool:
    """Reads as a quantity with thousands separators ("1 234 567", "10 000 000 000")."""
    sizes = [len(g.digits) for g in _groups(number, 0, len(number))]
    if len(sizes) < 2 or number.lstrip("( ").startswith(("+", "0")) or any(k != 3 for k in sizes[1:]):
        return False
    return sizes[0] <= 2 or len(sizes) >= 4


def _national_groups_ok(groups: list[_Group]) -> bool:
    """The subscriber part of a trunk-prefix number with no phone word near it, as the
    plans group it: one group of 3-8 digits (``030 12345678``) or groups of 2-4
    (``020 7946 0958``, ``01 23 45 67 89``), single spaces or one kind of mark; not a
    decimal (``01234.000000``), a time with microseconds (``01 02 03 000004``) or a
    date (``08-01-3697739``)."""
    sub = [len(g.digits) for g in groups[1:]]
    if any("  " in g.sep or "\t" in g.sep for g in groups[1:]):
        return False
    if len(sub) == 1:
        return 3 <= sub[0] <= 8 and not (groups[1].sep == "." and set(groups[1].digits) == {"0"})
    return all(2 <= k <= 4 for k in sub)


def cued_phone_plan(number: str) -> str | None:
    """The plan (``intl:<cc>`` or ``cued``) of a number written right after a phone
    word, or None. The word already says "phone", so any grouping of 7 to 15 digits
    passes, except what a number after such a word is when it is not a phone: a date,
    a time span of years ("Fax: 1998-2003"), an arithmetic sequence, one repeated
    digit, and an international prefix with no such country code."""
    groups = _groups(number, 0, len(number))
    digits = "".join(g.digits for g in groups)
    core = number.lstrip("( ")
    intl = core.startswith("+") or (core.startswith("00") and not core.startswith("000"))
    if core.startswith("00") and intl:
        digits = digits[2:]
    if not 7 <= len(digits) <= 15 or len(groups) > 7 or len(set(digits)) < 3:
        return None
    if _is_date(groups) or _progression(groups):
        return None
    if all(len(g.digits) == 4 and 1800 <= int(g.digits) <= 2099 for g in groups):
        return None
    if sum(len(g.digits) == 1 for g in groups[1:]) > 1:
        return None  # "1 2 3 4 5 6 7": a list, not a number
    if len(groups) > 1 and len(groups[-1].digits) == 1 and _norm_sep(groups[-1].sep) != "-":
        return None  # "... 2898 6": the 6 starts the next item
    if not intl:
        nanp = digits[-10:] if len(digits) == 10 or len(digits) == 11 and digits[0] == "1" else ""
        if nanp and nanp[0] in "23456789" and nanp[1] == "9" and nanp[3] in "23456789":
            return None  # N9X NXX XXXX: the shape of our own pseudonyms (scrubbing stays idempotent)
        return "cued"
    body = "".join(g.digits for g in groups if not (g.paren and g.digits == "0"))
    body = body[2:] if core.startswith("00") else body
    cc = _country_code(body)
    if cc is None or len(body) - len(cc) < 6:
        return None
    if cc == "1" and (len(body) != 11 or body[2] == "9"):
        return None  # +1 takes 10 digits; never an N9X area code (our own pseudonyms live there)
    return "intl:" + cc


def _lead_ok(text: str, start: int, lead_len: int) -> bool:
    """A phone word ``lead_len`` characters before the number at ``start`` counts across
    a line break only as a label of the number's line: it is followed by a colon
    (``Contact us by phone:``) or starts its own line (``Phone number``, ``- Tel.``);
    prose that ends a line with "call" before a figure on the next is not."""
    word = start - lead_len
    nl = text.find("\n", word, start)
    if nl < 0:
        return True
    if text.find("\n", nl + 1, start) >= 0:
        return False
    if ":" in text[word:nl] or "\uff1a" in text[word:nl]:
        return True
    line = text[text.rfind("\n", 0, word) + 1:word]
    return not line.strip(" \t-*\u2022\u00b7>")


def _self_evident(text: str, start: int, number: str) -> bool:
    """A number with no phone word before it that an extension or kind word after it
    makes a phone: grouped like one (or international, or 9+ digits), not a quantity
    with thousands separators, and no word before it says it is something else
    (``order``, ``ISBN``, ``#``)."""
    groups = _groups(number, 0, len(number))
    if not groups:
        return False
    if len(groups) < 2 and not number.lstrip("( ").startswith("+") and len(groups[0].digits) < 9:
        return False
    if _thousands(number):
        return False
    line = text[max(0, start - 24):start].rsplit("\n", 1)[-1]
    return _NEG_CUE_RE.search(line) is None


def _phone_in_run(text: str, start: int, end: int) -> Span | None:
    """The longest window of digit groups in ``text[start:end]`` that is a phone."""
    intl_prefix = ""
    body_start = start
    if text.startswith("+", start):
        intl_prefix = "+"
    elif text.startswith("00", start):
        intl_prefix = "00"
    if text.startswith("(+", start):
        intl_prefix = "+"
    groups = _groups(text, start, end)
    if not groups or (intl_prefix != "+" and _IBAN_HEAD_RE.search(text, max(0, start - 40), start)):
        return None
    # groups in a card or account-number layout (4-4-4-4, Amex 4-6-5, Diners 4-6-4)
    # belong to that number, never to a phone
    sizes = [len(g.digits) for g in groups]
    card_like: set[int] = set()
    for i in range(len(sizes)):
        for layout in ([4, 4, 4, 4], [4, 6, 5], [4, 6, 4]):
            k = len(layout)
            if sizes[i:i + k] == layout and len({g.sep for g in groups[i + 1:i + k]}) == 1:
                card_like.update(range(i, i + k))
    if intl_prefix == "00":  # "0044 20 ..." -> the group starts with the 00
        g0 = groups[0]
        if len(g0.digits) > 2:
            groups[0] = g0._replace(digits=g0.digits[2:])
        else:
            groups = groups[1:]
            if not groups:
                return None
    before = text[max(0, start - 40):start].rsplit("\n", 1)[-1]
    cue_m = _PHONE_CUE_RE.search(before)
    cue = cue_m is not None
    neg_m = _NEG_CUE_RE.search(before, max(0, len(before) - 24))
    # the word right before the number decides: "call ... EIN 54-5023518" is an EIN
    negative = neg_m is not None and (cue_m is None or cue_m.start() < neg_m.start())
    n = len(groups)
    cum = [0]
    for g in groups:
        cum.append(cum[-1] + len(g.digits))
    for size in range(n, 0, -1):
        for i in range(0, n - size + 1):
            if not 8 <= cum[i + size] - cum[i] <= 17:
                continue
            if card_like and not card_like.isdisjoint(range(i, i + size)):
                continue
            win = groups[i:i + size]
            if i > 0 and win[0].sep in (".", "-", "/"):
                continue  # glued to the digits before it by "." "-" "/": one longer number
            if i + size < n and groups[i + size].sep in (".", "-", "/"):
                continue
            if not cue and not (intl_prefix and i == 0) and (
                    i > 0 and not win[0].sep.strip() or i + size < n and not groups[i + size].sep.strip()):
                continue  # a few columns of a numeric table row ("001 0100 024 20 14"), issue 29
            intl = bool(intl_prefix) and i == 0
            plan = _phone_layout(win, intl, cue)
            if plan is None:
                continue
            if negative or (i > 0 and _NEG_CUE_RE.search(text[max(0, win[0].start - 24):win[0].start])):
                return None
            s = body_start if (intl and i == 0) else win[0].start
            return Span(s, win[-1].end, "phone", plan)
    return None


def _resolve(cands: list[Span]) -> list[Span]:
    """Keep the highest-priority, then longest, candidates; drop what overlaps them."""
    if not cands:
        return []
    cands.sort(key=lambda s: (_PRIORITY[s.type], -(s.end - s.start), s.start))
    kept: list[Span] = []
    for s in cands:
        if all(s.end <= k.start or s.start >= k.end for k in kept):
            kept.append(s)
    kept.sort()
    return kept
