"""Byte-level BPE training for the ``tokenize`` stage: ``datapipe tokenizer train``
(and ``tokenizer info``), wired into the command line with :func:`add_cli`.

Loading a tokenizer and its fingerprint live beside it (:mod:`stages.tokenize.identity`):
shards, the loader and mixes check them. Training input is read by the job's readers
(:func:`datapipe.readers.iter_documents`), so the tokenizer sees text the way a job
produces it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers import ReadStats
from stages.tokenize.identity import (
    DEFAULT_EOS, EOS_CANDIDATES, META_FILE, SENTINEL_TOKENS, TOKENIZER_FILE, TokenizerInfo, fingerprint,
    resolve_eos, sentinel_ids, tokenizer_info, vocab_size,
)
from stages.models import training_text as corpus

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------
# training


#: GPT-2's pre-tokenizer pattern with combining marks (\\p{M}) allowed inside letter runs
LETTERS_MARKS_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)| ?[\p{L}\p{M}]+| ?\p{N}+| ?[^\s\p{L}\p{M}\p{N}]+|\s+(?!\S)|\s+"""
#: code: a newline run with the indentation after it is one piece; other runs of spaces and
#: tabs are pieces (the last space of a run goes with the word after it, as in GPT-2);
#: identifiers (letters, marks, ``_``) are pieces; every digit is its own piece
CODE_PATTERN = (r"""[\r\n]+[ \t]*|[ \t]+(?=[ \t]*[\r\n]|$)| ?[\p{L}\p{M}_]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}_]+"""
                r"""|[ \t]+(?=[ \t])|[ \t]+|\s+""")
PRE_TOKENIZERS = ("gpt2", "letters+marks", "code")
#: ``tokenizer train --preset NAME``: the pre-tokenizer and the special tokens it sets
PRESETS = {"code": {"pre_tokenizer": "code", "special_tokens": (DEFAULT_EOS, *SENTINEL_TOKENS)}}


