"""A labelled PII test set: planted values with exact spans, in real sentences.

Why it exists: the ``pii`` stage must be measured, not believed. No public labelled
set covers our types and the traps that matter for pretraining text, so this module
writes one, deterministically from a seed:

* carrier sentences come from the shared corpora (WikiText-2, CCNet, StackExchange),
  kept only when a conservative filter independent of the detectors finds nothing
  PII-like in them (no ``x@y``, URL, long digit run or long token);
* **positives** – hundreds, across every type and the formats people write them in
  (US/UK/DE/FR/international phones, card networks and groupings, IBANs of many
  countries, the common secret formats, ...) – are planted in phrases between the
  carrier sentences, and their exact ``[start, end)`` spans recorded;
* **hard negatives** – versions, dates, timestamps, UUIDs, hashes, ISBNs, math, code
  literals, prices, phone-like serials, checksum-failing cards/IBANs, invalid SSNs,
  private IPs, documentation addresses, placeholder passwords – are planted the
  same way, their spans recorded as "must not be reported".

Span conventions (what the gold covers): an e-mail without ``mailto:`` or brackets;
an IP without port, brackets or prefix length; a phone with its ``+``, parentheses
and ``(0)``; a card, IBAN or SSN with its inner separators; a token with its prefix;
the AWS secret or Slack webhook path alone; a key block from ``-----BEGIN`` to the
closing dashes; the password alone inside a URL or connection string.

Run it as a script to print a summary and a few sample documents.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run as a script: keep bench/ off sys.path (see pii_quality.py)
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import base64  # noqa: E402
import hashlib  # noqa: E402
import ipaddress  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import string  # noqa: E402
import uuid  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """``$DATAPIPE_SHARED`` or ``<repo>/../shared``; fails loudly when missing."""
    d = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()
    if not (d / "corpora").is_dir():
        raise FileNotFoundError(f"shared data not found at {d}: set DATAPIPE_SHARED to the shared/ folder")
    return d


@dataclass(frozen=True)
class Gold:
    start: int
    end: int
    type: str
    fmt: str  # e.g. "phone/de-national"


@dataclass(frozen=True)
class Negative:
    start: int
    end: int
    kind: str  # e.g. "version"


@dataclass(frozen=True)
class Doc:
    id: str
    source: str  # which corpus the carrier sentences came from
    text: str
    gold: tuple[Gold, ...]
    negatives: tuple[Negative, ...]


# -- carrier sentences -----------------------------------------------------------

_UNSAFE = re.compile(
    r"[A-Za-z0-9]@|://|www\.|\d[\d .\-/()]{6,}\d|[A-Za-z0-9+/=_\-]{28,}|password|passwd|pwd"
    r"|\b[A-Z]{2}\d{2}|-----|\b(?:AKIA|ASIA|ghp_|xox|sk_|sk-|AIza|eyJ)|::", re.I)


def _sentences(text: str) -> list[str]:
    out = []
    for para in re.split(r"\n+", text):
        for s in re.split(r"(?<=[.!?])\s+(?=[A-Z¿¡])", para.strip()):
            s = s.strip()
            if 40 <= len(s) <= 320 and not _UNSAFE.search(s):
                out.append(s)
    return out


def load_carriers(shared: Path) -> dict[str, list[str]]:
    """Clean sentences per corpus, in file order (deterministic)."""
    corp = shared / "corpora"
    wiki = []
    for line in (corp / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("="):
            wiki.extend(s for s in re.split(r"(?<= \.) (?=[A-Z])", line) if 40 <= len(s) <= 320 and not _UNSAFE.search(s))
    ccnet = []
    for f in sorted((corp / "ccnet").glob("cc_en_head-*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            ccnet.extend(_sentences(json.loads(line)["text"]))
    se = []
    for line in (corp / "stackexchange" / "redpajama-stackexchange.jsonl").read_text(encoding="utf-8").splitlines():
        se.extend(_sentences(json.loads(line)["text"]))
    return {"wiki": wiki, "ccnet": ccnet, "stackexchange": se}


# -- value generators -------------------------------------------------------------

_FIRST = ["john", "mary", "li", "ahmed", "sofia", "lukas", "chloe", "raj", "yuki", "olga", "pierre",
          "anna", "mohammed", "emma", "carlos", "fatima", "jan", "ines", "tom", "zoe", "bjorn", "amelie"]
_LAST = ["smith", "mueller", "dubois", "wang", "garcia", "kowalski", "rossi", "tanaka", "okafor", "nguyen",
         "schmidt", "martin", "silva", "ivanova", "jensen", "oconnor", "patel", "kim", "novak", "haddad"]
_DOMAINS = ["gmail.com", "yahoo.co.uk", "outlook.de", "web.de", "free.fr", "uni-heidelberg.de", "mit.edu",
            "acme-robotics.io", "mail.ru", "proton.me", "posteo.net", "orange.fr", "bigpond.com.au",
            "cityofboston.gov", "hotmail.com", "gmx.at", "startup.tech", "studio-lumen.studio",
            "comcast.net", "t-online.de", "libero.it", "ox.ac.uk", "icloud.com", "company.co.jp",
            "dept.uni-muenchen.de", "kanzlei-weber.legal", "bakery.boutique", "xn--80ak6aa92e.xn--p1ai",
            "sympatico.ca", "naver.com", "qq.com", "seznam.cz", "wp.pl", "telenet.be", "bluewin.ch",
            "anime-club.moe"]


class _Gen:
    """Random but valid values of every type, and the phrases that carry them."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    # helpers
    def digits(self, n: int, first: str = string.digits) -> str:
        return self.r.choice(first) + "".join(self.r.choice(string.digits) for _ in range(n - 1))

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def pick(self, options):
        return self.r.choice(options)

    # email
    def email(self) -> tuple[str, str]:
        f, l, d = self.pick(_FIRST), self.pick(_LAST), self.pick(_DOMAINS)
        style = self.r.randrange(8)
        if style == 0:
            local, fmt = f"{f}.{l}", "first.last"
        elif style == 1:
            local, fmt = f"{f}+{self.pick(['news', 'shop', 'work', 'git'])}", "plus-tag"
        elif style == 2:
            local, fmt = f"{f[0]}{l}{self.r.randrange(1, 99)}", "digits"
        elif style == 3:
            local, fmt = f"{f}_{l}-{self.pick(['jr', 'de', 'x'])}", "underscore-hyphen"
        elif style == 4:
            local, fmt = f"{f.capitalize()}.{l.capitalize()}", "capitalised"
            d = d.upper() if self.r.random() < 0.5 else d
        elif style == 5:
            local, fmt = f"{l}", "surname"
            d = f"{self.pick(['mail', 'staff', 'students', 'lists'])}.{d}"
        elif style == 6:
            local, fmt = f"{f}.{l[0]}", "short"
        else:
            local, fmt = f"{f[0]}.o'{l}", "apostrophe"
        return f"{local}@{d}", "email/" + fmt

    # ip
    def ipv4(self) -> tuple[str, str]:
        while True:
            ip = ipaddress.IPv4Address(self.r.randrange(1 << 24, 224 << 24))
            a = str(ip).split(".")
            if ip.is_global and not ip.is_reserved and all(int(p) > 9 for p in a[:2]):
                if not any(ip in ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")):
                    return str(ip), "ip/v4"

    def ip_extra(self) -> tuple[str, str, str]:
        """Harder IP layouts: (template, value, fmt)."""
        v4 = self.ipv4()[0]
        kind = self.r.randrange(5)
        if kind == 0:
            return "the client at {v} timed out", "::ffff:" + v4, "ip/v6-mapped-v4"
        if kind == 1:
            return "Connecting to {v}:443 ...", v4, "ip/v4-port"
        if kind == 2:
            dns = self.pick(["8.8.8.8", "1.1.1.1", "9.9.9.9", "8.8.4.4"])
            return "Set the DNS server to {v} and retry.", dns, "ip/v4-dns"
        if kind == 3:
            v6 = self.ipv6()[0]
            return "open http://[{v}]/admin", v6.lower(), "ip/v6-url"
        return "X-Forwarded-For: {v}, 10.0.0.2", v4, "ip/v4-header"

    def ipv6(self) -> tuple[str, str]:
        while True:
            hi = self.r.choice([0x2001, 0x2400, 0x2600, 0x2800, 0x2a00, 0x2a02, 0x2a03, 0x2c0f])
            hi += self.r.randrange(0, 0xff) if hi != 0x2001 else 0
            groups = [hi] + [self.r.randrange(0, 0x10000) for _ in range(7)]
            if self.r.random() < 0.5:  # runs of zeros so the compressed form has ::
                k = self.r.randrange(3, 6)
                for j in range(k, 7):
                    groups[j] = 0
            ip = ipaddress.IPv6Address(":".join(f"{g:x}" for g in groups))
            if ip.is_global and ip not in ipaddress.ip_network("2001:db8::/32") and ip in ipaddress.ip_network("2000::/3"):
                style = self.r.randrange(3)
                if style == 0:
                    return ip.compressed, "ip/v6-compressed"
                if style == 1:
                    return ip.exploded, "ip/v6-full"
                return ip.compressed.upper(), "ip/v6-upper"

    # phone
    def _nanp(self) -> tuple[str, str, str]:
        while True:
            area = self.digits(3, "23456789")
            exch = self.digits(3, "23456789")
            if area[1:] != "11" and area[1] != "9" and exch[1:] != "11":
                return area, exch, self.digits(4)

    def phone(self) -> tuple[str, str]:
        r = self.r.randrange(28)
        if r >= 22:
            return self.phone_extra()
        if r < 6:
            a, e, n = self._nanp()
            fmts = [(f"({a}) {e}-{n}", "us-paren"), (f"{a}-{e}-{n}", "us-dash"), (f"{a}.{e}.{n}", "us-dot"),
                    (f"+1 {a} {e} {n}", "us-intl"), (f"+1-{a}-{e}-{n}", "us-intl-dash"),
                    (f"1-{a}-{e}-{n}", "us-1-dash"), (f"+1 ({a}) {e}-{n}", "us-intl-paren")]
            v, f = self.pick(fmts)
            return v, "phone/" + f
        if r < 10:  # UK
            kind = self.r.randrange(5)
            if kind == 0:
                s = self.digits(8, "378")
                return f"020 {s[:4]} {s[4:]}", "phone/uk-london"
            if kind == 1:
                s = self.digits(8, "378")
                return f"+44 20 {s[:4]} {s[4:]}", "phone/uk-intl"
            if kind == 2:
                s = self.digits(8, "378")
                return f"+44 (0)20 {s[:4]} {s[4:]}", "phone/uk-intl-trunk"
            if kind == 3:
                s = self.digits(9)
                return f"07{s[:3]} {s[3:]}", "phone/uk-mobile"
            s = self.digits(7, "2345678")
            return f"0161 {s[:3]} {s[3:]}", "phone/uk-manchester"
        if r < 14:  # Germany
            kind = self.r.randrange(6)
            if kind == 0:
                return f"030 {self.digits(8, '23456789')}", "phone/de-berlin"
            if kind == 1:
                s = self.digits(8, "23456789")
                return f"+49 30 {s}", "phone/de-intl"
            if kind == 2:
                return f"0{self.pick(['151', '160', '170', '171', '176', '178'])} {self.digits(7, '123456789')}", "phone/de-mobile"
            if kind == 3:
                return f"089/{self.digits(7, '123456789')}", "phone/de-slash"
            if kind == 4:
                s = self.digits(7, "23456789")
                return f"(0221) {s[:3]} {s[3:5]} {s[5:]}", "phone/de-paren"
            s = self.digits(7, "23456789")
            return f"+49 (0)69 {s}", "phone/de-intl-trunk"
        if r < 17:  # France
            d = self.digits(8)
            p = [d[i:i + 2] for i in range(0, 8, 2)]
            a = self.pick("1234567")
            kind = self.r.randrange(5)
            if kind == 0:
                return f"0{a} {' '.join(p)}", "phone/fr-spaces"
            if kind == 1:
                return f"0{a}.{'.'.join(p)}", "phone/fr-dots"
            if kind == 2:
                return f"+33 {a} {' '.join(p)}", "phone/fr-intl"
            if kind == 3:
                return f"+33 (0){a} {' '.join(p)}", "phone/fr-intl-trunk"
            return f"0033 {a} {' '.join(p)}", "phone/fr-00"
        # other international formats
        fmts = [
            lambda: (f"+91 {self.digits(5, '6789')} {self.digits(5)}", "in"),
            lambda: (f"+81 3-{self.digits(4)}-{self.digits(4)}", "jp"),
            lambda: (f"+61 2 {self.digits(4, '2345689')} {self.digits(4)}", "au"),
            lambda: (f"+86 10 {self.digits(4, '2345678')} {self.digits(4)}", "cn"),
            lambda: (f"+7 495 {self.digits(3, '1234567')}-{self.digits(2)}-{self.digits(2)}", "ru"),
            lambda: (f"+34 {self.digits(3, '6789')} {self.digits(3)} {self.digits(3)}", "es"),
            lambda: (f"+39 06 {self.digits(4)} {self.digits(4)}", "it"),
            lambda: (f"+31 20 {self.digits(3, '123456789')} {self.digits(4)}", "nl"),
            lambda: (f"+55 11 9{self.digits(4)}-{self.digits(4)}", "br"),
            lambda: (f"+46 8 {self.digits(3, '123456789')} {self.digits(3)} {self.digits(2)}", "se"),
            lambda: (f"+41 44 {self.digits(3, '123456789')} {self.digits(2)} {self.digits(2)}", "ch"),
            lambda: (f"+48 22 {self.digits(3, '123456789')} {self.digits(2)} {self.digits(2)}", "pl"),
            lambda: (f"+353 1 {self.digits(3, '2345678')} {self.digits(4)}", "ie"),
            lambda: (f"+971 4 {self.digits(3, '2345678')} {self.digits(4)}", "ae"),
            lambda: (f"+65 {self.digits(4, '689')} {self.digits(4)}", "sg"),
            lambda: (f"+27 21 {self.digits(3, '123456789')} {self.digits(4)}", "za"),
            lambda: (f"+52 55 {self.digits(4, '123456789')} {self.digits(4)}", "mx"),
            lambda: (f"+44{self.digits(10, '7')}", "uk-compact"),
            lambda: (f"+49{self.digits(10, '1')}", "de-compact"),
        ]
        v, f = self.pick(fmts)()
        return v, "phone/intl-" + f

    def phone_extra(self) -> tuple[str, str]:
        """Layouts the main generator does not produce."""
        a, e, n = self._nanp()
        d8 = self.digits(8, "23456789")
        p = [self.digits(2) for _ in range(4)]
        fmts = [
            (f"({a}){e}-{n}", "us-paren-nospace"), (f"{a} {e} {n}", "us-spaces"), (f"+1.{a}.{e}.{n}", "us-intl-dots"),
            (f"1 ({a}) {e}-{n}", "us-1-paren"), (f"(+44) 20 {d8[:4]} {d8[4:]}", "uk-paren-cc"),
            (f"+44 (0) 20 {d8[:4]} {d8[4:]}", "uk-trunk-spaced"), (f"020-{d8[:4]}-{d8[4:]}", "uk-dashes"),
            (f"+44{self.digits(10, '12')}", "uk-compact-landline"), (f"+49-30-{d8}", "de-intl-dashes"),
            (f"0049 30 {d8}", "de-00"), (f"030 / {d8[:3]} {d8[3:6]} {d8[6:]}", "de-slash-spaced"),
            (f"0171-{self.digits(7, '123456789')}", "de-mobile-dash"), (f"+49 (0) 30 {d8[:3]} {d8[3:6]} {d8[6:]}", "de-trunk-spaced"),
            (f"0{self.pick('12345')}-{'-'.join(p)}", "fr-dashes"), (f"+33 6 {' '.join(p)}", "fr-mobile-intl"),
            (f"+34 91{self.digits(1)} {self.digits(2)} {self.digits(2)} {self.digits(2)}", "es-intl"),
            (f"06 {self.digits(4, '123456789')} {self.digits(4)}", "it-national"),
            (f"020-{self.digits(3, '123456789')} {self.digits(4)}", "nl-mixed"),
            (f"(02) {self.digits(4, '2345689')} {self.digits(4)}", "au-national"),
            (f"+91-{self.digits(5, '6789')}-{self.digits(5)}", "in-dashes"), (f"+86 138 {self.digits(4)} {self.digits(4)}", "cn-mobile"),
            (f"03-{self.digits(4, '123456789')}-{self.digits(4)}", "jp-national"),
            (f"(11) 9{self.digits(4)}-{self.digits(4)}", "br-national"), (f"tel:+1{a}{e}{n}", "tel-uri"),
            (f"({a}) 555-01{self.digits(2)}", "us-555-01xx"),
            (f"{self.digits(3, '6')} {self.digits(3)} {self.digits(3)}", "es-mobile-national"),
        ]
        v, f = self.pick(fmts)
        if f == "tel-uri":
            return v[4:], "phone/" + f  # the gold excludes "tel:"; the phrase adds it back
        return v, "phone/" + f

    # payment cards
    def card(self) -> tuple[str, str]:
        net = self.pick(["visa", "visa", "mastercard", "mastercard2", "amex", "discover", "jcb",
                         "diners", "unionpay", "visa13"])
        prefix, n = {
            "visa": ("4", 16), "visa13": ("4", 13), "mastercard": (self.pick(["51", "52", "53", "54", "55"]), 16),
            "mastercard2": (str(self.r.randrange(2221, 2721)), 16), "amex": (self.pick(["34", "37"]), 15),
            "discover": (self.pick(["6011", "65"]), 16), "jcb": (str(self.r.randrange(3528, 3590)), 16),
            "diners": (self.pick(["36", "38"]), 14), "unionpay": ("62", 16),
        }[net]
        body = prefix + self.digits(n - len(prefix) - 1)
        for d in string.digits:
            if _luhn(body + d):
                num = body + d
                break
        if n == 15:
            groups = [num[:4], num[4:10], num[10:]]
        elif n == 14:
            groups = [num[:4], num[4:10], num[10:]]
        elif n == 13:
            groups = [num]
        else:
            groups = [num[i:i + 4] for i in range(0, n, 4)]
        style = self.r.randrange(3) if len(groups) > 1 else 2
        if style == 0:
            return " ".join(groups), f"card/{net}-spaces"
        if style == 1:
            return "-".join(groups), f"card/{net}-dashes"
        return num, f"card/{net}-compact"

    # IBAN
    _IBAN_SPECS = {  # BBAN layout: n digit, a upper letter, c alnum
        "DE": "18n", "GB": "4a14n", "FR": "10n11c2n", "ES": "20n", "IT": "1a10n12c", "NL": "4a10n",
        "CH": "5n12c", "AT": "16n", "BE": "12n", "PL": "24n", "SE": "20n", "NO": "11n", "DK": "14n",
        "IE": "4a14n", "PT": "21n", "LU": "3n13c", "FI": "14n", "CZ": "20n", "HR": "17n", "RO": "4a16c",
        "SA": "2n18c", "AE": "19n", "TR": "5n1n16c", "GR": "7n16c", "HU": "24n",
    }

    def iban(self) -> tuple[str, str]:
        cc = self.pick(sorted(self._IBAN_SPECS))
        bban = ""
        for count, kind in re.findall(r"(\d+)([nac])", self._IBAN_SPECS[cc]):
            alpha = {"n": string.digits, "a": string.ascii_uppercase, "c": string.digits + string.ascii_uppercase}[kind]
            bban += self.chars(alpha, int(count))
        check = 98 - _mod97(bban + cc + "00")
        code = f"{cc}{check:02d}{bban}"
        if self.r.random() < 0.65:
            return " ".join(code[i:i + 4] for i in range(0, len(code), 4)), f"iban/{cc}-grouped"
        return code, f"iban/{cc}-compact"

    # SSN
    def ssn(self) -> tuple[str, str, bool]:
        while True:
            area = self.r.randrange(1, 900)
            if area != 666:
                break
        a, g, s = f"{area:03d}", f"{self.r.randrange(1, 100):02d}", f"{self.r.randrange(1, 10000):04d}"
        style = self.r.randrange(4)
        if style <= 1:
            return f"{a}-{g}-{s}", "ssn/dashed", False
        if style == 2:
            return f"{a} {g} {s}", "ssn/spaced", True
        return f"{a}{g}{s}", "ssn/compact", True

    # secrets
    def api_key(self) -> tuple[str, str]:
        up, al = string.ascii_uppercase + "234567", string.ascii_letters + string.digits
        kind = self.r.randrange(14)
        if kind <= 1:
            return self.pick(["AKIA", "ASIA"]) + self.chars(up, 16), "api_key/aws-access-key-id"
        if kind == 2:
            return self.chars(al + "/+", 40), "api_key/aws-secret"
        if kind == 3:
            return self.pick(["ghp_", "gho_", "ghs_"]) + self.chars(al, 36), "api_key/github"
        if kind == 4:
            return "github_pat_" + self.chars(al, 22) + "_" + self.chars(al, 59), "api_key/github-pat"
        if kind == 5:
            return (f"{self.pick(['xoxb', 'xoxp'])}-{self.digits(12, '123456789')}-{self.digits(13, '123456789')}-"
                    f"{self.chars(al, 24)}"), "api_key/slack"
        if kind == 6:
            return self.pick(["sk_live_", "rk_live_", "sk_test_"]) + self.chars(al, self.pick([24, 34, 99])), "api_key/stripe"
        if kind == 7:
            return "AIza" + self.chars(al + "-_", 35), "api_key/google"
        if kind == 8:
            return "sk-" + self.chars(al, 48), "api_key/openai"
        if kind == 9:
            return "sk-proj-" + self.chars(al + "-_", 120), "api_key/openai-project"
        if kind == 10:
            return "glpat-" + self.chars(al + "-_", 20), "api_key/gitlab"
        if kind == 11:
            return "npm_" + self.chars(al, 36), "api_key/npm"
        if kind == 12:
            return "hf_" + self.chars(string.ascii_letters, 34), "api_key/huggingface"
        return f"SG.{self.chars(al + '-_', 22)}.{self.chars(al + '-_', 43)}", "api_key/sendgrid"

    def private_key(self) -> tuple[str, str, str]:
        label = self.pick(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY",
                           "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"])
        raw = bytes(self.r.randrange(256) for _ in range(self.r.randrange(90, 1200)))
        b64 = base64.b64encode(raw).decode()
        lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
        head = f"-----BEGIN {label}-----"
        extra = ""
        if label == "RSA PRIVATE KEY" and self.r.random() < 0.3:
            extra = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC," + self.chars("0123456789ABCDEF", 32) + "\n\n"
        if label == "PGP PRIVATE KEY BLOCK":
            extra = "\n"
        truncated = self.r.random() < 0.15
        if truncated:
            return head + "\n" + extra + "\n".join(lines[:4]), "private_key/" + label.lower().replace(" ", "-") + "-truncated", "\n..."
        return f"{head}\n{extra}" + "\n".join(lines) + f"\n-----END {label}-----", "private_key/" + label.lower().replace(" ", "-"), ""

    def jwt(self) -> tuple[str, str]:
        header = self.pick([{"alg": "HS256", "typ": "JWT"}, {"typ": "JWT", "alg": "RS256"},
                            {"alg": "ES256", "kid": self.chars(string.hexdigits.lower(), 16)}, {"alg": "HS512"}])
        payload = {"sub": self.digits(10), "name": f"{self.pick(_FIRST).title()} {self.pick(_LAST).title()}",
                   "iat": 1_600_000_000 + self.r.randrange(10**8)}
        if self.r.random() < 0.5:
            payload["email"] = self.email()[0]
        sig_len = {"HS256": 43, "RS256": 342, "ES256": 86, "HS512": 86}[header["alg"]]
        enc = lambda o: base64.urlsafe_b64encode(json.dumps(o, separators=(",", ":")).encode()).decode().rstrip("=")  # noqa: E731
        return f"{enc(header)}.{enc(payload)}.{self.chars(string.ascii_letters + string.digits + '-_', sig_len)}", "jwt/" + header["alg"]

    def password(self) -> str:
        words = ["sunflower", "Tr0ub4dor", "correct", "horse", "Battery", "dragon", "Kx9", "m0nkey", "Winter",
                 "zebra", "qu4ntum", "Pa55", "lemon", "Orbit"]
        pw = self.pick(words) + self.pick(["", "!", "$", "_", "-", "%", "&", "*", "~"]) + self.digits(self.r.randrange(2, 6))
        if self.r.random() < 0.4:
            pw = self.chars(string.ascii_letters + string.digits, self.r.randrange(10, 24))
        return pw


