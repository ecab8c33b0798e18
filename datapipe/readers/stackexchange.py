"""StackExchange dump reader: a site's ``Posts.xml`` (``.bz2``/``.gz``/``.zst`` too).

A question and its answers are one document. The posts' bodies are HTML, so the
document is markup like an HTML page: ``raw`` is one small HTML page (the title as
``<h1>``, the question's body, then each answer's body under its own heading, answers
by score, highest first, ties by id) and the ``extract`` stage turns it into text,
the same extraction as for the ``html`` and ``warc`` sources. ``url`` is
``<site>/questions/<id>``, the site taken per dump folder (a glob over several sites'
dumps gets each its own: :meth:`StackExchangeOptions.url_of`); ``source_id`` is the question's
post id; ``metadata`` (option) keeps the question row's attributes (``Tags``,
``Score``, ``CreationDate``, ...).

The dump lists posts by id and an answer can come long after its question, so the file
is read twice, streaming both times through the input layer (decompressed there, its
end and trailer checked) and expat (:mod:`datapipe.readers._xml`: linear in a row's
size, no DTD): the first pass records, per question, the position of its last answer
(two integers per question); the second holds a question's posts only until its last
answer has been read, then emits the document. Memory is bounded by the questions
still waiting for an answer at any point of the file, never the file.

**A damaged file** (cut, a ``.bz2``/``.gz`` whose stream ends early, bytes that stop
parsing): the rule of every reader, documents read before the damage are kept and the
file adds one reject (``read:truncated``, ``read:truncated_bz2``, ``read:invalid_xml``,
...). Here a document is a thread, and a thread is *fully read* when its question and
every answer it has were read before the damage. The first pass stops at the damage,
so the second groups the rows before it: a thread whose question came before the cut
is complete unless answers of it lie beyond, which only the question's ``AnswerCount``
(in every real dump) tells. So a thread with fewer answers read than its
``AnswerCount`` is ``read:incomplete_thread`` (detail: how many were read), never a
document missing answers; without an ``AnswerCount`` it is kept with the answers read.
An answer before the cut whose question is not is ``read:orphan_answer`` as always.

**Budgets.** A row holding more than ``max_doc_bytes`` characters is not kept whole: a
question's thread is ``read:too_large`` (its answers are not held), an answer is a
``read:too_large`` reject of its own and its question's document goes on without it; a
document over ``max_doc_bytes`` once built is ``read:too_large`` too. A row's tag over
8 x ``max_doc_bytes`` bytes ends the file (``read:too_large``), a ``<!DOCTYPE``
(``read:xml_dtd``: no entity can expand) and bad bytes (``read:invalid_xml``) too,
with the rule above. Parsing and answer selection are linear in the file.

Counted rejects, nothing skipped silently: ``read:orphan_answer`` (an answer whose
question is not in the file; detail: the parent id), ``read:not_a_post`` (post types
other than questions and answers: tag wikis, moderator nominations; detail: the type),
``read:empty`` (a question with no title and no body).

Answer selection (options; the question plus the selected answers stay one document):

* ``answers``: ``all`` (every answer, by score; the default), ``accepted`` (only the
  answer the asker accepted, the question's ``AcceptedAnswerId``), ``top`` (only the
  highest-scored answer; ties by lowest id), ``accepted_or_top`` (the accepted answer,
  else the highest-scored one: a common curation policy; the choice is made among the
  answers ``min_score``/``drop_code_only`` leave);
* ``min_score``: answers scoring below it are not selected (with ``accepted``/``top``
  too: an accepted answer at -2 is not kept under ``min_score: 0``);
* ``drop_code_only``: answers that are code with no explanation are not selected: an
  answer with a ``<pre>``/``<code>`` block and fewer than ``min_prose_words`` (3) words
  of letters outside its code blocks.

A question left with no selected answer is rejected as ``read:no_answer`` (with
``accepted``/``top``, or when ``min_score``/``drop_code_only`` removed every answer;
detail: how many answers it had and why none was kept); ``min_answers`` counts
selected answers (``read:few_answers``).
"""

from __future__ import annotations

import bisect
import html
import itertools
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Iterator, Literal

from datapipe.errors import SpecError
from datapipe.readers._xml import XmlTarget, parse, short
from datapipe.readers.base import InputFile, Reader, Rec

