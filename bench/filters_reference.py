"""Agreement with datatrove, rule for rule, and throughput beside it.

Documents (>= 2,000, real): the 549 web pages of ``corpora/web/html`` after trafilatura
extraction, the Project Gutenberg books of ``corpora/books/gutenberg`` cut into chunks of
``--chunk-lines`` lines (the first ``--chunks-per-book``), the WikiText-2 test articles, and the UDHR translations of
``corpora/nltk/udhr2.zip``. Each document's language comes from fastText ``lid.176``
(``models/lid.176.ftz``) and reaches both implementations (our ``language`` column,
datatrove's ``metadata["language"]``). Languages datatrove tokenizes with packages not
installed here (Chinese: jieba, Japanese: SudachiPy, Thai: PyThaiNLP, ...) are left out.

For each heuristic (gopher_quality, gopher_repetition, c4 with bad words, fineweb), run
on every document on its own (not chained), with datatrove's default thresholds on both
sides (and, for datatrove's Gopher quality filter, the stop words of the document's
language, as FineWeb-2 configures it): the fraction of documents where our decision (keep, or drop with rule R) equals
datatrove's, for ``reference: datatrove`` and for the default (paper) rules, with the
disagreements per rule; for c4 also the cleaned text of documents both keep. Throughput
is documents per CPU-second of one process (our stage's ``process`` on batches of
``--batch``; datatrove's ``filter`` per document), best of ``--repeats``; the machine is
shared, so compare the columns of one run, not runs.

Bad words: no lists ship with datapipe. ``--ldnoobw-dir`` names a clone of the LDNOOBW
repository (files ``de``, ``fr``, ``en``, ...; ideally at the commits datatrove pins);
both engines get its lists, and a language without a file there is not judged by the
bad-words rule on either side. Without it only English is judged, with
``{shared}/lists/ldnoobw.txt``; the run says so.

Needs the bench extra (datatrove==0.10.1, spaCy)::

    .venv/bin/python bench/filters_reference.py [--ldnoobw-dir DIR] [--chunk-lines 40] [--batch 256] [--repeats 2]
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
REPO = _HERE.parent
sys.path.insert(0, str(REPO))

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402
import zipfile  # noqa: E402
from collections import Counter  # noqa: E402

import pyarrow as pa  # noqa: E402

from stages.models import fasttext as fasttext_compat  # noqa: E402
from datapipe import schema as S  # noqa: E402
from stages.heuristics import datatrove_mode as DT  # noqa: E402
from stages.heuristics import languages as L  # noqa: E402
from stages.heuristics.c4 import C4, C4Config  # noqa: E402
from stages.heuristics.fineweb import FineWeb, FineWebConfig  # noqa: E402
from stages.heuristics.gopher_quality import GopherQuality, GopherQualityConfig  # noqa: E402
from stages.heuristics.gopher_repetition import GopherRepetition, GopherRepetitionConfig  # noqa: E402

#: datatrove's reason -> our rule name
DT_RULES = {
    "gopher_short_doc": "word_count", "gopher_long_doc": "word_count",
    "gopher_below_avg_threshold": "mean_word_length", "gopher_above_avg_threshold": "mean_word_length",
    "gopher_too_many_hashes": "hash_ratio", "gopher_too_many_ellipsis": "ellipsis_ratio",
    "gopher_too_many_bullets": "bullet_lines", "gopher_too_many_end_ellipsis": "ellipsis_lines",
    "gopher_below_alpha_threshold": "alpha_words", "gopher_enough_stop_words": "stop_words",
    "dup_para_frac": "dup_para_frac", "dup_para_char_frac": "dup_para_char_frac",
    "dup_line_frac": "dup_line_frac", "dup_line_char_frac": "dup_line_char_frac",
    "document_removed_with_badwords": "bad_words",
    **{f"top_{n}_gram": f"top_{n}gram_char_frac" for n in (2, 3, 4)},
    **{f"duplicated_{n}_n_grams": f"dup_{n}gram_char_frac" for n in range(5, 11)},
}


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


def load_documents(chunk_lines: int, per_book: int) -> list[str]:
    import trafilatura

    c = shared_dir() / "corpora"
    docs: list[str] = []
    for p in sorted((c / "web" / "html").glob("*.html.gz")):
        text = trafilatura.extract(gzip.decompress(p.read_bytes()).decode("utf-8", "replace"),
                                   favor_precision=True, include_comments=False)
        if text:
            docs.append(text)
    for p in sorted((c / "books" / "gutenberg").rglob("*.txt.gz")):
        lines = gzip.decompress(p.read_bytes()).decode("utf-8", "replace").splitlines()
        docs.extend("\n".join(lines[i:i + chunk_lines]) for i in range(0, min(len(lines), per_book * chunk_lines), chunk_lines))
    wiki = (c / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    docs.extend(a for a in wiki.split("\n = ") if a.strip())
    with zipfile.ZipFile(c / "nltk" / "udhr2.zip") as z:
        docs.extend(z.read(n).decode("utf-8", "replace") for n in sorted(z.namelist()) if n.endswith(".txt"))
    return [d for d in docs if d.strip()]


def languages(texts: list[str]) -> list[str]:
    model = fasttext_compat.load(shared_dir() / "models" / "lid.176.ftz")
    labels, _ = fasttext_compat.predict(model, [t.replace("\n", " ") for t in texts])
    return [lab[0].replace("__label__", "") if lab else "und" for lab in labels]


def ours(stage_cls, cfg, texts, langs, batch_rows):
    """(decisions, cleaned texts, CPU seconds) of our stage."""
    stage = stage_cls(cfg)
    stage.ensure_setup()
    out_dec, out_text = [], []
    t0 = time.process_time()
    for i in range(0, len(texts), batch_rows):
        b = S.make_batch(source="bench", ids=[str(j) for j in range(i, i + len(texts[i:i + batch_rows]))],
                         texts=texts[i:i + batch_rows])
        b = b.append_column("language", pa.array(langs[i:i + batch_rows], pa.string()))
        res, _ = stage.process(b)
        out_dec += [None if r is None else r.split(":", 1)[1] for r in res.column(S.REJECT_REASON).to_pylist()]
        out_text += res.column(S.TEXT).to_pylist()
    return out_dec, out_text, time.process_time() - t0


def theirs(make, texts, langs):
    """(decisions, cleaned texts, CPU seconds) of datatrove filters (one instance per language)."""
    from datatrove.data import Document

    filters: dict[str, list] = {}
    dec, out = [], []
    t0 = time.process_time()
    for i, (t, lang) in enumerate(zip(texts, langs)):
        if lang not in filters:
            filters[lang] = make(lang)
        doc = Document(text=t, id=str(i), metadata={"language": lang})
        verdict = None
        for f in filters[lang]:
            r = f.filter(doc)
            if r is not True and r is not None and not (isinstance(r, tuple) and r[0]):
                reason = r[1] if isinstance(r, tuple) else "unspecified"
                verdict = DT_RULES.get(reason, reason)
                break
        dec.append(verdict)
        out.append(doc.text)
    return dec, out, time.process_time() - t0


def compare(name, ref, mine, ref_text=None, my_text=None) -> tuple[float, Counter]:
    diff = Counter()
    for a, b in zip(ref, mine):
        if a != b:
            diff[f"datatrove {a or 'keep'} / ours {b or 'keep'}"] += 1
    text_diff = 0
    if ref_text is not None:
        text_diff = sum(1 for a, b, x, y in zip(ref, mine, ref_text, my_text) if a is None and b is None and x != y)
        if text_diff:
            diff["both keep, cleaned text differs"] = text_diff
    agree = sum(1 for a, b in zip(ref, mine) if a == b) - text_diff
    return agree / len(ref), diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunk-lines", type=int, default=40)
    ap.add_argument("--chunks-per-book", type=int, default=12)
    ap.add_argument("--stages", default="gopher_quality,gopher_repetition,c4,fineweb")
    ap.add_argument("--cache", help="JSON file keeping the extracted documents and their languages between runs")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ldnoobw-dir", help="folder of per-language bad-word lists (a clone of LDNOOBW); "
                                          "default: English only, from {shared}/lists/ldnoobw.txt")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"chunks_per_book": 1, "repeats": 1, "stages": "gopher_quality"})
    logging.disable(logging.WARNING)
    lists = bad_words_folder(args.ldnoobw_dir)
    _seed_datatrove_badwords(lists)
    from datatrove.pipeline.filters import (C4BadWordsFilter, C4QualityFilter, FineWebQualityFilter,
                                            GopherQualityFilter, GopherRepetitionFilter)

    if args.cache and os.path.isfile(args.cache):
        with open(args.cache, encoding="utf-8") as f:
            texts, langs = json.load(f)
    else:
        texts = load_documents(args.chunk_lines, args.chunks_per_book)
        langs = languages(texts)
        if args.cache:
            with open(args.cache, "w", encoding="utf-8") as f:
                json.dump([texts, langs], f)
    usable = {lang for lang in set(langs) if lang not in DT._NEEDS_EXTRA and _spacy_ok(lang) and _datatrove_ok(lang)}
    keep = [i for i, lang in enumerate(langs) if lang in usable]
    if args.smoke:   # a few documents of each language: checks both engines run, measures nothing
        keep = [i for n, i in enumerate(keep) if n % 10 == 0][:150]
    texts = [texts[i] for i in keep]
    langs = [langs[i] for i in keep]
    top = Counter(langs).most_common(8)
    print(f"{len(texts)} documents, {len(set(langs))} languages (top: {', '.join(f'{k} {v}' for k, v in top)})\n")

    judged = sorted({lang for lang in langs if L.bad_words_file(lists, lang) is not None})
    print(f"c4 bad words: lists from {args.ldnoobw_dir or 'shared lists/ldnoobw.txt (English only)'}; "
          f"judged in {', '.join(judged) or 'no language'}; other languages skipped by that rule in both engines\n")
    c4_common = dict(min_words_per_line=3, min_sentences=5, terminal_punctuation=DT.C4_END_PUNCTUATION,
                     bad_words_dir=lists)
    cases = [
        ("gopher_quality", GopherQuality, GopherQualityConfig, {},
         lambda lang: [GopherQualityFilter(language=lang, **_dt_stop_words(lang))]),
        ("gopher_repetition", GopherRepetition, GopherRepetitionConfig, {},
         lambda lang: [GopherRepetitionFilter(language=lang)]),
        ("c4", C4, C4Config, c4_common,
         lambda lang: [C4QualityFilter(language=lang)]
         + ([C4BadWordsFilter(fail_on_missing_language=False)] if L.bad_words_file(lists, lang) else [])),
        ("fineweb", FineWeb, FineWebConfig, dict(max_char_dup_ratio=0.01),
         lambda lang: [FineWebQualityFilter(language=lang)]),
    ]
    rows = []
    for name, cls, cfg_cls, common, make in cases:
        if name not in args.stages.split(","):
            continue
        best = {}
        for _ in range(args.repeats):
            ref_dec, ref_text, t_ref = theirs(make, texts, langs)
            dt_dec, dt_text, t_dt = ours(cls, cfg_cls(reference="datatrove", **common), texts, langs, args.batch)
            pp_dec, pp_text, t_pp = ours(cls, cfg_cls(**common), texts, langs, args.batch)
            for k, v in (("ref", t_ref), ("dt", t_dt), ("paper", t_pp)):
                best[k] = min(best.get(k, v), v)
        with_text = name == "c4"
        a_dt, d_dt = compare(name, ref_dec, dt_dec, ref_text if with_text else None, dt_text)
        a_pp, d_pp = compare(name, ref_dec, pp_dec, ref_text if with_text else None, pp_text)
        drops = sum(d is not None for d in ref_dec)
        rows.append((name, drops, a_dt, a_pp, len(texts) / best["ref"], len(texts) / best["dt"],
                     len(texts) / best["paper"]))
        print(f"## {name}: datatrove drops {drops} of {len(texts)}")
        print(f"  reference: datatrove  agreement {a_dt:.4%}  " + (", ".join(f"{k}: {v}" for k, v in d_dt.most_common(6)) or "no disagreement"))
        print(f"  paper (default)      agreement {a_pp:.4%}  " + ", ".join(f"{k}: {v}" for k, v in d_pp.most_common(6)))
        print(f"  per rule (datatrove's drops): {dict(Counter(d for d in ref_dec if d))}\n")
    print("| stage | datatrove drops | agreement, reference: datatrove | agreement, paper | datatrove docs/s | ours (datatrove) docs/s | ours (paper) docs/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, drops, a_dt, a_pp, r_ref, r_dt, r_pp in rows:
        print(f"| {name} | {drops} | {a_dt:.2%} | {a_pp:.2%} | {r_ref:,.0f} | {r_dt:,.0f} | {r_pp:,.0f} |")


def bad_words_folder(ldnoobw_dir: str | None) -> str:
    """The per-language list folder both engines use: ``ldnoobw_dir``, or a temporary one
    holding only ``en`` (the shared English list)."""
    import shutil
    import tempfile

    if ldnoobw_dir is not None:
        if not os.path.isdir(ldnoobw_dir):
            sys.exit(f"--ldnoobw-dir {ldnoobw_dir!r} is not a directory; clone LDNOOBW and point at it")
        return ldnoobw_dir
    folder = tempfile.mkdtemp(prefix="ldnoobw-en-")
    shutil.copyfile(shared_dir() / "lists" / "ldnoobw.txt", os.path.join(folder, "en"))
    return folder


def _seed_datatrove_badwords(lists: str) -> None:
    """datatrove's C4BadWordsFilter downloads the LDNOOBW lists from GitHub on first use;
    this machine is offline, so put the lists of ``lists`` where its asset cache looks,
    in a temporary folder (languages without one get no C4BadWordsFilter here)."""
    import tempfile

    os.environ.setdefault("HF_ASSETS_CACHE", tempfile.mkdtemp(prefix="dt-assets-"))
    from datatrove.io import cached_assets_path, strip_protocol
    from datatrove.pipeline.filters import c4_filters

    folder = cached_assets_path(library_name="datatrove", namespace="filters", subfolder="c4_badwords")
    for code in c4_filters._BADWORDS_LANGS:
        path = L.bad_words_file(lists, code)
        if path is None:
            continue
        url = c4_filters._EN_BADWORDS_URL if code == "en" else c4_filters._BADWORDS_URL + code
        local = os.path.join(folder, strip_protocol(url).replace("/", "_"))
        with open(local, "wb") as f:
            f.write(path.read_bytes())
        open(local + ".completed", "a").close()


def _dt_stop_words(lang: str) -> dict:
    """datatrove's Gopher filter uses English stop words unless given others (FineWeb-2
    passes each language's): give it the list our stage uses; a language without one is
    not judged by that rule on either side."""
    if lang == "en":
        return {}
    words = L.language(lang).stop_words
    return {"stop_words": sorted(words)} if words else {"min_stop_words": None}


def _datatrove_ok(lang: str) -> bool:
    """datatrove has a word tokenizer for ``lang`` that works with what is installed."""
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    try:
        load_word_tokenizer(lang).word_tokenize("a b")
        return True
    except Exception:
        return False


def _spacy_ok(lang: str) -> bool:
    import spacy

    try:
        spacy.blank(DT._SPACY_CODE.get(lang, lang))
        return True
    except Exception:
        return False


if __name__ == "__main__":
    main()
