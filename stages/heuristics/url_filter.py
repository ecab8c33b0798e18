"""URL filtering by block and allow lists, and domain tags for mixing.

A document is judged by its ``url`` column. Lists are files with one entry a line, in the
formats public block lists use (``#`` and ``!`` start comments; blank lines ignored):

===============================  =========================================================
entry                            matches (after normalisation, see below)
===============================  =========================================================
``example.com``                  the host and every subdomain (UT1 / Blocklist-Project
                                 domain lists, datatrove's ``block_listed_domains``)
``0.0.0.0 ads.example.com``      hosts-file line (``127.0.0.1``, ``::`` too; several hosts a
                                 line allowed): that exact host only, as a hosts file does
``||example.com^``               adblock domain anchor: the host and its subdomains
                                 (``$options`` ignored); ``@@||example.com^`` is an
                                 exception, i.e. an allow entry inside a block list
``||example.com/ads/``           adblock anchor with a path: a URL prefix
``=example.com``                 that exact host only
``*.readthedocs.io``             subdomains only (not ``readthedocs.io`` itself)
``docs.*``                       hosts whose first label is ``docs`` (``docs.python.org``)
``example.com/blog/``,           URL prefix: host (exact) + path, scheme ignored
``https://example.com/blog/``
``keyword:casino``               the word anywhere in the lower-cased URL
``regex:^https?://[^/]*\\.ru/``  an RE2 regular expression searched in the URL
===============================  =========================================================

Other adblock rules (cosmetic ``##``, bare patterns like ``/ads/*``) are not URL lists:
they are skipped and counted (logged once per file). The config check (``datapipe
validate``) reads the list files: one that is not UTF-8, or a ``regex:`` entry RE2 refuses
(compiled with RE2 itself, the engine the run searches with), is an error naming the file
and line.

Host normalisation (URLs and entries alike): lower case, userinfo and port removed,
trailing dots removed, one leading ``www.`` removed, internationalised names converted to
IDNA ASCII (``bücher.de`` -> ``xn--bcher-kva.de``). URL prefixes compare lower-cased.

Decisions: an allow match wins over a block match (``allow`` are exceptions); with
``allow_only`` a document matching no allow entry is dropped (``not_allowed``). Drops are
``url_filter:blocked`` with the entry, its file and line in the detail. ``tags`` (name ->
entries) and ``tag_files`` (name -> list files) write the first matching tag's name, in
config order, to the ``url_tag`` column and drop nothing (mix by domain later). A
document without a URL matches nothing.

Speed: hosts are cut out of the batch's URL buffer with numpy (IDNA only for non-ASCII
hosts, cached per distinct host for the stage's lifetime); every label suffix of every
host (``a.b.c`` -> ``a.b.c``, ``b.c``, ``c``) is hashed from prefix sums over the host
bytes and looked up in sorted hash arrays through a radix index, so the cost per URL does
not depend on the list size. Prefix, keyword and regex entries are checked only on candidate
rows. ``bench/url_filter.py`` measures it.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import Compute, FilterStage, Reasons, StageConfig
from stages.arrow_strings import utf8_buffers
from stages.hashing.radix import RadixIndex

log = logging.getLogger(__name__)

URL_TAG = "url_tag"

# scheme://userinfo@HOST:port ; the host is group "host" (stops at : / ? # or the end)
_HOST_RE = r"^\s*(?:(?:[A-Za-z][A-Za-z0-9+.\-]*:)?//)?(?:[^@/?#\s]*@)?(?P<host>\[[^\]/]*\]|[^:/?#\s]*)"
_HOST_PY = re.compile(_HOST_RE + r"(?::[0-9]*)?(?P<rest>[/?#]\S*)?")
_HOSTS_FILE_IPS = frozenset({"0.0.0.0", "127.0.0.1", "::", "::1", "0", "255.255.255.255"})
_HOSTS_FILE_SKIP = frozenset({"localhost", "localhost.localdomain", "local", "broadcasthost", "ip6-localhost",
                              "ip6-loopback", "0.0.0.0"})


def normalize_host(host: str, cache: dict[str, str] | None = None) -> str:
    """The host as lists and URLs are compared: lower case, no trailing dot, no leading
    ``www.``, IDNA ASCII."""
    h = host.strip().lower().rstrip(".")
    if h.startswith("www."):
        h = h[4:]
    if not h.isascii():
        h = _idna(h, cache)
    return h


def _idna(host: str, cache: dict[str, str] | None = None) -> str:
    """IDNA ASCII form, label by label (NFKC + lower case stand in for nameprep; Python's
    ``idna`` codec is ~100x slower and rejects labels browsers accept). ``cache``: label
    -> encoded, shared by the caller across a batch (IDN TLDs repeat)."""
    out = []
    for label in unicodedata.normalize("NFKC", host).lower().split("."):
        if label.isascii():
            out.append(label)
            continue
        enc = cache.get(label) if cache is not None else None
        if enc is None:
            try:
                enc = "xn--" + label.encode("punycode").decode("ascii")
            except UnicodeError:
                enc = label   # not encodable: compared as written
            if cache is not None:
                cache[label] = enc
        out.append(enc)
    return ".".join(out)


def split_url(url: str, cache: dict[str, str] | None = None) -> tuple[str, str]:
    """``(normalised host, lower-cased path+query)`` of a URL or scheme-less
    ``host/path``; ``("", "")`` when there is no host."""
    m = _HOST_PY.match(url or "")
    if not m or not m.group("host"):
        return "", ""
    return normalize_host(m.group("host"), cache), (m.group("rest") or "").lower()


@dataclass(frozen=True)
class Rule:
    """One list entry as parsed: ``kind`` (domain, subdomain, host, label, prefix,
    keyword, regex), the normalised ``value``, whether it allows, and where it came from."""

    kind: str
    value: str
    allow: bool
    origin: str

    def describe(self) -> str:
        return f"{self.kind}:{self.value} ({self.origin})"


@dataclass
class ParsedList:
    """A list file's rules. Plain-domain lines, the bulk of big public lists (4.5M in
    datatrove's UT1 list), are kept compactly as ``domains`` with their line numbers
    instead of as :class:`Rule` objects."""

    name: str = ""
    allow: bool = False
    rules: list[Rule] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.rules) + len(self.domains)


def parse_entry(entry: str, *, origin: str, allow: bool = False) -> list[Rule]:
    """The rules of one non-comment line (empty for a line no URL rule can express)."""
    line = entry.strip()
    if not line:
        return []
    if line.startswith("keyword:"):
        kw = line[len("keyword:"):].strip().lower()
        return [Rule("keyword", kw, allow, origin)] if kw else []
    if line.startswith("regex:"):
        rx = line[len("regex:"):].strip()
        if rx:
            _check_regex(rx, origin)
        return [Rule("regex", rx, allow, origin)] if rx else []
    parts = line.split()
    if len(parts) >= 2 and _is_ip(parts[0]):
        # hosts file: "0.0.0.0 host [host ...]" (exact hosts; a trailing comment was stripped)
        return [Rule("host", normalize_host(h), allow, origin) for h in parts[1:]
                if h.lower() not in _HOSTS_FILE_SKIP and normalize_host(h)]
    if len(parts) != 1:
        return []
    if line.startswith("@@"):
        return parse_entry(line[2:], origin=origin, allow=True)
    if "##" in line or "#@#" in line or "#?#" in line:
        return []   # cosmetic adblock rule
    if line.startswith("||"):
        body = line[2:].split("$", 1)[0].rstrip("^|")
        if not body or "*" in body:
            return []
        host, sep, path = body.partition("/")
        if not sep:
            host = host.split("^", 1)[0]
            return [Rule("domain", normalize_host(host), allow, origin)]
        return [Rule("prefix", normalize_host(host) + "/" + path.split("^", 1)[0].lower(), allow, origin)]
    if line.startswith("|"):
        line = line[1:].split("$", 1)[0].rstrip("|^")
        if "://" not in line:
            return []
    if line.startswith("="):
        return [Rule("host", normalize_host(line[1:]), allow, origin)]
    if line.startswith("*."):
        return [Rule("subdomain", normalize_host(line[2:]), allow, origin)]
    if line.endswith(".*") and "/" not in line:
        return [Rule("label", line[:-2].lower(), allow, origin)]
    if "*" in line or line.startswith("/") or "$" in line or "^" in line:
        return []   # wildcard adblock pattern: not a URL-list entry
    if "/" in line.split("://", 1)[-1]:
        host, rest = split_url(line)
        return [Rule("prefix", host + rest, allow, origin)] if host else []
    host, _ = split_url(line)
    return [Rule("domain", host, allow, origin)] if host and not host.startswith("[") else []


def _check_regex(rx: str, origin: str) -> None:
    """Compile ``rx`` with the engine the run searches URLs with (RE2, through
    ``pyarrow.compute``), so what it refuses (lookarounds, backreferences, ``{1001}``) is
    an error at validate; Python's ``re`` would accept those and the run would fail."""
    try:
        pc.match_substring_regex(pa.array([""], pa.string()), rx)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SpecError(f"url_filter: {origin}: bad regex {rx!r}: {e}; regex: entries are RE2 (no lookarounds "
                        "or backreferences), https://github.com/google/re2/wiki/Syntax") from None