QUESTION, ANSWER = "1", "2"
#: a row's tag may be this many times ``max_doc_bytes`` (its HTML is escaped, ``<`` as
#: ``&lt;``) before the file is refused as ``read:too_large``
TOKEN_BYTES_PER_DOC_BYTE = 8


#: the dump folders that name their site: ``coffee.stackexchange.com``, ``stackoverflow.com``,
#: ``ru.stackoverflow.com``, ``mathoverflow.net`` (the names archive.org's dumps unpack to)
_SITE_HOST = re.compile(r"(?i)^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.(?:com|net)$")
SELECTIONS = ("all", "accepted", "top", "accepted_or_top")


@dataclass(kw_only=True, frozen=True)
class StackExchangeOptions:
    """``site_url``: the site's address for the ``url`` column, per dump folder (the
    folder holding ``Posts.xml``): one address for every file
    (``https://coffee.stackexchange.com``), or a template with ``{site}``, the folder's
    name (``https://{site}.com`` for folders named ``coffee.stackexchange``); null: the
    folder's name when it is the site's host (``coffee.stackexchange.com``,
    ``mathoverflow.net``), else no url. ``metadata``: question attributes kept as JSON
    (names or ``all``). ``min_answers``: questions with fewer answers are rejected as
    ``read:few_answers``."""

    site_url: str | None = None
    metadata: tuple[str, ...] | str | None = None
    min_answers: int = 0
    #: which answers make the document: all, accepted (AcceptedAnswerId), top (best score),
    #: accepted_or_top (the accepted answer, else the best-scored one)
    answers: Literal["all", "accepted", "top", "accepted_or_top"] = "all"
    #: answers scoring below this are not selected (None: any score)
    min_score: int | None = None
    #: leave out answers that are only code (a code block, < min_prose_words words outside)
    drop_code_only: bool = False
    min_prose_words: int = 3

    def __post_init__(self) -> None:
        if isinstance(self.metadata, list):
            object.__setattr__(self, "metadata", tuple(self.metadata))
        meta = self.metadata
        if not (meta is None or meta == "all" or (isinstance(meta, tuple) and all(isinstance(k, str) for k in meta))):
            raise SpecError(f"option metadata must be a list of attribute names, 'all', or null, got {meta!r}")
        if not isinstance(self.min_answers, int) or self.min_answers < 0:
            raise SpecError(f"option min_answers must be an integer >= 0, got {self.min_answers!r}")
        if self.answers not in SELECTIONS:
            raise SpecError(f"option answers must be 'all', 'accepted', 'top' or 'accepted_or_top', "
                            f"got {self.answers!r}")
        if self.min_score is not None and (not isinstance(self.min_score, int) or isinstance(self.min_score, bool)):
            raise SpecError(f"option min_score must be an integer (answers scoring below it are left out), "
                            f"got {self.min_score!r}")
        if not isinstance(self.min_prose_words, int) or self.min_prose_words < 1:
            raise SpecError(f"option min_prose_words must be an integer >= 1, got {self.min_prose_words!r}")
        if self.site_url is not None:
            if not isinstance(self.site_url, str) or not self.site_url.startswith(("http://", "https://")):
                raise SpecError(f"option site_url must be an http(s) address, got {self.site_url!r}")
            try:
                self.site_url.format(site="x")
            except (KeyError, IndexError, ValueError):
                raise SpecError(f"option site_url: {self.site_url!r} may hold only {{site}} (the dump folder's "
                                "name), e.g. 'https://{site}.com'") from None

    def url_of(self, folder: str) -> str | None:
        """The site address for the dump in ``folder`` (see the class doc)."""
        if self.site_url is None:
            return f"https://{folder.lower()}" if _SITE_HOST.match(folder) else None
        return self.site_url.format(site=folder).rstrip("/")


_CODE_OPEN = re.compile(r"(?i)<(pre|code)\b")
_CODE_CLOSE = re.compile(r"(?i)</(pre|code)>")
_TAG = re.compile(r"<[^>]+>")
_PROSE_WORD = re.compile(r"[^\W\d_]{2,}")


def code_blocks(body: str) -> list[tuple[int, int]]:
    """Spans of ``<pre ...>...</pre>`` and ``<code ...>...</code>``: the matches of
    ``(?is)<pre\\b.*?</pre>|<code\\b.*?</code>``, found in linear time (that regex scans to
    the end of the body from every block that is never closed)."""
    closes: dict[str, list[int]] = {"pre": [], "code": []}
    for m in _CODE_CLOSE.finditer(body):
        closes[m.group(1).lower()].append(m.start())
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _CODE_OPEN.finditer(body):
        if m.start() < pos:
            continue
        name = m.group(1).lower()
        i = bisect.bisect_left(closes[name], m.end())
        if i < len(closes[name]):
            pos = closes[name][i] + len(name) + 3
            spans.append((m.start(), pos))
    return spans