def _luhn(d: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(d)):
        x = int(ch) * (2 if i % 2 else 1)
        total += x - 9 if x > 9 else x
    return total % 10 == 0


def _mod97(s: str) -> int:
    return int("".join(str(int(c, 36)) for c in s)) % 97


# -- positive phrases ---------------------------------------------------------------
# Each maker returns (phrase, value start, value end, fmt) for one planted value.

Phrase = tuple[str, int, int, str]


def _wrap(template: str, value: str, fmt: str) -> Phrase:
    pre, post = template.split("{v}")
    return pre + value + post, len(pre), len(pre) + len(value), fmt


def _p_email(g: _Gen) -> Phrase:
    v, fmt = g.email()
    t = g.pick(["For questions write to {v}.", "Contact: {v}", "E-mail {v} for the full schedule.",
                "Send your CV to <{v}> before Friday.", "(reach me at {v})", "mailto:{v}",
                "Her address, {v}, was on the flyer.", "Questions? {v}", "Corresponding author: {v}",
                "Bitte schreiben Sie an {v}.", "Écrivez-nous : {v}", "cc: {v}; bcc: none"])
    return _wrap(t, v, fmt)


def _p_ip(g: _Gen) -> Phrase:
    if g.r.random() < 0.25:
        t, v, fmt = g.ip_extra()
        return _wrap(t, v, fmt)
    v, fmt = g.ipv4() if g.r.random() < 0.6 else g.ipv6()
    if fmt == "ip/v4":
        t = g.pick(["The request came from {v} at noon.", "Failed password for root from {v} port 22 ssh2",
                    "Our server ({v}) was down for an hour.", "curl http://{v}:8080/status", "ping {v}",
                    "The attacker used {v} and later another host.", "Allow traffic from {v}/32 only.",
                    "Resolved to {v}.", "{v} - - [07/Apr/2023:15:24:38 +0000] \"GET / HTTP/1.1\" 200",
                    "nameserver {v}", "Die IP-Adresse {v} wurde gesperrt."])
    else:
        t = g.pick(["The host answers on {v} as well.", "connect to [{v}]:443 failed", "AAAA record: {v}",
                    "Client {v} requested the page.", "Listening on {v} port 8443.", "ping6 {v}"])
    return _wrap(t, v, fmt)