def _is_ip(s: str) -> bool:
    if s in _HOSTS_FILE_IPS:
        return True
    try:
        ipaddress.ip_address(s)
        return True
    except ValueError:
        return False


_PLAIN_DOMAIN = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)+\.?")


def parse_list(text: str, *, name: str, allow: bool = False) -> ParsedList:
    """Every rule of a list file's text (``name`` for details: ``name:line``)."""
    out = ParsedList(name=name, allow=allow)
    plain = _PLAIN_DOMAIN.fullmatch
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!", "[")):
            continue
        if plain(line):
            d = line.lower().rstrip(".")
            out.domains.append(d[4:] if d.startswith("www.") else d)
            out.lines.append(i)
            continue
        line = re.split(r"\s#", line, maxsplit=1)[0].strip()
        rules = parse_entry(line, origin=f"{name}:{i}", allow=allow)
        if not rules:
            out.skipped += 1
        out.rules.extend(rules)
    return out


class Matcher:
    """Compiled rules of one list group (block, allow, or one tag)."""

    def __init__(self, rules: Iterable[Rule], bulk: Iterable[ParsedList] = ()) -> None:
        by: dict[str, dict[str, Rule]] = {k: {} for k in ("domain", "subdomain", "host", "label", "prefix",
                                                           "keyword", "regex")}
        for r in rules:
            by[r.kind].setdefault(r.value, r)
        self.rules = by
        self._sets = {k: StringSet(sorted(v)) for k, v in by.items()
                      if k in ("subdomain", "host", "label") and v}
        # domains: the rules' (payload -1) and the lists' plain lines (payload file << 32 | line)
        self._bulk = [b for b in bulk if b.domains]
        values = sorted(by["domain"])
        payload = [np.full(len(values), -1, dtype=np.int64)]
        for f, b in enumerate(self._bulk):
            values += b.domains
            payload.append((np.int64(f) << 32) | np.asarray(b.lines, dtype=np.int64))
        self.n_bulk = sum(len(b.domains) for b in self._bulk)
        if values:
            self._sets["domain"] = StringSet(values, payload=np.concatenate(payload))
        prefixes: dict[str, list[tuple[str, Rule]]] = {}
        for value, r in by["prefix"].items():
            host, _, path = value.partition("/")
            prefixes.setdefault(host, []).append(("/" + path, r))
        self._prefixes = prefixes
        self._prefix_hosts = StringSet(sorted(prefixes)) if prefixes else None
        # keywords: RE2 alternations of at most _KW_CHUNK words (a longer one is past RE2's
        # memory budget), a prefilter; the word is confirmed in the lower-cased URL
        keywords = sorted(by["keyword"].items())
        self._keywords = keywords
        self._kw = [r"(?i)" + "|".join(re.escape(k) for k, _ in keywords[i:i + _KW_CHUNK])
                    for i in range(0, len(keywords), _KW_CHUNK)]
        self._regex = sorted(by["regex"].items())

    def __len__(self) -> int:
        return sum(len(v) for v in self.rules.values()) + self.n_bulk

    @property
    def nbytes(self) -> int:
        """Memory of the hash sets (hashes, strings, origins)."""
        return sum(s.nbytes for s in self._sets.values())

    def _rule(self, kind: str, value: str, payload: int) -> Rule:
        if payload < 0:
            return self.rules[kind][value]
        b = self._bulk[payload >> 32]
        return Rule(kind, value, b.allow, f"{b.name}:{payload & 0xFFFFFFFF}")

    def match(self, view: "UrlView") -> "Matches":
        """The first rule matching each row: host rules (exact host, then domains, then
        subdomain-only, longest suffix first), first labels, then prefixes, keywords,
        regexes. Vectorised for the hash-set kinds; rules are materialised per row only
        when asked (:meth:`Matches.rule`)."""
        out = Matches(view.n, self)
        for k, kind in enumerate(("host", "domain", "subdomain")):
            values = self._sets.get(kind)
            if values is None:
                continue
            # longest suffix first: the multi-label suffixes, then the last label where
            # the list has one-label entries
            for spans, is_self, last in ((view.candidates, view.is_self, False),
                                         (view.last_labels, view.last_is_self, True)):
                if not len(spans) or (last and not values.one_label):
                    continue
                pos = values.lookup(spans, one_label=last)
                ok = pos >= 0
                if kind == "host":
                    ok &= is_self
                elif kind == "subdomain":
                    ok &= ~is_self
                out.assign(k, spans.row, pos, ok)
        if "label" in self._sets and len(view.first_labels):
            labels = view.first_labels
            pos = self._sets["label"].lookup(labels)
            out.assign(3, labels.row, pos, pos >= 0)
        if self._prefix_hosts is not None:
            rows = np.flatnonzero((self._prefix_hosts.lookup(view.host_spans) >= 0) & (out.kind < 0))
            for row in map(int, rows):
                host, rest = split_url(view.urls[row].as_py())
                for prefix, r in self._prefixes.get(host, ()):
                    if (rest or "/").startswith(prefix):
                        out.other[row] = r
                        break
        if self._kw:
            hit = np.zeros(view.n, dtype=bool)
            for kw in self._kw:
                hit |= pc.fill_null(pc.match_substring_regex(view.urls, kw), False).to_numpy(zero_copy_only=False)
            for row in map(int, np.flatnonzero(hit & (out.kind < 0))):
                if row not in out.other:
                    # RE2's case folding is wider than str.lower ("caſino" is "casino" to it):
                    # no keyword in the lower-cased URL is no match
                    low = view.urls[row].as_py().lower()
                    r = next((r for k, r in self._keywords if k in low), None)
                    if r is not None:
                        out.other[row] = r
        for rx, r in self._regex:
            rows = np.flatnonzero(pc.fill_null(pc.match_substring_regex(view.urls, rx), False)
                                  .to_numpy(zero_copy_only=False) & (out.kind < 0))
            for row in map(int, rows):
                out.other.setdefault(row, r)
        return out


_KW_CHUNK = 4096   # keywords per RE2 alternation (100k in one is past RE2's memory budget)
_IDNA_CACHE = 1 << 17   # distinct non-ASCII hosts a stage remembers (then it starts over)
_SET_KINDS = ("host", "domain", "subdomain", "label")


class Matches:
    """What one :class:`Matcher` found in a batch: per row, the hash-set kind and
    position of its first match (-1: none), plus the rare prefix/keyword/regex hits."""

    def __init__(self, n: int, matcher: Matcher) -> None:
        self.matcher = matcher
        self.kind = np.full(n, -1, dtype=np.int8)
        self.pos = np.full(n, -1, dtype=np.int64)
        self.other: dict[int, Rule] = {}

    def assign(self, k: int, rows: np.ndarray, pos: np.ndarray, ok: np.ndarray) -> None:
        """Record kind ``k``'s first hit per row (spans come ordered by row, longest
        first) where the row has no match yet."""
        idx = np.flatnonzero(ok)
        if not len(idx):
            return
        uniq, first = np.unique(rows[idx], return_index=True)
        free = self.kind[uniq] < 0
        self.kind[uniq[free]] = k
        self.pos[uniq[free]] = pos[idx[first[free]]]

    @property
    def mask(self) -> np.ndarray:
        m = self.kind >= 0
        if self.other:
            m[list(self.other)] = True
        return m

    def describe(self, rows: np.ndarray) -> pa.Array:
        """``<kind>:<entry> (<file>:<line>)`` of each row's rule, built with Arrow per
        kind (a block list drops many rows per batch)."""
        kinds = self.kind[rows]
        found = np.unique(kinds)
        parts: list[pa.Array] = []
        order: list[np.ndarray] = []
        for k in found:
            sel = np.flatnonzero(kinds == k) if len(found) > 1 else np.arange(len(rows))
            order.append(sel)
            if k < 0:
                parts.append(pa.array([self.other[int(rows[j])].describe() for j in sel.tolist()], pa.string()))
                continue
            kind = _SET_KINDS[int(k)]
            values = self.matcher._sets[kind]
            pos = self.pos[rows[sel]]
            vals = values.values.take(pa.array(pos)).cast(pa.string())
            pay = values.payload[pos] if values.payload is not None else np.full(len(pos), -1, np.int64)
            bulk = self.matcher._bulk
            names = (pa.scalar(bulk[0].name if bulk else "", pa.string()) if len(bulk) <= 1 else
                     pa.array([b.name for b in bulk], pa.string()).take(pa.array(np.maximum(pay, 0) >> 32)))
            desc = pc.binary_join_element_wise(f"{kind}:", vals, " (", names, ":",
                                               pa.array(pay & 0xFFFFFFFF).cast(pa.string()), ")", "")
            ruled = np.flatnonzero(pay < 0)
            if len(ruled):                      # entries written as rules (few): origin from the rule
                rules = self.matcher.rules[kind]
                own = [rules[v].describe() for v in vals.take(pa.array(ruled)).to_pylist()]
                mask = np.zeros(len(pay), dtype=bool)
                mask[ruled] = True
                desc = pc.replace_with_mask(desc, pa.array(mask), pa.array(own, pa.string()))
            parts.append(desc)
        if len(parts) == 1:
            return parts[0]
        back = np.empty(len(rows), dtype=np.int64)
        back[np.concatenate(order)] = np.arange(len(rows))
        return pa.concat_arrays(parts).take(pa.array(back))

    def rule(self, row: int) -> Rule:
        if self.kind[row] < 0:
            return self.other[row]
        kind = _SET_KINDS[int(self.kind[row])]
        values = self.matcher._sets[kind]
        k = int(self.pos[row])
        return self.matcher._rule(kind, values.value(k), values.payload_of(k))


_P = 0x100000001B3 * 2 + 1          # odd multiplier: invertible modulo 2**64
_P_INV = pow(_P, -1, 2**64)
_LEN_MIX = 0x9E3779B97F4A7C15


class _Powers:
    """``P**j`` and ``P**-j`` modulo 2**64 for j up to a length, grown on demand and
    reused across batches (a stage holds one; recomputing them per batch was a tenth of
    the stage's time)."""

    def __init__(self) -> None:
        self.pw = np.ones(1, dtype=np.uint64)
        self.inv = np.ones(1, dtype=np.uint64)

    def upto(self, total: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.pw) <= total:
            size = max(total + 1, 2 * len(self.pw), 1 << 16)
            with np.errstate(over="ignore"):
                pw = np.full(size, _P, dtype=np.uint64)
                pw[0] = 1
                inv = np.full(size, _P_INV, dtype=np.uint64)
                inv[0] = 1
                self.pw, self.inv = np.cumprod(pw, dtype=np.uint64), np.cumprod(inv, dtype=np.uint64)
        return self.pw[: total + 1], self.inv[: total + 1]


class _Bytes:
    """Strings as spans of one byte buffer, with every span's 64-bit polynomial hash
    available in O(1) from prefix sums: ``sum (b[j] + 1) * P**(j - start)`` modulo 2**64,
    mixed with the length. The same function as :func:`string_hashes`."""

    def __init__(self, data: np.ndarray, powers: _Powers | None = None) -> None:
        self.data = data
        total = len(data)
        pw, self.inv = (powers or _Powers()).upto(total)
        with np.errstate(over="ignore"):
            self.acc = np.zeros(total + 1, dtype=np.uint64)
            term = data.astype(np.uint64)
            term += np.uint64(1)
            term *= pw[:-1]
            np.cumsum(term, out=self.acc[1:])

    def hashes(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            h = (self.acc[end] - self.acc[start]) * self.inv[start]
            return h ^ ((end - start).astype(np.uint64) * np.uint64(_LEN_MIX))

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].tobytes().decode("utf-8", "replace")


def string_hashes(arr: pa.Array) -> np.ndarray:
    """The 64-bit hash of every string of ``arr`` (see :class:`_Bytes`). Not
    collision-proof: :class:`StringSet` confirms every hash hit by comparing strings."""
    arr = _plain(arr)
    if len(arr) == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets, data = utf8_buffers(arr)
    return _Bytes(data).hashes(offsets[:-1], offsets[1:])


class StringSet:
    """An immutable set of strings for vectorised membership: sorted 64-bit hashes
    (``np.searchsorted``) and the strings in hash order to confirm hits; an optional
    int64 payload per string. About 8 bytes plus the string per entry (a Python ``set``
    of the 4.5M domains of datatrove's block list takes several times that), built once
    per stage setup."""

    def __init__(self, values: list[str], payload: np.ndarray | None = None) -> None:
        arr = pa.array(values, pa.large_string())
        h = string_hashes(arr)
        order = np.argsort(h, kind="stable")
        self.hashes = h[order]
        self.values = arr.take(pa.array(order))
        self.payload = payload[order] if payload is not None else None
        self.radix = RadixIndex(self.hashes)
        # entries without a dot (a TLD, a dotless host; 4 of the 4.5M in UT1) get their own
        # small index: every URL's last label is looked up there, not in the big one
        dotless = (np.flatnonzero(~pc.match_substring(self.values, ".").to_numpy(zero_copy_only=False))
                   if len(arr) else np.zeros(0, np.int64))
        self._one_label = (RadixIndex(self.hashes[dotless]), dotless) if len(dotless) else None

    @property
    def one_label(self) -> bool:
        """Whether an entry has no dot (only then are last labels looked up)."""
        return self._one_label is not None

    def __len__(self) -> int:
        return len(self.hashes)

    @property
    def nbytes(self) -> int:
        return int(self.hashes.nbytes + self.values.nbytes + self.radix.nbytes
                   + (self.payload.nbytes if self.payload is not None else 0))

    def _positions(self, hashes: np.ndarray, one_label: bool = False) -> np.ndarray:
        """Per hash, the position of its first equal entry (of the dotless entries only
        with ``one_label``), or -1."""
        if not one_label:
            return self.radix.positions(hashes)
        if self._one_label is None:
            return np.full(len(hashes), -1, dtype=np.int64)
        radix, where = self._one_label
        pos = radix.positions(hashes)
        return np.where(pos >= 0, where[np.maximum(pos, 0)], -1)

    def value(self, k: int) -> str:
        return self.values[k].as_py()

    def payload_of(self, k: int) -> int:
        return -1 if self.payload is None else int(self.payload[k])

    def lookup(self, spans: "_Spans", *, one_label: bool = False) -> np.ndarray:
        """For each span, the position of the equal member, or -1 (``one_label``: spans
        without a dot, looked up among the dotless entries). Hash hits are confirmed by
        comparing the strings (vectorised); an unequal string under an equal hash (a
        collision) is resolved in Python."""
        hashes = spans.hashes
        pos = self._positions(hashes, one_label)
        hit = np.flatnonzero(pos >= 0)
        if not len(hit):
            return pos
        got = _gather(spans.buf.data, spans.start[hit], spans.end[hit]).cast(pa.large_string())
        eq = pc.equal(got, self.values.take(pa.array(pos[hit]))).to_numpy(zero_copy_only=False)
        for j in hit[~eq]:
            s = spans.text(int(j))
            k = int(pos[j]) + 1
            pos[j] = -1
            while k < len(self.hashes) and self.hashes[k] == hashes[j]:
                if self.values[k].as_py() == s:
                    pos[j] = k
                    break
                k += 1
        return pos


@dataclass
class _Spans:
    """Strings as (start, end) spans of a :class:`_Bytes` buffer, with their hashes;
    ``row``: the URL each belongs to."""

    buf: _Bytes
    start: np.ndarray
    end: np.ndarray
    row: np.ndarray

    @functools.cached_property
    def hashes(self) -> np.ndarray:
        return self.buf.hashes(self.start, self.end)

    def __len__(self) -> int:
        return len(self.row)

    def text(self, j: int) -> str:
        return self.buf.text(int(self.start[j]), int(self.end[j]))


class UrlView:
    """A batch's URLs parsed once, with numpy over the Arrow buffers: normalised hosts
    (lower case, no userinfo/port/trailing dot/``www.``, IDNA), every label suffix of
    every host (``candidates``, longest first per row), and first labels. URLs with
    userinfo, IPv6 literals or non-ASCII hosts go through :func:`split_url` instead."""

    def __init__(self, urls: pa.Array, *, powers: "_Powers | None" = None,
                 idna: dict[str, str] | None = None) -> None:
        """``powers`` and ``idna`` (raw non-ASCII host -> normalised host) are the
        caller's, kept across batches: IDN hosts repeat, and IDNA costs ~30 us a host."""
        if isinstance(urls, pa.ChunkedArray):
            urls = urls.combine_chunks()
        self.urls = _plain(urls.cast(pa.string()))
        n = self.n = len(self.urls)
        offsets, data = utf8_buffers(self.urls)
        starts, ends = offsets[:-1], offsets[1:]
        # host start: after "://" when it comes within the first 16 bytes, else the URL start
        sep = pc.find_substring(self.urls, "://").to_numpy(zero_copy_only=False).astype(np.int64)
        hs = starts + np.where((sep >= 0) & (sep <= 16), sep + 3, 0)
        # the host ends at the first / ? # or : after its start (byte compares: ~5x faster
        # than a table lookup)
        marks = np.flatnonzero((data == 47) | (data == 63) | (data == 35) | (data == 58))
        he = _first_at_or_after(marks, hs, ends)
        odd = np.zeros(n, dtype=bool)
        ats = np.flatnonzero(data == 64)
        if len(ats):                                     # an "@" before the path: userinfo, the regex path
            at = _first_at_or_after(ats, hs, ends)
            rows = np.flatnonzero(at < ends)
            if len(rows):
                path = marks[data[marks] != 58]
                odd[rows] = at[rows] < _first_at_or_after(path, hs[rows], ends[rows])
        if len(data):
            odd |= (he > hs) & (data[np.minimum(hs, len(data) - 1)] == 91)   # [IPv6]
        slow = odd.copy()
        if len(data):
            for _ in range(4):                           # trailing dots
                dot = (he > hs) & (data[np.maximum(he - 1, 0)] == 46)
                if not dot.any():
                    break
                he = he - dot
            if len(data) >= 4:                           # one leading "www." (any case)
                i = np.minimum(hs, len(data) - 4)
                www = ((he - hs >= 4) & (data[i] | 32 == 119) & (data[i + 1] | 32 == 119)
                       & (data[i + 2] | 32 == 119) & (data[i + 3] == 46))
                hs = hs + 4 * www
        high = np.flatnonzero(data >= 128)
        if len(high):                                    # non-ASCII hosts: IDNA
            r = np.searchsorted(starts, high, side="right") - 1
            slow[r[(high >= hs[r]) & (high < he[r])]] = True
        if slow.any():                                   # normalised in Python, appended to the buffer
            data, hs, he = self._slow_hosts(data, hs, he, slow, odd, idna)
        hosts = _gather(data, hs, he)
        h_off, h_data = utf8_buffers(hosts)
        upper = (h_data >= 65) & (h_data <= 90)
        if upper.any():
            h_data = h_data + upper.astype(np.uint8) * np.uint8(32)
            hosts = pa.StringArray.from_buffers(n, hosts.buffers()[1], pa.py_buffer(h_data))
        self.hosts = hosts
        self._buf = buf = _Bytes(h_data, powers)
        self._h_start, self._h_end = h_start, h_end = h_off[:-1], h_off[1:]
        self._dots = dots = np.flatnonzero(h_data == 46)
        dot_row = np.searchsorted(h_start, dots, side="right") - 1
        # every label suffix (a.b.c -> a.b.c, b.c, c): the multi-label ones in
        # ``candidates`` (longest first per row), the last labels (TLDs, dotless hosts)
        # apart: few lists have a one-label entry, so most lookups skip them
        last = np.r_[dot_row[1:] != dot_row[:-1], True] if len(dots) else np.zeros(0, bool)
        dotted = np.zeros(n, dtype=bool)
        dotted[dot_row] = True
        nonempty = h_end > h_start
        heads = np.flatnonzero(nonempty & dotted)
        c_row = np.concatenate([heads, dot_row[~last]])
        c_start = np.concatenate([h_start[heads], dots[~last] + 1])
        # by position in the buffer = by row, then longest suffix first (both runs are
        # sorted already: a stable sort just merges them)
        order = np.argsort(c_start, kind="stable")
        c_row, c_start = c_row[order], c_start[order]
        self.candidates = _Spans(buf, c_start, h_end[c_row], c_row)
        self.is_self = self.candidates.start == h_start[self.candidates.row]
        bare = np.flatnonzero(nonempty & ~dotted)
        l_row = np.concatenate([dot_row[last], bare])
        l_start = np.concatenate([dots[last] + 1, h_start[bare]])
        ok = h_end[l_row] > l_start                      # "a." was cut to "a"; "a.." keeps ""
        self.last_labels = _Spans(buf, l_start[ok], h_end[l_row[ok]], l_row[ok])
        self.last_is_self = self.last_labels.start == h_start[self.last_labels.row]

    @functools.cached_property
    def host_spans(self) -> _Spans:
        return _Spans(self._buf, self._h_start, self._h_end, np.arange(self.n))

    @functools.cached_property
    def first_labels(self) -> _Spans:
        h_start, h_end = self._h_start, self._h_end
        first_dot = _first_at_or_after(self._dots, h_start, h_end)
        has = first_dot < h_end
        return _Spans(self._buf, h_start[has], first_dot[has], np.flatnonzero(has))

    def _slow_hosts(self, data: np.ndarray, hs: np.ndarray, he: np.ndarray, slow: np.ndarray, odd: np.ndarray,
                    idna: dict[str, str] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``slow`` rows' hosts normalised in Python: URLs with userinfo or an IPv6
        literal (``odd``) through :func:`split_url`, non-ASCII hosts through IDNA once per
        distinct host (``idna``: raw host -> normalised, the caller's, across batches).
        Returns the buffer with their bytes appended and the host spans pointing there, so
        that one gather builds every host."""
        seen = {} if idna is None else idna
        if len(seen) > _IDNA_CACHE:
            seen.clear()
        labels: dict[str, str] = {}
        rows = np.flatnonzero(slow & ~odd)
        parts = []
        if len(rows):
            enc = _gather(data, hs[rows], he[rows]).dictionary_encode()
            norm = []
            for h in enc.dictionary.to_pylist():
                got = seen.get(h)
                if got is None:
                    got = seen[h] = normalize_host(h, labels)
                norm.append(got)
            parts.append(pa.array(norm, pa.string()).take(enc.indices))
        odd_rows = np.flatnonzero(odd)
        if len(odd_rows):
            parts.append(pa.array([split_url(self.urls[r].as_py(), labels)[0] for r in odd_rows.tolist()], pa.string()))
            rows = np.concatenate([rows, odd_rows])
        values = _plain(pa.concat_arrays(parts) if len(parts) > 1 else parts[0])
        v_off, v_data = utf8_buffers(values)
        hs, he = hs.copy(), he.copy()
        hs[rows], he[rows] = len(data) + v_off[:-1], len(data) + v_off[1:]
        return np.concatenate([data, v_data]), hs, he


def _first_at_or_after(positions: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row, the first of the sorted ``positions`` in ``[start, end)``, else ``end``."""
    if not len(positions):
        return end.copy()
    k = np.searchsorted(positions, start)
    p = positions[np.minimum(k, len(positions) - 1)]
    return np.where((k < len(positions)) & (p < end), p, end)


def _plain(arr: pa.Array) -> pa.Array:
    """A string array with offset 0 and no nulls (so its buffers can be read directly)."""
    arr = pc.fill_null(arr, "")
    if arr.offset != 0:
        arr = pa.concat_arrays([arr])
    if arr.offset != 0:
        arr = pa.array(arr.to_pylist(), arr.type)
    return arr


def _gather(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """A string array of ``data[starts[i]:ends[i]]`` built with one numpy gather."""
    lens = np.maximum(ends - starts, 0).astype(np.int64)
    off = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    total = int(off[-1])
    it = np.int32 if len(data) < 2**31 else np.int64      # half the index traffic when it fits
    idx = np.arange(total, dtype=it) + np.repeat((starts - off[:-1]).astype(it), lens)
    buf = data[idx] if total else np.zeros(0, np.uint8)
    if total < 2**31:
        return pa.StringArray.from_buffers(len(lens), pa.py_buffer(off.astype(np.int32)), pa.py_buffer(buf))
    return pa.LargeStringArray.from_buffers(len(lens), pa.py_buffer(off), pa.py_buffer(buf))



@dataclass(kw_only=True, frozen=True)
class UrlFilterConfig(StageConfig):
    #: block-list files (hosts files, domain lists, adblock ``||domain^``, prefixes, keyword:)
    block_files: tuple[str, ...] = ()
    #: block entries written in the job spec, same syntax as a list line
    block: tuple[str, ...] = ()
    #: allow-list files: their matches are never blocked
    allow_files: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    #: drop every document that matches no allow entry (``not_allowed``)
    allow_only: bool = False
    #: tag name -> entries; the first matching tag (config order) goes to ``url_tag``
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: tag name -> list files
    tag_files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in ("block_files", "allow_files"):
            for p in getattr(self, key):
                _check_file(p, key)
        for name, paths in self.tag_files.items():
            for p in paths:
                _check_file(p, f"tag_files[{name!r}]")
        if not (self.block_files or self.block or self.allow_files or self.allow or self.tags or self.tag_files):
            raise SpecError("url_filter: no lists given; set block_files/block (to drop), allow_files/allow with "
                            "allow_only: true (to keep only listed sites) or tags/tag_files (to tag)")
        if self.allow_only and not (self.allow or self.allow_files):
            raise SpecError("url_filter: allow_only is true but no allow entries; set allow_files or allow")
        for name in list(self.tags) + list(self.tag_files):
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
                raise SpecError(f"url_filter: tag name {name!r} must be letters, digits, '_', '-' or '.'")
        # what the run would refuse, refused now: entries no rule expresses, regexes RE2
        # cannot compile, list files that are not UTF-8
        for what, entries in [("block", self.block), ("allow", self.allow)] + \
                [(f"tags[{n}]", v) for n, v in self.tags.items()]:
            for i, entry in enumerate(entries):
                _inline_rules(entry, what, i, allow=what == "allow")
        for p in self.block_files + self.allow_files + tuple(p for ps in self.tag_files.values() for p in ps):
            _check_list_regexes(_read_list(p), p)


def _check_file(path: str, key: str) -> None:
    try:
        ok = fs.is_file(path)
    except OSError as e:
        raise SpecError(f"url_filter: {key}: cannot reach {path!r}: {e}") from None
    if not ok:
        raise SpecError(f"url_filter: {key}: {path!r} is not a file; give the path of a list file "
                        "(one domain, hosts-file line or ||domain^ a line)")


def _read_list(path: str) -> str:
    """A list file's text; a file that is not UTF-8 is an error naming the file and line."""
    data = fs.read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SpecError(f"url_filter: list {path} line {line} is not UTF-8 ({e.reason}: "
                        f"{data[e.start:e.end]!r}); convert the file (e.g. iconv -f latin1 -t utf-8) or fix "
                        "that line") from None


def _check_list_regexes(text: str, path: str) -> None:
    """The ``regex:`` lines of a list file compile with RE2 (parsed as :func:`parse_list`
    parses them; only files that hold one are walked line by line)."""
    if "regex:" not in text:
        return
    for i, raw in enumerate(text.splitlines(), 1):
        if "regex:" in raw:
            line = re.split(r"\s#", raw.strip(), maxsplit=1)[0].strip()
            parse_entry(line, origin=f"{fs.basename(path)}:{i}")


def _inline_rules(entry: str, what: str, i: int, *, allow: bool) -> list[Rule]:
    got = parse_entry(entry, origin=f"{what}[{i}]", allow=allow)
    if not got:
        raise SpecError(f"url_filter: {what}[{i}] = {entry!r} is not a URL rule; write a domain, "
                        "'*.domain', 'label.*', 'host/path', 'keyword:word' or 'regex:...'")
    return got


def _load(paths: Iterable[str], inline: Iterable[str], *, allow: bool,
          what: str) -> tuple[list[Rule], list[ParsedList]]:
    rules: list[Rule] = []
    bulk: list[ParsedList] = []
    for p in paths:
        parsed = parse_list(_read_list(p), name=fs.basename(p), allow=allow)
        if parsed.skipped:
            log.info("url_filter: %s: %d line(s) of %s are not URL rules (cosmetic or wildcard adblock "
                     "rules) and were skipped", what, parsed.skipped, p)
        rules.extend(parsed.rules)
        bulk.append(parsed)
    for i, entry in enumerate(inline):
        rules.extend(_inline_rules(entry, what, i, allow=allow))
    return rules, bulk


class UrlFilter(FilterStage):
    """Drops documents whose URL is on a block list (unless allowed), or not on an allow
    list with ``allow_only``; writes ``url_tag`` from the tag lists."""

    name = "url_filter"
    Config = UrlFilterConfig
    reads = (S.URL,)
    adds = {URL_TAG: pa.string()}
    compute = Compute(kind="actor")     # lists are parsed and indexed once per actor

    def setup(self) -> None:
        cfg = self.config
        self._powers, self._idna = _Powers(), {}    # kept across batches (see UrlView)
        block, block_bulk = _load(cfg.block_files, cfg.block, allow=False, what="block")
        allow, allow_bulk = _load(cfg.allow_files, cfg.allow, allow=True, what="allow")
        # "@@" exceptions inside block lists are allow rules
        allow += [r for r in block if r.allow]
        block = [r for r in block if not r.allow]
        self.block = Matcher(block, block_bulk)
        self.allow_m = Matcher(allow, allow_bulk)
        names = list(dict.fromkeys(list(cfg.tags) + list(cfg.tag_files)))
        self.tag_matchers = [(n, Matcher(*_load(cfg.tag_files.get(n, ()), cfg.tags.get(n, ()), allow=False,
                                                  what=f"tags[{n}]"))) for n in names]
        log.info("url_filter: %d block, %d allow rules (%.1f MB); tags %s", len(self.block), len(self.allow_m),
                 (self.block.nbytes + self.allow_m.nbytes) / 1e6, {n: len(m) for n, m in self.tag_matchers})

    def _view_of(self, batch: pa.Table) -> "UrlView":
        return self._view_of_urls(batch.column(S.URL))

    def _view_of_urls(self, urls: pa.Array) -> "UrlView":
        return UrlView(urls, powers=self._powers, idna=self._idna)

    def annotate(self, batch: pa.Table):
        view = self._view_of(batch)
        self._view = view
        if not self.tag_matchers:
            return {URL_TAG: pa.nulls(view.n, pa.string())}
        tags = np.full(view.n, None, dtype=object)
        for name, m in self.tag_matchers:
            tags[m.match(view).mask & (tags == None)] = name  # noqa: E711 - elementwise
        return {URL_TAG: pa.array(tags.tolist(), pa.string())}

    def keep(self, batch: pa.Table):
        view = getattr(self, "_view", None)
        if view is None or view.n != batch.num_rows:
            view = self._view_of(batch)
        self._view = None
        n = view.n
        no = np.zeros(n, dtype=bool)
        blocked = self.block.match(view) if len(self.block) else None
        allowed = self.allow_m.match(view) if len(self.allow_m) else None
        b = blocked.mask if blocked is not None else no
        a = allowed.mask if allowed is not None else no
        drop = b & ~a
        no_host = (pc.binary_length(view.hosts).to_numpy(zero_copy_only=False) == 0)
        counters = {"no_url": no_host.astype(np.int64), "allowed_over_block": (b & a).astype(np.int64)}
        if not self.config.allow_only:
            rows = np.flatnonzero(drop)
            return ~drop, Reasons("blocked", blocked.describe(rows) if len(rows) else None), counters
        # allow_only: the blocked rows say which entry, the others which host had no allow entry
        rows = np.flatnonzero(drop | ~a)
        is_blocked = drop[rows]
        detail = pc.if_else(pa.array(no_host[rows]), "no url", view.hosts.take(pa.array(rows)))
        if is_blocked.any():
            detail = pc.replace_with_mask(detail, pa.array(is_blocked), blocked.describe(rows[is_blocked]))
        rule = pc.if_else(pa.array(is_blocked), "blocked", "not_allowed")
        return ~(drop | ~a), Reasons(rule, detail), counters
