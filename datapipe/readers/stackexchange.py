"""StackExchange dump reader: a site's ``Posts.xml`` (``.bz2``/``.gz``/``.zst`` too).

A question and its answers are one document. The posts' bodies are HTML, so the
document is markup like an HTML page: ``raw`` is one small HTML page (the title as
``<h1>``, the question's body, then each answer's body under its own heading, answers
by score, highest first, ties by id) and the ``extract`` stage turns it into text,
the same extraction as for the ``html`` and ``warc`` sources. ``url`` is
``<site_url>/questions/<id>`` when ``site_url`` is set; ``source_id`` is the question's
post id; ``metadata`` (option) keeps the question row's attributes (``Tags``,
``Score``, ``CreationDate``, ...).

The dump lists posts by id and an answer can come long after its question, so the file
is read twice, streaming both times: the first pass records, per question, the id of
its last answer (two integers per question); the second holds a question's posts only
until its last answer has been read, then emits the document. Memory is bounded by the
questions still waiting for an answer at any point of the file, never the file.

Counted rejects, nothing skipped silently: ``read:orphan_answer`` (an answer whose
question is not in the file; detail: the parent id), ``read:not_a_post`` (post types
other than questions and answers: tag wikis, moderator nominations; detail: the type),
``read:empty`` (a question with no title and no body).

Answer selection (options; the question plus the selected answers stay one document):

* ``answers``: ``all`` (every answer, by score; the default), ``accepted`` (only the
  answer the asker accepted, the question's ``AcceptedAnswerId``), ``top`` (only the
  highest-scored answer; ties by lowest id);
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

import bz2
import html
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterator, Literal

from datapipe.errors import SpecError
from datapipe.readers._streams import FileCorrupt, compression_of, open_binary
from datapipe.readers.base import InputFile, Rec, Reader

QUESTION, ANSWER = "1", "2"


@dataclass(kw_only=True, frozen=True)
class StackExchangeOptions:
    """``site_url``: the site's address (``https://coffee.stackexchange.com``) for the
    ``url`` column. ``metadata``: question attributes kept as JSON (names or ``all``).
    ``min_answers``: questions with fewer answers are rejected as ``read:few_answers``."""

    site_url: str | None = None
    metadata: tuple[str, ...] | str | None = None
    min_answers: int = 0
    #: which answers make the document: all, accepted (AcceptedAnswerId), top (best score)
    answers: Literal["all", "accepted", "top"] = "all"
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
        if self.answers not in ("all", "accepted", "top"):
            raise SpecError(f"option answers must be 'all', 'accepted' or 'top', got {self.answers!r}")
        if self.min_score is not None and (not isinstance(self.min_score, int) or isinstance(self.min_score, bool)):
            raise SpecError(f"option min_score must be an integer (answers scoring below it are left out), "
                            f"got {self.min_score!r}")
        if not isinstance(self.min_prose_words, int) or self.min_prose_words < 1:
            raise SpecError(f"option min_prose_words must be an integer >= 1, got {self.min_prose_words!r}")
        if self.site_url is not None and not self.site_url.startswith(("http://", "https://")):
            raise SpecError(f"option site_url must be an http(s) address, got {self.site_url!r}")


_CODE_BLOCK = re.compile(r"(?is)<pre\b.*?</pre>|<code\b.*?</code>")
_TAG = re.compile(r"<[^>]+>")
_PROSE_WORD = re.compile(r"[^\W\d_]{2,}")


def is_code_only(body: str, min_prose_words: int = 3) -> bool:
    """Whether an answer body (HTML) is code with no explanation: it has a code block and
    fewer than ``min_prose_words`` words of letters outside its code blocks."""
    if not _CODE_BLOCK.search(body):
        return False
    prose = html.unescape(_TAG.sub(" ", _CODE_BLOCK.sub(" ", body)))
    return len(_PROSE_WORD.findall(prose)) < min_prose_words


def select_answers(question: dict[str, str], answers: list[dict[str, str]],
                   opts: StackExchangeOptions) -> tuple[list[dict[str, str]], str]:
    """The answers a document keeps, by score (highest first, ties by id), and when none
    is left, why (for the reject's detail)."""
    ranked = sorted(answers, key=lambda a: (-_int(a.get("Score")), _int(a.get("Id"))))
    why = []
    if opts.answers == "accepted":
        acc = question.get("AcceptedAnswerId")
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
        return "bz2" if f.path.lower().endswith(".bz2") else compression_of(f.path)

    def _rows(self, f: InputFile) -> Iterator[dict[str, str]]:
        """The ``<row>`` elements' attributes, streamed."""
        fh = bz2.open(f.path, "rb") if f.path.lower().endswith(".bz2") else open_binary(f.path, compression_of(f.path))
        try:
            with fh:
                root = None
                for event, elem in ET.iterparse(fh, events=("start", "end")):
                    if event == "start":
                        root = elem if root is None else root
                        continue
                    if elem.tag == "row":
                        yield dict(elem.attrib)
                        root.clear()
        except ET.ParseError as exc:
            raise FileCorrupt("invalid_xml", str(exc)) from exc

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        last_answer: dict[str, int] = {}      # question id -> position of its last answer
        questions: set[str] = set()
        for pos, row in enumerate(self._rows(f)):
            kind = row.get("PostTypeId")
            if kind == QUESTION:
                questions.add(row.get("Id", ""))
            elif kind == ANSWER:
                last_answer[row.get("ParentId", "")] = pos
        # question id -> [question row (None until read), answers so far]
        waiting: dict[str, list] = {}
        for pos, row in enumerate(self._rows(f)):
            kind, pid = row.get("PostTypeId"), row.get("Id", "")
            if kind == QUESTION:
                qid = pid
                waiting.setdefault(qid, [None, []])[0] = row
            elif kind == ANSWER:
                qid = row.get("ParentId", "")
                if qid not in questions:
                    key = f"{f.rel}#{pid}"
                    yield Rec(key, key, reason="orphan_answer", detail=qid, source_id=pid)
                    continue
                waiting.setdefault(qid, [None, []])[1].append(row)
            else:
                key = f"{f.rel}#{pid}"
                yield Rec(key, key, reason="not_a_post", detail=f"PostTypeId {kind}", source_id=pid)
                continue
            question, answers = waiting[qid]
            if question is not None and last_answer.get(qid, -1) <= pos:   # no answer left to come
                del waiting[qid]
                yield self._document(f, question, answers)

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
        url = f"{opts.site_url.rstrip('/')}/questions/{qid}" if opts.site_url else None
        return Rec(key, key, raw=raw, url=url, source_id=qid, metadata=meta)


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