def _p_phone(g: _Gen) -> Phrase:
    v, fmt = g.phone()
    if fmt == "phone/tel-uri":
        return _wrap(g.pick(["<a href=\"tel:{v}\">Call</a>", "tel:{v}"]), v, fmt)
    t = g.pick(["Call us on {v}.", "Phone: {v}", "Tel. {v}", "For bookings ring {v} after six.",
                "Her number is {v}, she said.", "Contact the front desk at {v} for details.",
                "Fax {v}", "Mobile: {v}", "Téléphone : {v}", "Telefon: {v}", "Reservations: {v}.",
                "You can reach the office at {v} or by letter.", "Questions? Give us a call at {v}!",
                "{v} (office hours 9-5)", "WhatsApp {v}", "Hotline {v}"])
    return _wrap(t, v, fmt)


def _p_card(g: _Gen) -> Phrase:
    v, fmt = g.card()
    t = g.pick(["I paid with card {v} and never got the goods.", "Card number: {v}", "cc {v} exp 09/27 cvv 123",
                "Please charge {v} for the remaining balance.", "My Visa ({v}) was declined twice.",
                "Kartennummer {v}", "credit card {v} is on file", "Use {v} for the deposit."])
    return _wrap(t, v, fmt)


def _p_iban(g: _Gen) -> Phrase:
    v, fmt = g.iban()
    t = g.pick(["IBAN: {v}", "Please transfer the fee to {v} by Monday.", "Bankverbindung: IBAN {v}, BIC COBADEFFXXX",
                "Account {v} (reference: invoice)", "Virement sur le compte {v}.", "Pay to IBAN {v} within 14 days."])
    return _wrap(t, v, fmt)