def _pre_tokenizer(name: str):
    from tokenizers import Regex, pre_tokenizers

    if name == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False)
    pattern = CODE_PATTERN if name == "code" else LETTERS_MARKS_PATTERN
    return pre_tokenizers.Sequence([   # byte-level after the split: every byte string round-trips
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


@dataclass(kw_only=True, frozen=True)
class TrainConfig:
    """Byte-level BPE training options.

    ``vocab_size`` counts the 256 byte symbols and the special tokens; special tokens get
    the first ids (0, 1, ...) in the order given, so the default EOS is id 0.
    """

    vocab_size: int
    special_tokens: tuple[str, ...] = (DEFAULT_EOS,)
    eos: str | None = None
    min_frequency: int = 2
    #: how text is cut before BPE: ``gpt2`` (GPT-2's pattern: letter runs end at a
    #: combining mark, so a Devanagari or Bengali word falls into 3-4 pieces that BPE can
    #: never merge), ``letters+marks`` (the same pattern with marks inside letter runs) or
    #: ``code`` (:data:`CODE_PATTERN`: indentation and whitespace runs, single digits)
    pre_tokenizer: str = "gpt2"
    #: a named set of the options above (:data:`PRESETS`), recorded in the card
    preset: str | None = None

    def __post_init__(self) -> None:
        if self.pre_tokenizer not in PRE_TOKENIZERS:
            raise SpecError(f"pre_tokenizer must be one of {list(PRE_TOKENIZERS)}, got {self.pre_tokenizer!r}")
        if self.preset is not None:
            want = PRESETS.get(self.preset)
            if want is None:
                raise SpecError(f"preset {self.preset!r} is unknown; presets: {sorted(PRESETS)}")
            missing = [t for t in want["special_tokens"] if t not in self.special_tokens]
            if self.pre_tokenizer != want["pre_tokenizer"] or missing:
                raise SpecError(f"preset {self.preset!r} means pre_tokenizer {want['pre_tokenizer']!r} and special "
                                f"tokens {list(want['special_tokens'])}; got pre_tokenizer {self.pre_tokenizer!r}"
                                + (f" without {missing}" if missing else "")
                                + ": build it with preset_config (or `tokenizer train --preset`), which sets them")
        floor = 256 + len(self.special_tokens)
        if self.vocab_size < floor:
            raise SpecError(
                f"vocab_size must be at least {floor} (256 byte symbols + {len(self.special_tokens)} "
                f"special tokens), got {self.vocab_size}"
            )
        if self.vocab_size > 2**31 - 1:
            raise SpecError(f"vocab_size must fit int32, got {self.vocab_size}")
        if len(set(self.special_tokens)) != len(self.special_tokens) or any(not t for t in self.special_tokens):
            raise SpecError(f"special_tokens must be distinct non-empty strings, got {list(self.special_tokens)}")
        if self.eos is not None and self.eos not in self.special_tokens:
            raise SpecError(f"eos {self.eos!r} must be one of special_tokens {list(self.special_tokens)}")
        if self.eos is None and not any(t in self.special_tokens for t in EOS_CANDIDATES):
            raise SpecError(
                f"none of special_tokens {list(self.special_tokens)} is a known EOS token "
                f"({', '.join(EOS_CANDIDATES)}); set eos: to the one that ends documents"
            )
        if self.min_frequency < 1:
            raise SpecError(f"min_frequency must be >= 1, got {self.min_frequency}")


def preset_config(preset: str, *, vocab_size: int, special_tokens: Sequence[str] = (),
                  **options: Any) -> TrainConfig:
    """The :class:`TrainConfig` of ``preset`` (:data:`PRESETS`): its pre-tokenizer and special
    tokens (first, in its order, so EOS is id 0 and the sentinels follow), then
    ``special_tokens`` the caller adds."""
    want = PRESETS.get(preset)
    if want is None:
        raise SpecError(f"preset {preset!r} is unknown; presets: {sorted(PRESETS)}")
    if options.get("pre_tokenizer", want["pre_tokenizer"]) != want["pre_tokenizer"]:
        raise SpecError(f"--preset {preset} sets the pre-tokenizer to {want['pre_tokenizer']!r}; leave "
                        f"--pre-tokenizer {options['pre_tokenizer']} out")
    options.pop("pre_tokenizer", None)
    specials = tuple(dict.fromkeys((*want["special_tokens"], *special_tokens)))
    return TrainConfig(vocab_size=vocab_size, special_tokens=specials, pre_tokenizer=want["pre_tokenizer"],
                       preset=preset, **options)


def train_tokenizer(
    texts: Iterable[str], out_dir: str | os.PathLike[str], *, config: TrainConfig,
    trained_on: dict[str, Any] | None = None,
) -> TokenizerInfo:
    """Train a byte-level BPE tokenizer on ``texts`` and write ``out_dir/tokenizer.json``
    plus ``out_dir/tokenizer.meta.json`` (fingerprint, EOS, options, ``trained_on``).

    Same texts in the same order and same config give the same fingerprint. Files are
    written under a temporary name and renamed, so a reader never sees half a file.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = _pre_tokenizer(config.pre_tokenizer)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        min_frequency=config.min_frequency,
        special_tokens=list(config.special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    counter = _CountingIter(texts)
    tok.train_from_iterator(counter, trainer=trainer)
    if counter.documents == 0:
        raise SpecError("tokenizer training got no text: check the input paths/globs")
    tok.encode_special_tokens = True
    eos_token, eos_id = resolve_eos(tok, config.eos)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tf = out / TOKENIZER_FILE
    _atomic_write(tf, tok.to_str(pretty=True).encode("utf-8") + b"\n")
    info = TokenizerInfo(
        path=str(tf), fingerprint=fingerprint(tok), vocab_size=vocab_size(tok),
        eos_id=eos_id, eos_token=eos_token, special=sentinel_ids(tok),
    )
    meta = {
        "fingerprint": info.fingerprint,
        "vocab_size": info.vocab_size,
        "eos_token": eos_token,
        "eos_id": eos_id,
        "special_tokens": list(config.special_tokens),
        "min_frequency": config.min_frequency,
        "pre_tokenizer": config.pre_tokenizer,
        **({"preset": config.preset, "sentinels": info.special} if config.preset else {}),
        "trained_on": {"documents": counter.documents, "bytes": counter.bytes, **(trained_on or {})},
    }
    _atomic_write(out / META_FILE, (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    log.info("trained tokenizer %s (vocab %d) on %d texts, %d bytes", info.fingerprint, info.vocab_size,
             counter.documents, counter.bytes)
    return info


class _CountingIter:
    """Pass texts through while counting them (training reports what it saw)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._it = iter(texts)
        self.documents = 0
        self.bytes = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        t = next(self._it)
        self.documents += 1
        self.bytes += len(t.encode("utf-8", "surrogatepass"))
        return t


def _atomic_write(path: Path, data: bytes) -> None:
    fs.write_bytes(str(path), data)


# ---------------------------------------------------------------------------------------
# training input: any input a job reads (text in paragraph pieces), a job's Parquet documents

#: text files are cut into paragraph-aligned pieces of at most this many characters
#: (the text reader's ``split`` option), so ``max_bytes`` stops close to where it says
PIECE_CHARS = 1 << 16
#: record fields that choose what to train on in a job's Parquet documents
_JOB_FIELDS = ("source", "_reject_reason")


def training_texts(
    inputs: Sequence[str | os.PathLike[str]], *, max_bytes: int | None = None, text_key: str = "text",
    sources: Sequence[str] = (), stats: ReadStats | None = None,
) -> Iterator[str]:
    """Texts of ``inputs`` (paths or globs, ``[format:]`` as everywhere) in order until
    ``max_bytes`` of UTF-8 (a prefix sample, so the same files give the same sample).
    Read like a job reads them (:mod:`stages.models.training_text`): plain text in paragraph pieces,
    JSONL/Parquet by ``text_key``, HTML/WARC pages extracted. A record that carries
    ``_reject_reason`` (a job's Parquet documents) is used only when it is null (kept
    rows), and with ``sources`` only when its ``source`` field is one of them."""
    seen = 0
    wanted = set(sources)
    docs = corpus.iter_docs([os.fspath(p) for p in inputs], text_key=text_key, fields=_JOB_FIELDS,
                            text_split={"split": "paragraphs", "max_chars": PIECE_CHARS}, stats=stats)
    for doc in docs:
        if doc.fields["_reject_reason"] is not None:
            continue
        if wanted and doc.fields["source"] is not None and doc.fields["source"] not in wanted:
            continue
        if max_bytes is not None and seen >= max_bytes:
            return
        seen += len(doc.text.encode("utf-8", "surrogatepass"))
        yield doc.text


# ---------------------------------------------------------------------------------------
# CLI


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``datapipe tokenizer train``. Handlers return the exit code (``args.func(args)``)."""
    p = subparsers.add_parser("tokenizer", help="train or describe a byte-level BPE tokenizer")
    sp = p.add_subparsers(dest="tokenizer_command", required=True)
    t = sp.add_parser("train", help="train a byte-level BPE tokenizer on text files or a job's documents")
    t.add_argument("--source-glob", action="append", required=True, metavar="GLOB",
                   help="input files, [format:]path or glob (text, JSONL, a job's .parquet documents, HTML, "
                        "WARC; compressed or not); repeatable")
    t.add_argument("--vocab-size", type=int, required=True, help="total vocabulary incl. 256 bytes and specials")
    t.add_argument("--out", required=True, metavar="DIR", help="writes DIR/tokenizer.json and DIR/tokenizer.meta.json")
    t.add_argument("--special-token", action="append", metavar="TOKEN",
                   help=f"special token (repeatable; default {DEFAULT_EOS})")
    t.add_argument("--eos", default=None, help="which special token ends documents (default: auto)")
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--max-bytes", type=int, default=None, help="train on at most this many bytes of text")
    t.add_argument("--text-key", default="text", help="field/column holding text in JSONL/Parquet inputs")
    t.add_argument("--source", action="append", default=[], metavar="NAME",
                   help="Parquet inputs: only documents of this source (repeatable)")
    t.add_argument("--pre-tokenizer", choices=PRE_TOKENIZERS, default=None,
                   help="gpt2 (default), letters+marks (keeps Indic and other words with combining marks whole) "
                        "or code (whitespace runs and indentation, single digits)")
    t.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="code: the code pre-tokenizer, EOS then the FIM and repository sentinels as special tokens "
                        "(" + ", ".join(SENTINEL_TOKENS) + "); --special-token adds more after them")
    t.add_argument("--balance", choices=["language"], default=None,
                   help="language: sample each language with probability ~ n^alpha (n: its bytes in the input)")
    t.add_argument("--alpha", type=float, default=0.3, help="--balance temperature exponent (1: as found, 0: uniform)")
    t.add_argument("--lang-key", default=None, help="--balance: field holding the language (default: lid.176)")
    t.add_argument("--langid", default=None, help="--balance: fastText language-ID model (default: packaged lid.176)")
    t.add_argument("--eval-input", action="append", default=[], metavar="GLOB",
                   help="after training, write the fertility table on this sample into the card (repeatable)")
    t.add_argument("--eval-lang-key", default=None, help="field holding the language in --eval-input")
    t.set_defaults(func=_cli_train)
    from stages.tokenize.eval import add_eval_cli

    add_eval_cli(sp)
    d = sp.add_parser("info", help="print a tokenizer's fingerprint, vocabulary size and EOS")
    d.add_argument("path")
    d.add_argument("--eos", default=None)
    d.set_defaults(func=_cli_info)


def _cli_train(args: argparse.Namespace) -> int:
    if args.preset:
        extra = {"pre_tokenizer": args.pre_tokenizer} if args.pre_tokenizer else {}
        cfg = preset_config(args.preset, vocab_size=args.vocab_size, special_tokens=args.special_token or (),
                            eos=args.eos, min_frequency=args.min_frequency, **extra)
    else:
        cfg = TrainConfig(
            vocab_size=args.vocab_size,
            special_tokens=tuple(args.special_token or (DEFAULT_EOS,)),
            eos=args.eos,
            min_frequency=args.min_frequency,
            pre_tokenizer=args.pre_tokenizer or "gpt2",
        )
    read = ReadStats()
    texts = training_texts(args.source_glob, max_bytes=args.max_bytes, text_key=args.text_key,
                           sources=args.source, stats=read)
    trained_on = {
        "inputs": corpus.file_summary(args.source_glob),
        "max_bytes": args.max_bytes,
        "sources": list(args.source),
        "rejects": read.rejects,  # filled while training reads the texts
    }
    if args.balance:
        texts, sample = balance_by_language(texts, alpha=args.alpha, budget=args.max_bytes, lang_key=args.lang_key,
                                            langid=args.langid, inputs=args.source_glob, text_key=args.text_key)
        trained_on["balance"] = {"by": "language", "alpha": args.alpha, "languages": sample}
    info = train_tokenizer(texts, args.out, config=cfg, trained_on=trained_on)
    if args.eval_input:
        from stages.tokenize.eval import run_eval

        rows = run_eval(args.eval_input, [os.path.join(args.out, TOKENIZER_FILE)], os.path.join(args.out, "eval"),
                        names=["tokenizer"], lang_key=args.eval_lang_key, langid=args.langid)
        meta_path = Path(args.out) / META_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["fertility"] = {"inputs": list(args.eval_input),
                             "rows": [{k: (v["fertility"] if isinstance(v, dict) else v) for k, v in r.items()
                                       if k in ("language", "unit", "words", "tokenizer")} for r in rows]}
        _atomic_write(meta_path, (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    print(json.dumps(info.to_manifest(), indent=2))
    return 0


def balance_by_language(texts: Iterable[str], *, alpha: float, budget: int | None, lang_key: str | None,
                        langid: str | None, inputs: Sequence[str], text_key: str) -> tuple[list[str], dict]:
    """Temperature sampling over languages, as multilingual models sample their data:
    language ``l`` with ``n_l`` bytes gets a share ``p_l = n_l^alpha / sum_k n_k^alpha``
    of the ``budget`` (default: all the input's bytes). A language below its share is
    repeated (whole passes, then a prefix), one above it is cut to a prefix: the same
    input and options give the same sample. Returns the texts (grouped by language,
    languages in order of first appearance) and, per language, what was available and
    what was taken."""
    if not 0.0 <= alpha <= 1.0:
        raise SpecError(f"tokenizer train: --alpha must be in [0, 1], got {alpha}")
    by_lang: dict[str, list[str]] = {}
    if lang_key:
        docs = corpus.iter_docs(list(inputs), text_key=text_key, fields=(lang_key,),
                                text_split={"split": "paragraphs", "max_chars": PIECE_CHARS})
        pairs = ((d.fields.get(lang_key), d.text) for d in docs)
    else:
        from stages.tokenize.eval import language_identifier

        identify = language_identifier(langid)
        pairs = ((identify(t), t) for t in texts)
    for lang, text in pairs:
        if lang and text.strip():
            by_lang.setdefault(lang, []).append(text)
    if not by_lang:
        raise SpecError("tokenizer train --balance language: no text with a language in the input")
    size = {lang: sum(len(t.encode("utf-8", "surrogatepass")) for t in ts) for lang, ts in by_lang.items()}
    total = budget or sum(size.values())
    weights = {lang: n ** alpha for lang, n in size.items()}
    z = sum(weights.values())
    out: list[str] = []
    sample: dict[str, dict] = {}
    for lang, ts in by_lang.items():
        share = weights[lang] / z
        want = int(total * share)
        taken = 0
        passes = 0
        while taken < want:
            for t in ts:
                if taken >= want:
                    break
                out.append(t)
                taken += len(t.encode("utf-8", "surrogatepass"))
            passes += 1
        sample[lang] = {"available_bytes": size[lang], "p": round(share, 6), "sampled_bytes": taken,
                        "passes": passes}
    return out, sample


def _cli_info(args: argparse.Namespace) -> int:
    info = tokenizer_info(args.path, eos=args.eos)
    print(json.dumps(info.to_manifest(), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin wrapper for local use
    ap = argparse.ArgumentParser(prog="datapipe")
    add_cli(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