def is_code_only(body: str, min_prose_words: int = 3) -> bool:
    """Whether an answer body (HTML) is code with no explanation: it has a code block and
    fewer than ``min_prose_words`` words of letters outside its code blocks."""
    spans = code_blocks(body)
    if not spans:
        return False
    rest, pos = [], 0
    for s, e in spans:
        rest.append(body[pos:s])
        pos = e
    rest.append(body[pos:])
    outside = " ".join(rest)
    # tags end at the next ">"; past the last ">" none can (the regex alone would try each "<" to the end)
    last = outside.rfind(">") + 1
    prose = html.unescape(_TAG.sub(" ", outside[:last]) + outside[last:])
    return len(_PROSE_WORD.findall(prose)) < min_prose_words


def select_answers(question: dict[str, str], answers: list[dict[str, str]],
                   opts: StackExchangeOptions) -> tuple[list[dict[str, str]], str]:
    """The answers a document keeps, by score (highest first, ties by id), and when none
    is left, why (for the reject's detail)."""
    ranked = sorted(answers, key=lambda a: (-_int(a.get("Score")), _int(a.get("Id"))))
    why = []
    acc = question.get("AcceptedAnswerId")
    if opts.answers == "accepted":
        ranked = [a for a in ranked if a.get("Id") == acc]
        if not ranked:
            why.append("no accepted answer" if not acc else f"accepted answer {acc} not in the file")
    if opts.min_score is not None:
        kept = [a for a in ranked if _int(a.get("Score")) >= opts.min_score]
        if ranked and not kept:
            why.append(f"scores below min_score {opts.min_score}")
        ranked = kept
    if opts.drop_code_only:
        kept = [a for a in ranked if not is_code_only(a.get("Body", ""), opts.min_prose_words)]
        if ranked and not kept:
            why.append("code only")
        ranked = kept
    if opts.answers == "accepted_or_top":     # after the filters: an accepted answer they left out falls back
        ranked = [a for a in ranked if a.get("Id") == acc][:1] or ranked[:1]
    if opts.answers == "top":
        ranked = ranked[:1]
    if not answers:
        why.append("no answers")
    return ranked, "; ".join(why)


def page_html(question: dict[str, str], answers: list[dict[str, str]]) -> bytes:
    """The question and its answers as one HTML page (bodies are HTML already)."""
    title = html.escape(question.get("Title", ""))
    parts = [f"<html><head><meta charset=\"utf-8\"><title>{title}</title></head><body><article>",
             f"<h1>{title}</h1>", f"<div>{question.get('Body', '')}</div>"]
    for a in answers:
        parts.append(f"<h2>Answer</h2><div>{a.get('Body', '')}</div>")
    parts.append("</article></body></html>")
    return "\n".join(parts).encode("utf-8")