def _p_ssn(g: _Gen) -> Phrase:
    v, fmt, needs_cue = g.ssn()
    if needs_cue:
        t = g.pick(["SSN: {v}", "Social Security Number {v}", "her SSN is {v}", "SSN# {v}"])
    else:
        t = g.pick(["SSN: {v}", "Social security number {v} was on the form.", "The applicant ({v}) was approved.",
                    "He wrote {v} on the tax return.", "ssn={v}"])
    return _wrap(t, v, fmt)


def _p_api_key(g: _Gen) -> Phrase:
    v, fmt = g.api_key()
    if fmt == "api_key/aws-secret":
        t = g.pick(["aws_secret_access_key = {v}", "AWS_SECRET_ACCESS_KEY={v}", '"aws_secret_access_key": "{v}"'])
    else:
        t = g.pick(["export API_TOKEN={v}", 'token = "{v}"', "I accidentally pushed {v} to the repo.",
                    '{{"key": "{v}"}}', "Authorization: token {v}", "The key {v} was revoked yesterday.",
                    "--header 'X-Api-Key: {v}'", "api_key: {v}"]).replace("{{", "{").replace("}}", "}")
    return _wrap(t, v, fmt)


def _p_slack_hook(g: _Gen) -> Phrase:
    path = f"T{g.chars(string.ascii_uppercase + string.digits, 8)}/B{g.chars(string.ascii_uppercase + string.digits, 8)}/{g.chars(string.ascii_letters + string.digits, 24)}"
    pre = "curl -X POST https://hooks.slack.com/services/"
    return pre + path + " -d @msg.json", len(pre), len(pre) + len(path), "api_key/slack-webhook"


