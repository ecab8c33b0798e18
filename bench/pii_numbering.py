"""A PII recall set built from the world's rules, not from our detector (issue 27).

**Phones.** Every number comes from Google's numbering-plan metadata as shipped in the
``phonenumbers`` library (the Python port of libphonenumber): for each of the 30 most
populous countries' plans (``REGIONS``), its example fixed-line, mobile and toll-free
numbers with their subscriber digits redrawn until the metadata calls the result a
valid number of the same type, then written the way the plan writes it – national
(with the trunk prefix: ``030 123456``, ``8 (912) 345-67-89``, ``(11) 96123-4567``),
international (``+49 30 123456``) and E.164 (``+4930123456``). None of this comes from
``stages/pii``: a detector tuned to it is tuned to the plans.

Each number sits in real corpus sentences (the carriers of ``pii_labelled``) with the
context people write around one (``CONTEXTS``): a label before it in English or the
country's language (``Phone:``, ``Telefon:``, ``电话：``), a label after it
(``... (Office)``, ``... -Office``, ``... fax``), or a verb phrase (``reach the desk at``,
``registered under``). A number with no such context is not in the set: nobody can
tell ``030 123456`` in a table from a phone number.

**IPv6.** Public addresses (``2000::/3`` outside ``2001:db8::/32``, and IPv4-mapped
public addresses) in every valid textual form of RFC 4291 section 2.2: RFC 5952
canonical (``2a00:1450:4001:82a::200e``), fully uncompressed with leading zeros
(``2a00:1450:4001:082a:0000:0000:0000:200e``), without leading zeros and without
``::``, upper case, ``::`` over a run that is not the longest, mixed notation with the
last 32 bits as a dotted quad (``2a00:1450::32.1.32.14``), IPv4-mapped
(``::ffff:93.184.216.34``), in brackets with a port (``[...]:443``) – the gold span is
the address itself.

    python bench/pii_numbering.py    # a summary and a few documents
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run as a script: keep bench/ off sys.path (see pii_quality.py)
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    sys.path.insert(0, os.path.dirname(_HERE))

import importlib.util  # noqa: E402
import ipaddress  # noqa: E402
import random  # noqa: E402
from pathlib import Path  # noqa: E402

import phonenumbers as PN  # noqa: E402


def _pii_labelled():
    if "pii_labelled" in sys.modules:
        return sys.modules["pii_labelled"]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pii_labelled.py")
    spec = importlib.util.spec_from_file_location("pii_labelled", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pii_labelled"] = mod
    spec.loader.exec_module(mod)
    return mod


PL = _pii_labelled()

#: The 30 most populous countries (UN 2023 estimates), each with its own numbering
#: plan (the US stands for the NANP), and a phone label in its main language.
REGIONS: dict[str, str] = {
    "IN": "फ़ोन: {v}", "CN": "电话：{v}", "US": "Phone: {v}", "ID": "Telp. {v}", "PK": "Phone: {v}",
    "NG": "Tel: {v}", "BR": "Telefone: {v}", "BD": "ফোন: {v}", "RU": "Телефон: {v}", "ET": "ስልክ: {v}",
    "MX": "Teléfono: {v}", "JP": "電話: {v}", "EG": "هاتف: {v}", "PH": "Tel. no. {v}", "CD": "Tél. : {v}",
    "VN": "Điện thoại: {v}", "IR": "تلفن: {v}", "TR": "Telefon: {v}", "DE": "Telefon: {v}", "TH": "โทร. {v}",
    "GB": "Tel: {v}", "TZ": "Simu: {v}", "FR": "Tél. : {v}", "ZA": "Tel: {v}", "IT": "Tel. {v}",
    "KE": "Tel: {v}", "MM": "ဖုန်း: {v}", "CO": "Teléfono: {v}", "KR": "전화: {v}", "ES": "Teléfono: {v}",
}

TYPES = {"fixed": PN.PhoneNumberType.FIXED_LINE, "mobile": PN.PhoneNumberType.MOBILE,
         "tollfree": PN.PhoneNumberType.TOLL_FREE}
FORMATS = {"national": PN.PhoneNumberFormat.NATIONAL, "international": PN.PhoneNumberFormat.INTERNATIONAL,
           "e164": PN.PhoneNumberFormat.E164}

#: Contexts around a number, by kind; ``{local}`` is the region's own label.
CONTEXTS: dict[str, tuple[str, ...]] = {
    "before": ("Phone: {v}", "Tel. {v}", "Tel: {v}", "call me on {v}", "Fax: {v}", "Mobile: {v}",
               "My number is {v}.", "Please call {v} to book.", "(tel. {v})", "Contact number: {v}",
               "WhatsApp: {v}", "Cell: {v}", "T: {v}", "phone {v}", "{local}"),
    "after": ("{v} (Office)", "{v} -Office", "{v} - Office", "{v} (fax)", "{v} fax", "{v} (mobile)",
              "{v} (home)", "{v} (WhatsApp)", "{v} (tel.)", "{v} office"),
    "verb": ("You can reach the front desk at {v}.", "Reach us at {v} on weekdays.",
             "The line registered to the clinic is {v}.", "bookings at {v} or at the door",
             "The shop is registered under {v}.", "Contact the office at {v}.",
             "text {v} for details", "Ring {v} after six."),
}


def _numbers(rng: random.Random, region: str, kind: str, want: int) -> list[PN.PhoneNumber]:
    """Valid numbers of ``region`` and type ``kind``: the plan's example number with its
    trailing digits redrawn until the metadata accepts the result as the same type."""
    ptype = TYPES[kind]
    ex = PN.example_number_for_type(region, ptype)
    if ex is None:
        return []
    nsn = PN.national_significant_number(ex)
    keep = min(len(nsn) - 4, 3 if kind != "tollfree" else 4)
    out: list[PN.PhoneNumber] = []
    for _ in range(400):
        if len(out) == want:
            break
        cand = nsn[:keep] + "".join(rng.choice("0123456789") for _ in range(len(nsn) - keep))
        num = PN.parse("+" + str(ex.country_code) + cand, None)
        if PN.is_valid_number_for_region(num, region) and PN.number_type(num) in (
                ptype, PN.PhoneNumberType.FIXED_LINE_OR_MOBILE):
            out.append(num)
    while len(out) < want:
        out.append(ex)
    return out


def phone_values(seed: int = 27, per_cell: int = 2) -> list[tuple[str, str, str]]:
    """``(fmt, context, value)``: ``per_cell`` numbers for every region x type x format,
    contexts cycling through the three kinds."""
    rng = random.Random(seed)
    out = []
    kinds = sorted(CONTEXTS)
    k = 0
    for region, local in REGIONS.items():
        for kind in TYPES:
            for num in _numbers(rng, region, kind, per_cell * len(FORMATS)):
                fname = list(FORMATS)[k % len(FORMATS)]
                value = PN.format_number(num, FORMATS[fname])
                ctx_kind = kinds[(k // len(FORMATS)) % len(kinds)]
                ctx = rng.choice(CONTEXTS[ctx_kind]).replace("{local}", local)
                out.append((f"phone/{region}/{kind}/{fname}/{ctx_kind}", ctx, value))
                k += 1
    return out


def _v6_forms(ip: ipaddress.IPv6Address, rng: random.Random) -> dict[str, str]:
    """Every textual form of RFC 4291 2.2 for one address."""
    groups = [f"{int.from_bytes(ip.packed[i:i + 2], 'big'):x}" for i in range(0, 16, 2)]
    forms = {
        "rfc5952": ip.compressed,
        "full": ip.exploded,
        "no-compress": ":".join(groups),
        "upper": ip.compressed.upper(),
    }
    # "::" over a zero run that RFC 5952 would not pick (not the longest, or a single group)
    zeros = [i for i, g in enumerate(groups) if g == "0"]
    if zeros:
        i = zeros[-1]
        forms["other-compress"] = ":".join(groups[:i]) + "::" + ":".join(groups[i + 1:])
    v4 = ipaddress.IPv4Address(ip.packed[12:])
    forms["mixed-full"] = ":".join(groups[:6]) + ":" + str(v4)
    # compressed head: the first six groups as RFC 5952 writes them, then the dotted quad
    head = ipaddress.IPv6Address(ip.packed[:12] + b"\xff\xff\xff\xff").compressed.rsplit(":", 2)[0]
    forms["mixed"] = head + ":" + str(v4)
    return forms


def _public_v6(rng: random.Random) -> ipaddress.IPv6Address:
    doc = ipaddress.ip_network("2001:db8::/32")
    while True:
        # real allocations: a /32../48 prefix, a subnet, then a sparse interface id with zero runs
        words = [rng.randrange(0x2000, 0x3000), rng.randrange(0x10000), rng.randrange(0x10000),
                 rng.choice([0, rng.randrange(0x10000)])]
        tail = rng.choice([[0, 0, 0, rng.randrange(1, 0x10000)], [rng.randrange(0x10000) for _ in range(4)],
                           [0, 0, rng.randrange(0x10000), rng.randrange(0x10000)],
                           [rng.randrange(0x10000), 0, 0, rng.randrange(1, 0x100)]])
        ip = ipaddress.IPv6Address(b"".join(w.to_bytes(2, "big") for w in words + tail))
        if ip not in doc and ip.is_global:
            return ip


IP_LEADS = ("IP: {v}", "The request came from {v}.", "server {v}", "connected from {v}", "Address {v} was banned.",
            "ping {v}", "client {v} logged in", "{v} - - [01/Jan/2024] \"GET /\"", "Host: {v}", "curl http://[{v}]:8080/",
            "listen [{v}]:443;", "AAAA record {v}", "inet6 {v}/64 scope global", "from {v} port 51514 ssh2")


def ipv6_values(seed: int = 27, n: int = 400) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    out = []
    k = 0
    while len(out) < n:
        if k % 8 == 7:  # an IPv4-mapped public address
            while True:
                v4 = ipaddress.IPv4Address(rng.randrange(1 << 32))
                if v4.is_global and not v4.is_multicast and not v4.is_reserved:
                    break
            forms = {"mapped": f"::ffff:{v4}", "mapped-upper": f"::FFFF:{v4}"}
        else:
            ip = _public_v6(rng)
            forms = _v6_forms(ip, rng)
            assert all(ipaddress.IPv6Address(v) == ip for v in forms.values()), forms
        for name, value in sorted(forms.items()):
            out.append((f"ip/v6/{name}", rng.choice(IP_LEADS), value))
        k += 1
    return out[:n]


def build(shared: Path | None = None, *, seed: int = 27, per_cell: int = 2, ipv6: int = 400) -> list:
    """Documents with one phone or IPv6 value each, in 2-4 real carrier sentences."""
    carriers = PL.load_carriers(shared or PL.shared_dir())
    sources = sorted(carriers)
    rng = random.Random(seed)
    docs = []
    values = [("phone",) + v for v in phone_values(seed, per_cell)] + [("ip",) + v for v in ipv6_values(seed, ipv6)]
    for i, (typ, fmt, lead, value) in enumerate(values):
        src = sources[i % len(sources)]
        pool = carriers[src]
        sents = [pool[rng.randrange(len(pool))] for _ in range(rng.randrange(2, 5))]
        at = rng.randrange(len(sents) + 1)
        pre, post = lead.split("{v}")
        head = " ".join(sents[:at]) + (" " if at else "")
        text = head + pre + value + post + ("" if at == len(sents) else " " + " ".join(sents[at:]))
        start = len(head) + len(pre)
        docs.append(PL.Doc(f"pii-plan/{i:05d}", src, text, (PL.Gold(start, start + len(value), typ, fmt),), ()))
    return docs


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench import _smoke  # the repository is on sys.path (above)

    _smoke.parse(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]), {}, argv)  # one size: seconds
    docs = build()
    by: dict[str, int] = {}
    for d in docs:
        g = d.gold[0]
        by[g.type] = by.get(g.type, 0) + 1
    print(f"{len(docs)} documents; values per type: {by}")
    for d in docs[::97]:
        g = d.gold[0]
        print(f"  {g.fmt:<40} {d.text[max(0, g.start - 25):g.end + 12]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