class StackExchangeReader(Reader):
    """One document (HTML in ``raw``) per question with its answers."""

    format = "stackexchange"
    Options = StackExchangeOptions
    markup = True

    def _compression(self, f: InputFile) -> str | None:
        return self.input(f).compression()

    def _rows(self, f: InputFile) -> Iterator[dict[str, str]]:
        """The ``<row>`` elements' attributes, streamed through the input layer."""
        with self.input(f).open() as fh:
            yield from parse(fh, _RowTarget(), max_token=TOKEN_BYTES_PER_DOC_BYTE * self.max_doc_bytes)

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        last_answer: dict[str, int] = {}      # question id -> position of its last answer
        questions: set[str] = set()
        damage: Exception | None = None       # what ended the first pass early (a cut, bad XML)
        n_rows = 0
        try:
            for pos, row in enumerate(self._rows(f)):
                n_rows = pos + 1
                kind = row.get("PostTypeId")
                if kind == QUESTION:
                    questions.add(row.get("Id", ""))
                elif kind == ANSWER:
                    last_answer[row.get("ParentId", "")] = pos
        except Exception as exc:   # re-raised after the threads read before it (the reader boundary names it)
            if n_rows == 0:
                raise
            damage = exc
        # question id -> [question row (None until read), answers so far, answers seen, characters
        # when the question's row is over max_doc_bytes]
        waiting: dict[str, list] = {}
        rows = self._rows(f)
        try:
            for pos, row in enumerate(itertools.islice(rows, n_rows)):
                kind, pid = row.get("PostTypeId"), row.get("Id", "")
                size = _chars(row)
                if kind == QUESTION:
                    qid = pid
                    thread = waiting.setdefault(qid, [None, [], 0, 0])
                    if size > self.max_doc_bytes:   # the document would be too: keep only the small attributes
                        thread[3] = size
                        row = {k: v for k, v in row.items() if len(v) <= 1024}
                    thread[0] = row
                elif kind == ANSWER:
                    qid = row.get("ParentId", "")
                    key = f"{f.rel}#{pid}"
                    if qid not in questions:
                        yield Rec(key, key, reason="orphan_answer", detail=short(qid), source_id=pid)
                        continue
                    thread = waiting.setdefault(qid, [None, [], 0, 0])
                    thread[2] += 1
                    if size > self.max_doc_bytes:
                        yield Rec(key, key, reason="too_large", source_id=pid,
                                  detail=f"an answer to question {short(qid)} of {size} characters "
                                         f"> max_doc_bytes ({self.max_doc_bytes}); left out of the question's document")
                    else:
                        thread[1].append(row)
                else:
                    key = f"{f.rel}#{pid}"
                    yield Rec(key, key, reason="not_a_post", detail=f"PostTypeId {short(kind)}", source_id=pid)
                    continue
                question, answers, seen, too_large = waiting[qid]
                if question is not None and last_answer.get(qid, -1) <= pos:   # no answer left to come
                    del waiting[qid]
                    if too_large:
                        key = f"{f.rel}#{qid}"
                        yield Rec(key, key, reason="too_large", source_id=qid,
                                  detail=f"the question's row holds {too_large} characters > max_doc_bytes "
                                         f"({self.max_doc_bytes})")
                    elif damage is not None and seen < _int(question.get("AnswerCount")):
                        key = f"{f.rel}#{qid}"
                        yield Rec(key, key, reason="incomplete_thread", source_id=qid,
                                  detail=f"{seen} of the question's {_int(question.get('AnswerCount'))} answers "
                                         "(AnswerCount) were read before the file's damage; the rest were not")
                    else:
                        yield self._document(f, question, answers)
        finally:
            rows.close()
        if damage is not None:
            raise damage

    def _document(self, f: InputFile, question: dict[str, str], answers: list[dict[str, str]]) -> Rec:
        opts: StackExchangeOptions = self.options
        qid = question.get("Id", "")
        key = f"{f.rel}#{qid}"
        meta = None
        if opts.metadata is not None:
            fields = ({k: v for k, v in question.items() if k != "Body"} if opts.metadata == "all"
                      else {k: question.get(k) for k in opts.metadata})
            meta = json.dumps(fields, sort_keys=True, ensure_ascii=False)
        if not question.get("Title", "").strip() and not question.get("Body", "").strip():
            return Rec(key, key, reason="empty", detail="question without title or body", source_id=qid, metadata=meta)
        n_all = len(answers)
        answers, why = select_answers(question, answers, opts)
        selecting = opts.answers != "all" or opts.min_score is not None or opts.drop_code_only
        if selecting and not answers:
            return Rec(key, key, reason="no_answer", detail=f"{n_all} answer(s), none selected: {why}",
                       source_id=qid, metadata=meta)
        if len(answers) < opts.min_answers:
            return Rec(key, key, reason="few_answers", detail=str(len(answers)), source_id=qid, metadata=meta)
        raw = page_html(question, answers)
        if len(raw) > self.max_doc_bytes:
            return Rec(key, key, reason="too_large", detail=self._too_large(len(raw)), source_id=qid, metadata=meta)
        site = opts.url_of(posixpath.basename(posixpath.dirname(f.path.rstrip("/").replace("\\", "/"))))
        url = f"{site}/questions/{qid}" if site else None
        return Rec(key, key, raw=raw, url=url, source_id=qid, metadata=meta)


class _RowTarget(XmlTarget):
    """Collects each ``<row>``'s attributes."""

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        super().start(tag, attrib)
        if tag == "row":
            self.ready.append(attrib)


def _chars(row: dict[str, str]) -> int:
    return sum(len(v) for v in row.values())


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