def _p_private_key(g: _Gen) -> Phrase:
    v, fmt, tail = g.private_key()
    pre = g.pick(["Here is my key file:\n", "id_rsa contains:\n", "\n", "Server config below.\n"])
    return pre + v + tail + "\n", len(pre), len(pre) + len(v), fmt


def _p_jwt(g: _Gen) -> Phrase:
    v, fmt = g.jwt()
    t = g.pick(["Authorization: Bearer {v}", "token={v}", '{{"access_token": "{v}"}}',
                "The cookie held {v} until logout.", "curl -H 'Authorization: Bearer {v}' /api"]).replace("{{", "{").replace("}}", "}")
    return _wrap(t, v, fmt)


def _p_password(g: _Gen) -> Phrase:
    pw = g.password()
    user = g.pick(["admin", "app", "root", "deploy", "svc_user", "jdoe"])
    host = g.pick(["db.internal", "10.0.3.7", "prod-db.acme-robotics.io", "localhost", "mongo0.cluster.local"])
    kind = g.r.randrange(8)
    if kind == 0:
        pre, post, fmt = f"postgres://{user}:", f"@{host}:5432/app", "url-postgres"
    elif kind == 1:
        pre, post, fmt = f"mysql://{user}:", f"@{host}/shop", "url-mysql"
    elif kind == 2:
        pre, post, fmt = f"mongodb+srv://{user}:", f"@{host}/?retryWrites=true", "url-mongodb"
    elif kind == 3:
        pre, post, fmt = "redis://:", f"@{host}:6379/0", "url-redis"
    elif kind == 4:
        pre, post, fmt = f"ftp://{user}:", f"@{host}/pub", "url-ftp"
    elif kind == 5:
        pre, post, fmt = f"Server={host};Database=app;User Id={user};Password=", ";", "conn-ado"
    elif kind == 6:
        pre, post, fmt = f"host={host} dbname=app user={user} password=", " sslmode=require", "conn-libpq"
    else:
        pre, post, fmt = f"jdbc:mysql://{host}:3306/app?user={user}&password=", "&useSSL=true", "conn-jdbc"
    lead = g.pick(["DATABASE_URL=", "Connection string: ", "I use ", "conn = connect('", ""])
    trail = "')" if lead.startswith("conn") else ""
    phrase = lead + pre + pw + post + trail
    s = len(lead) + len(pre)
    return phrase, s, s + len(pw), "password/" + fmt


