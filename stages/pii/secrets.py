"""Secrets in code and configuration that have no fixed prefix: a value assigned to a
secret-looking name, and cloud credential files.

:mod:`stages.pii.detect` finds secrets by their own shape (``AKIA...`` key ids,
``ghp_`` GitHub tokens, ``xox?-`` Slack tokens, ``sk_live_`` Stripe keys, private key
blocks, JWTs, passwords in URLs and connection strings). What it cannot see by shape
is the other half of most credentials: the AWS secret access key, a Django
``SECRET_KEY``, a GCP service account's ``private_key_id``, an ``api_token: ...`` in a
YAML file, ``DB_PASSWORD=...`` in a ``.env`` file. Those are found here by what they
are assigned to, in the syntaxes code and config use (``name = "v"``, ``name: v``,
``"name": "v"``, ``NAME=v``, ``name => 'v'``, ``name := "v"``), and kept only when
the value looks like a real secret:

* **names**: the key, with separators removed and lower-cased, ends in a secret word
  (:data:`SECRET_SUFFIXES`: ``secret``, ``token``, ``password``, ``apikey``,
  ``accesskey``, ``privatekey``, ``privatekeyid``, ``clientsecret`` ...); ``tokenizer``,
  ``max_tokens``, ``token_url``, ``password_field`` do not qualify;
* **values** of key/token names: at least 16 characters of a token alphabet, two or
  more character classes, Shannon entropy at least ``3.0`` bits per character (hex
  digests of 32+ characters reach ~3.7, English words ~2.5, ``aaaa...`` 0), no
  placeholder word (``your``, ``example``, ``xxxx``, ``changeme`` ...), no template
  (``${VAR}``, ``{{ var }}``, ``<key>``, ``%(x)s``, ``os.environ``), not a UUID-free
  identifier path (``module.Class``) or URL;
* **values** of password names: 8+ characters, not a placeholder, at least three of
  lower/upper/digit/symbol, or 2 classes with entropy >= 3.0 (``hunter2``,
  ``testpass``, ``password123`` survive as test fixtures).

A UUID, a lock file's ``integrity``/``checksum`` hash or a git sha are not assigned to
secret names and are not reported; assigned to one (``api_key = "<uuid>"``: Heroku's
keys are UUIDs) they are. Values carrying the ``EXAMPLE`` marker (our own
pseudonyms) are skipped, which keeps scrubbing idempotent.

Spans are typed ``api_key`` (keys, tokens, secrets) or ``password``; the ``pii`` stage
replaces them by its per-type policy.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterator, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the marker every secret pseudonym carries (same as ``stages.pii.detect.EXAMPLE_MARK``)
EXAMPLE_MARK = "EXAMPLE"

#: Normalised key endings (lower case, no ``_ - .``) that make a name secret-looking.
SECRET_SUFFIXES = (
    "secret", "secrets", "token", "apikey", "apitoken", "accesskey", "secretkey", "privatekey", "privatekeyid",
    "clientsecret", "authkey", "signingkey", "encryptionkey", "masterkey", "accesskeysecret", "secretaccesskey",
    "webhooksecret", "appsecret", "consumersecret", "bearertoken", "credential", "credentials", "passphrase",
)
PASSWORD_SUFFIXES = ("password", "passwd", "pwd", "pass", "dbpass")
_NOT_SECRET_NAMES = re.compile(
    r"(?:tokenizer|tokens|tokentype|tokenurl|tokenendpoint|secretname|secretref|secretpath|secretfile|keyfile"
    r"|passwordfield|passwordhash|passwordlength|passwordpolicy|csrftoken|nexttoken|pagetoken|continuationtoken)$")

#: RE2- and ``re``-compatible gate: a secret word followed by an assignment. A necessary
#: condition of every detection of :func:`find_assigned`.
ASSIGN_GATE = (r"(?i:secret|token|passw|pwd|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?key"
               r"|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|credential|passphrase)"
               r"[A-Za-z0-9_.\-]{0,40}[\"']?[ \t]*(?:=|:)")

_GATE_PY = re.compile(ASSIGN_GATE)
_NAME_WORD_RE = re.compile(
    r"(?i)(?:secret|token|passw|pwd|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?key|signing[_\-]?key"
    r"|encryption[_\-]?key|master[_\-]?key|credential|passphrase)")
# after the secret word: rest of the name, optional closing quote, the assignment, the value
_ASSIGN_TAIL_RE = re.compile(
    r"[A-Za-z0-9_.\-]{0,40}[\"']?[ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*"
    r"(?:[rbuf]?(?P<q>[\"'`])(?P<quoted>[^\"'`\s\\]{6,300})(?P=q)"      # quoted value
    r"|(?P<bare>[^\s\"'`,;&(){}\[\]<>=]{6,300}={0,2})[ \t]*(?:#[^\n]*)?(?:\r?\n|$))")  # bare value to end of line
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PLACEHOLDER = re.compile(
    r"(?i)your|example|sample|dummy|placeholder|redacted|changeme|change_me|replace|insert|xxxx|\*\*\*|\.\.\."
    r"|^(?:none|null|nil|true|false|undefined|test|testing|secret|token|password|passwd|string|str|bytes|value"
    r"|default|empty|required|optional)$")
_TEMPLATE = re.compile(r"\$\{|\$[A-Z_]|\{\{|\}\}|^<.*>$|%\(|%s|^\{.*\}$|environ|getenv|process\.env|^ENV\[")
_TOKENISH = re.compile(r"^[A-Za-z0-9+/=_\-.~:!@#$%^&*()]+$")
#: identifiers, not secrets: dotted names, snake_case, SCREAMING_CASE, kebab-case
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$|^[a-z][a-z0-9]*(?:[_\-][a-z0-9]+)+$"
                          r"|^[A-Z][A-Z0-9]*(?:[_\-][A-Z0-9]+)+$")

#: GCP service account key file: ``"private_key_id": "<40 hex>"``
_GCP_KEY_ID_RE = re.compile(r"\"private_key_id\"[ \t]*:[ \t]*\"([0-9a-f]{40})\"")


class SecretSpan(NamedTuple):
    start: int
    end: int
    type: str  # "api_key" or "password"


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(k / n * math.log2(k / n) for k in Counter(value).values())


def _classes(value: str) -> int:
    return (any(c.islower() for c in value) + any(c.isupper() for c in value) + any(c.isdigit() for c in value)
            + any(not c.isalnum() for c in value))


def _name_kind(name: str) -> str | None:
    """``api_key``, ``password`` or None for a key name."""
    norm = re.sub(r"[^a-z0-9]", "", name.lower())
    norm = re.sub(r"(?:value|string|str|b64|base64|hex|raw|[0-9]+)$", "", norm)
    if not norm or _NOT_SECRET_NAMES.search(norm):
        return None
    if norm.endswith(PASSWORD_SUFFIXES):
        return "password"
    if norm.endswith(SECRET_SUFFIXES):
        return "api_key"
    return None


def value_plausible(value: str, kind: str, min_entropy: float = 3.0) -> bool:
    """Whether ``value`` assigned to a ``kind`` name looks like a real secret."""
    if EXAMPLE_MARK in value or _PLACEHOLDER.search(value) or _TEMPLATE.search(value):
        return False
    if not _TOKENISH.match(value) or _DOTTED_NAME.match(value) or "://" in value:
        return False
    if len(set(value)) < 5:
        return False
    if kind == "password":
        if len(value) < 8:
            return False
        classes = _classes(value)
        return classes >= 3 or (classes == 2 and entropy(value) >= min_entropy)
    if len(value) < 16:
        return False
    return _classes(value) >= 2 and entropy(value) >= min_entropy


def _gated_lines(text: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of the lines on which :data:`ASSIGN_GATE` matches. Every
    detection lies within one line, so only these are scanned in Python; RE2 (through
    pyarrow) finds them at a few hundred MB/s where Python's ``re`` would crawl through
    a case-insensitive alternation at every position."""
    lines = text.split("\n")
    if len(lines) == 1:
        if _GATE_PY.search(text):
            yield 0, text
        return
    hit = pc.match_substring_regex(pa.array(lines, pa.string()), ASSIGN_GATE).to_numpy(zero_copy_only=False)
    if not hit.any():
        return
    starts = np.zeros(len(lines), dtype=np.int64)
    np.cumsum(np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))[:-1] + 1, out=starts[1:])
    for i in np.flatnonzero(hit).tolist():
        yield int(starts[i]), lines[i]