POSITIVE_MAKERS: dict[str, Callable[[_Gen], Phrase]] = {
    "email": _p_email, "ip": _p_ip, "phone": _p_phone, "card": _p_card, "iban": _p_iban, "ssn": _p_ssn,
    "api_key": _p_api_key, "private_key": _p_private_key, "jwt": _p_jwt, "password": _p_password,
}


# -- hard negatives --------------------------------------------------------------------


def _neg_phrases(g: _Gen) -> list[tuple[str, str, str]]:
    """(kind, template, value) for one round of hard negatives; the value must not be
    reported."""
    r = g.r
    d4 = lambda: g.digits(4, "123456789")  # noqa: E731
    year = str(r.randrange(1950, 2030))
    mo, da = f"{r.randrange(1, 13):02d}", f"{r.randrange(1, 29):02d}"
    hh, mm, ss = f"{r.randrange(24):02d}", f"{r.randrange(60):02d}", f"{r.randrange(60):02d}"
    ver4 = ".".join(str(r.randrange(0, 20)) for _ in range(4))
    bad_card = g.card()[0]
    bad_card = bad_card[:-1] + str((int(bad_card[-1]) + 1 + r.randrange(9)) % 10)
    iban_v = g.iban()[0]
    bad_iban = iban_v[:2] + f"{(int(iban_v[2:4]) + 1 + r.randrange(50)) % 100:02d}" + iban_v[4:]
    if bad_iban.replace(" ", "")[2:4] in ("00", "01", "99"):
        bad_iban = iban_v[:2] + "50" + iban_v[4:]
    if _mod97((bad_iban.replace(" ", "")[4:] + bad_iban[:4])) == 1:
        bad_iban = iban_v[:2] + f"{(int(iban_v[2:4]) + 1) % 97:02d}" + iban_v[4:]
    isbn13 = "978" + g.digits(9)
    isbn13 += str((10 - sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(isbn13)) % 10) % 10)
    isbn10 = g.digits(9)
    c10 = (11 - sum((10 - i) * int(c) for i, c in enumerate(isbn10)) % 11) % 11
    isbn10 += "X" if c10 == 10 else str(c10)
    a, e, n = g._nanp()
    key_up = string.ascii_uppercase + "234567"
    items = [
        ("version", "Upgrade to version {v} before filing a bug.", ver4),
        ("version", "Tested on release {v} and later.", ver4),
        ("version", "Chrome {v} fixed the regression.", f"{r.randrange(90, 125)}.0.{r.randrange(4000, 7000)}.{r.randrange(10, 200)}"),
        ("version", "the build {v} shipped last week", f"{r.randrange(1, 11)}.{r.randrange(0, 4)}.{r.randrange(7000, 22000)}.{r.randrange(1, 30000)}"),
        ("version", "pip install requests=={v}", f"2.{r.randrange(20, 32)}.{r.randrange(0, 5)}"),
        ("date", "It opened on {v} to mixed reviews.", f"{year}-{mo}-{da}"),
        ("date", "Datum: {v}", f"{da}.{mo}.{year}"),
        ("date", "Filed {v} in the county office.", f"{mo}/{da}/{year}"),
        ("date", "Archived {v}.", f"{year}/{mo}/{da}"),
        ("date", "Date range {v} inclusive.", f"{da}.{mo}.{year} - {da}.{mo}.{int(year) + 1}"),
        ("timestamp", "Logged at {v} by the crawler.", f"{year}-{mo}-{da}T{hh}:{mm}:{ss}+00:00"),
        ("timestamp", "The event fired at {v}.", f"{year}-{mo}-{da} {hh}:{mm}:{ss}"),
        ("timestamp", "epoch {v}", str(r.randrange(1_000_000_000, 1_800_000_000))),
        ("timestamp", "created_ms={v}", str(r.randrange(1_000_000_000_000, 1_800_000_000_000))),
        ("timestamp", "Modified {v}.", f"{da}.{mo}.{year} {hh}:{mm}"),
        ("uuid", "request id {v} failed", str(uuid.UUID(int=r.getrandbits(128), version=4))),
        ("git_hash", "Fixed in commit {v}.", hashlib.sha1(str(r.random()).encode()).hexdigest()),
        ("git_hash", "see {v} for the revert", hashlib.sha1(str(r.random()).encode()).hexdigest()[:7]),
        ("sha256", "checksum sha256:{v}", hashlib.sha256(str(r.random()).encode()).hexdigest()),
        ("isbn", "ISBN {v}", f"{isbn13[:3]}-{isbn13[3]}-{isbn13[4:7]}-{isbn13[7:12]}-{isbn13[12]}"),
        ("isbn", "ISBN-10 {v}", f"{isbn10[0]}-{isbn10[1:4]}-{isbn10[4:9]}-{isbn10[9]}"),
        ("isbn", "(ISBN {v})", isbn13),
        ("math", "The answer is {v}.", f"{r.randrange(1, 9)}.{g.digits(14)}"),
        ("math", "We have 2^32 = {v} states.", "4294967296"),
        ("math", "x = {v} after rounding", f"{r.randrange(10, 99)} {g.digits(3)} {g.digits(3)}"),
        ("math", "the sum {v} holds", f"{r.randrange(1, 50)} + {r.randrange(1, 50)} + {r.randrange(1, 50)} = {r.randrange(50, 150)}"),
        ("math", "mod {v}", "1000000007"),
        ("math", "float error: {v}", "0.30000000000000004"),
        ("math", "the sequence {v} continues", " ".join(f"{k:02d}" for k in range(5, 30, 5))),
        ("code", "int x = {v};", "2147483647"),
        ("code", "MAX = {v}", "9223372036854775807"),
        ("code", "mask {v} again", "0xDEADBEEF"),
        ("code", "use {v} in the decorator", "@property"),
        ("code", "numpy: y = x @ W.T", "@ W.T"),
        ("code", "npm i {v}", f"lodash@4.17.{r.randrange(10, 22)}"),
        ("code", "git clone {v}", "git@github.com:acme/widgets.git"),
        ("code", "<img src='{v}'>", "logo@2x.png"),
        ("code", "ssh {v}", "deploy@localhost"),
        ("code", "bits {v}", "0100 0011 0100 0000"),
        ("price", "It costs {v} today.", f"${r.randrange(1, 9)},{g.digits(3)}.{g.digits(2)}"),
        ("price", "Preis: {v}", f"{r.randrange(10, 999)},{g.digits(2)} €"),
        ("price", "a budget of USD {v}", f"{r.randrange(10, 99)} {g.digits(3)} {g.digits(3)}"),
        ("price", "revenue of {v} in total", f"${r.randrange(1, 999)} {g.digits(3)} {g.digits(3)}"),
        ("serial", "Part No. {v}", f"{a}-{e}-{n}"),
        ("serial", "SKU {v}", f"{d4()}-{d4()}-{d4()}"),
        ("serial", "Order #{v}", f"{a} {e} {n}"),
        ("serial", "Serial: {v}", f"0{g.digits(3, '123456789')} {d4()} {d4()}"),
        ("serial", "Invoice {v}", f"0{r.randrange(1, 9)} {g.digits(2)} {g.digits(2)} {g.digits(2)} {g.digits(2)}"),
        ("serial", "tracking {v}", f"1Z{g.chars(string.ascii_uppercase + string.digits, 16)}"),
        ("serial", "IMEI {v}", g.digits(15, "3")),
        ("card_invalid", "test number {v} fails", bad_card),
        ("card_invalid", "the id {v} again", g.digits(16, "1789")),
        ("iban_invalid", "IBAN {v} (typo)", bad_iban),
        ("ssn_invalid", "SSN {v}", f"{r.choice(['000', '666', '9' + g.digits(2)])}-{g.digits(2, '123456789')}-{d4()}"),
        ("ssn_invalid", "SSN {v}", f"{g.digits(3, '12345678')}-00-{d4()}"),
        ("private_ip", "gateway {v}", g.pick(["10.0.0.1", "192.168.1.254", "172.16.5.4", "127.0.0.1",
                                               f"192.168.{r.randrange(256)}.{r.randrange(1, 255)}",
                                               f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}"])),
        ("private_ip", "bind to {v}", g.pick(["::1", "fe80::1ff:fe23:4567:890a", "fd12:3456:789a::1", "0.0.0.0"])),
        ("doc_ip", "for example {v}", g.pick(["192.0.2.1", "198.51.100.23", "203.0.113.7", "2001:db8::1"])),
        ("mac", "MAC {v}", ":".join(g.chars("0123456789ABCDEF", 2) for _ in range(6))),
        ("time", "Open {v} daily.", f"{r.randrange(6, 11)}:00-{r.randrange(16, 23)}:30"),
        ("coords", "located at {v}", f"{r.randrange(-80, 80)}.{g.digits(4)}, {r.randrange(-170, 170)}.{g.digits(4)}"),
        ("example_email", "e.g. {v}", g.pick(["user@example.com", "jane.doe@example.org", "admin@test.invalid", "someone@example.net"])),
        ("placeholder_password", "{v}", g.pick(["postgres://user:password@localhost/db", "mysql://root:<password>@db:3306/x",
                                                 "https://user:${TOKEN}@git.acme-robotics.io/repo.git", "amqp://guest:****@rabbit/",
                                                 "Server=db;User Id=sa;Password=<your password>;", "redis://:yourpassword@cache:6379"])),
        ("example_key", "{v}", g.pick(["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                        "ghp_" + "x" * 36, "sk-your-api-key-here", "sk-learn-compatible-estimator"])),
        ("not_jwt", "blob {v}", base64.urlsafe_b64encode(json.dumps({"foo": g.digits(4), "bar": True}).encode()).decode().rstrip("=")
         + "." + base64.urlsafe_b64encode(b'{"x":1}').decode().rstrip("=") + "." + g.chars(string.ascii_letters, 20)),
        ("public_key", "{v}", "-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(bytes(r.randrange(256) for _ in range(96))).decode()[:64]
         + "\n-----END PUBLIC KEY-----"),
        ("not_aws", "{v}", "AKIA" + g.chars(key_up, 12)),
        ("wiki_numbers", "a population of {v} inhabitants", f"{r.randrange(1, 9)} @,@ {g.digits(3)} @,@ {g.digits(3)}"),
        ("page_range", "see pp. {v}", f"{r.randrange(100, 400)}-{r.randrange(400, 800)}"),
        ("doi", "doi:{v}", f"10.{r.randrange(1000, 9999)}/{g.digits(7)}"),
        ("bible", "John {v}", f"{r.randrange(1, 20)}:{r.randrange(1, 40)}"),
        ("score", "They won {v} at home.", f"{r.randrange(0, 5)}-{r.randrange(0, 5)}"),
        ("phone_in_math", "compute {v} by hand", f"{g.digits(3, '23456789')} * {g.digits(3)} * {g.digits(4)}"),
        ("version", "Download {v} from the mirror.", f"openssl-1.{r.randrange(0, 2)}.{r.randrange(0, 3)}.{r.randrange(10, 30)}"),
        ("version", "Mac OS X {v} is required.", f"10.{r.randrange(4, 15)}.{r.randrange(1, 9)}"),
        ("version", "See Table {v} for the totals.", f"{r.randrange(1, 9)}.{r.randrange(1, 9)}.{r.randrange(1, 9)}.{r.randrange(1, 9)}"),
        ("standard", "certified to {v}", f"ISO 9001:{r.randrange(2000, 2024)}"),
        ("timezone", "Times are in {v}.", g.pick(["UTC+05:30", "UTC-08:00", "GMT+0100"])),
        ("tax_id", "EIN {v}", f"{g.digits(2, '123456789')}-{g.digits(7)}"),
        ("routing", "routing number {v}", g.digits(9, "0")),
        ("masked_card", "card ending {v}", f"**** **** **** {d4()}"),
        ("masked_card", "card {v}", f"XXXX-XXXX-XXXX-{d4()}"),
        ("masked_phone", "call {v}", f"+44 20 **** {d4()}"),
        ("patent", "US patent {v}", f"{r.randrange(5, 11)},{g.digits(3)},{g.digits(3)}"),
        ("population", "a population of {v} in the census", f"{r.randrange(1, 9)} {g.digits(3)} {g.digits(3)}"),
        ("key_mention", "{v}", "The file must start with -----BEGIN RSA PRIVATE KEY----- and end with the END line."),
        ("wiki_numbers", "measured {v} long", f"{r.randrange(1, 99)} @.@ {g.digits(2)} m ( {r.randrange(100, 300)} ft )"),
        ("coords", "lat {v}", f"{r.randrange(10, 60)}.{g.digits(4)} lon -{r.randrange(10, 120)}.{g.digits(4)}"),
        ("handle", "follow {v} for updates", f"@{g.pick(_FIRST)}_{g.pick(_LAST)}"),
        ("no_tld_email", "login as {v}", f"{g.pick(_FIRST)}@{g.pick(['intranet', 'corp-host', 'buildbox'])}"),
        ("year_list", "in the seasons {v}", f"{year} {int(year) + 1} {int(year) + 2}"),
        ("hex_dump", "bytes {v}", " ".join(g.chars("0123456789abcdef", 2) for _ in range(8))),
    ]
    return items


# -- assembly ----------------------------------------------------------------------------


def build(shared: Path | None = None, *, seed: int = 20240607, per_type: int = 70, neg_rounds: int = 6) -> list[Doc]:
    """The labelled set: ``per_type`` positives of every type and ``neg_rounds`` rounds
    of the hard-negative catalogue, planted among real sentences. Same arguments, same
    documents."""
    shared = shared or shared_dir()
    carriers = load_carriers(shared)
    rng = random.Random(seed)
    g = _Gen(rng)
    units: list[tuple[str, object]] = []  # ("pos", (phrase, s, e, type, fmt)) or ("neg", (phrase, s, e, kind))
    for t, maker in POSITIVE_MAKERS.items():
        for k in range(per_type):
            if t == "api_key" and k % 12 == 11:
                phrase, s, e, fmt = _p_slack_hook(g)
            else:
                phrase, s, e, fmt = maker(g)
            units.append(("pos", (phrase, s, e, t, fmt)))
    for _ in range(neg_rounds):
        for kind, tmpl, value in _neg_phrases(g):
            if "{v}" in tmpl:
                pre, post = tmpl.split("{v}")
                units.append(("neg", (pre + value + post, len(pre), len(pre) + len(value), kind)))
            else:  # the value is the whole template (already contains itself)
                units.append(("neg", (tmpl, 0, len(tmpl), kind)))
    rng.shuffle(units)
    docs: list[Doc] = []
    sources = sorted(carriers)
    i = 0
    while i < len(units):
        take = rng.choice([1, 1, 2, 2, 3])
        chunk = units[i:i + take]
        i += take
        src = sources[len(docs) % len(sources)]
        pool = carriers[src]
        sents = [pool[rng.randrange(len(pool))] for _ in range(rng.randrange(2, 6))]
        joiner = "\n" if src == "ccnet" and rng.random() < 0.5 else " "
        pieces: list[tuple[str, tuple | None]] = [(s, None) for s in sents]
        for u in chunk:
            pieces.insert(rng.randrange(len(pieces) + 1), (None, u))
        text = ""
        gold: list[Gold] = []
        negs: list[Negative] = []
        for n_piece, (sent, unit) in enumerate(pieces):
            if n_piece:
                text += joiner
            if unit is None:
                text += sent
                continue
            tag, payload = unit
            phrase, s, e = payload[0], payload[1], payload[2]
            base = len(text)
            text += phrase
            if tag == "pos":
                gold.append(Gold(base + s, base + e, payload[3], payload[4]))
            else:
                negs.append(Negative(base + s, base + e, payload[3]))
        docs.append(Doc(f"pii-labelled/{len(docs):05d}", src, text, tuple(gold), tuple(negs)))
    return docs


def main(argv: list[str] | None = None) -> int:
    docs = build()
    n_pos = sum(len(d.gold) for d in docs)
    n_neg = sum(len(d.negatives) for d in docs)
    by_type: dict[str, int] = {}
    for d in docs:
        for gsp in d.gold:
            by_type[gsp.type] = by_type.get(gsp.type, 0) + 1
    print(f"{len(docs)} documents, {n_pos} positives, {n_neg} hard negatives")
    print("positives per type:", by_type)
    for d in docs[:3]:
        print("---", d.id, d.source)
        print(d.text)
        for gsp in d.gold:
            print("  +", gsp.type, gsp.fmt, repr(d.text[gsp.start:gsp.end]))
        for n in d.negatives:
            print("  -", n.kind, repr(d.text[n.start:n.end]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