def find_assigned(text: str, min_entropy: float = 3.0) -> Iterator[SecretSpan]:
    """Secret values assigned to secret-looking names (see the module docstring)."""
    for offset, line in _gated_lines(text):
        for sp in _find_in_line(line, min_entropy):
            yield SecretSpan(sp.start + offset, sp.end + offset, sp.type)


def _find_in_line(text: str, min_entropy: float) -> Iterator[SecretSpan]:
    for m in _NAME_WORD_RE.finditer(text):
        tail = _ASSIGN_TAIL_RE.match(text, m.end())
        if tail is None:
            continue
        start = m.start()
        while start > 0 and text[start - 1] in _IDENT_CHARS:
            start -= 1
        if start > 0 and text[start - 1] in ":/@\\":
            continue  # part of a qualified name or a path ("AWS::ApiGateway::ApiKey")
        head_end = tail.start("quoted") if tail.group("quoted") is not None else tail.start("bare")
        name = re.split(r"[\"'\s:=>]", text[start:head_end], maxsplit=1)[0]
        kind = _name_kind(name)
        if kind is None:
            continue
        g = "quoted" if tail.group("quoted") is not None else "bare"
        value = tail.group(g)
        if value_plausible(value, kind, min_entropy):
            yield SecretSpan(tail.start(g), tail.end(g), kind)


def find_gcp_key_ids(text: str) -> Iterator[SecretSpan]:
    """The ``private_key_id`` of a GCP service account key file (its ``private_key``
    block is found by the private key detector)."""
    if "private_key_id" not in text:
        return
    for m in _GCP_KEY_ID_RE.finditer(text):
        yield SecretSpan(m.start(1), m.end(1), "api_key")


def find(text: str, min_entropy: float = 3.0) -> list[SecretSpan]:
    """Every detection of this module, in text order (may overlap the shape-based
    detectors' spans; the PII detector resolves overlaps)."""
    spans = list(find_assigned(text, min_entropy)) + list(find_gcp_key_ids(text))
    spans.sort()
    return spans
