"""Reader throughput on the shared corpora, beside a plain single-process read.

For each format, our reader (plan + every split, one process, building Arrow batches,
ids and reject accounting) against the simplest loop that gets the same content out of
the same files (warcio ArchiveIterator, json.loads per line, pq.read_table,
open().read()). MB is content bytes produced (text as UTF-8, or raw page bytes), the
same for both sides. Best of ``--repeat`` runs.

    python bench/readers.py [--repeat 3] [--split-mb 64]

Shared data: $DATAPIPE_SHARED, else ``<repo>/../shared``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import zstandard
from warcio.archiveiterator import ArchiveIterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datapipe import schema as S  # noqa: E402
from datapipe.readers import READERS, InputFile  # noqa: E402

HTML_TYPES = ("text/html", "application/xhtml+xml")


def shared_dir() -> Path:
    d = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()
    if not (d / "corpora").is_dir():
        sys.exit(f"shared data not found at {d}: set DATAPIPE_SHARED")
    return d


def inputs(paths, root: Path) -> list[InputFile]:
    return [InputFile(str(p), str(Path(p).relative_to(root)), Path(p).stat().st_size) for p in sorted(paths)]


# ---------------------------------------------------------------------------- ours


def ours(fmt: str, files: list[InputFile], split_bytes: int, options=None) -> Callable[[], tuple[int, int, int]]:
    def run() -> tuple[int, int, int]:
        reader = READERS[fmt](source="bench", options=options)
        splits = reader.plan(files, split_bytes=split_bytes)
        n = nbytes = 0
        column = S.RAW if S.RAW in reader.provides() else S.TEXT
        for split in splits:
            for t in reader.read(split):
                alive = S.alive_mask(t)
                n += int(pc.sum(alive).as_py() or 0)
                nbytes += int(pc.sum(pc.binary_length(t.column(column)).filter(alive)).as_py() or 0)
        return n, nbytes, len(splits)
    return run


# ---------------------------------------------------------------------------- baselines


def base_warc(files: list[InputFile]) -> Callable[[], tuple[int, int, int]]:
    def run():
        n = nbytes = 0
        for f in files:
            with open(f.path, "rb") as fh:
                for rec in ArchiveIterator(fh):
                    if rec.rec_type != "response" or rec.http_headers is None:
                        continue
                    ctype = (rec.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
                    if ctype in HTML_TYPES and rec.http_headers.get_statuscode().startswith("2"):
                        payload = rec.content_stream().read()
                        if payload.strip():
                            n += 1
                            nbytes += len(payload)
        return n, nbytes, len(files)
    return run


def base_jsonl(files: list[InputFile]) -> Callable[[], tuple[int, int, int]]:
    def run():
        n = nbytes = 0
        for f in files:
            if f.path.endswith(".zst"):
                fh = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(f.path, "rb")), "utf-8")
            else:
                fh = open(f.path, encoding="utf-8")
            with fh:
                for line in fh:
                    text = json.loads(line)["text"]
                    n += 1
                    nbytes += len(text.encode("utf-8"))
        return n, nbytes, len(files)
    return run


def base_parquet(files: list[InputFile]) -> Callable[[], tuple[int, int, int]]:
    def run():
        n = nbytes = 0
        for f in files:
            t = pq.read_table(f.path, columns=["text"])
            n += t.num_rows
            nbytes += int(pc.sum(pc.binary_length(t.column("text"))).as_py() or 0)
        return n, nbytes, len(files)
    return run


def base_files(files: list[InputFile], decode: bool) -> Callable[[], tuple[int, int, int]]:
    def run():
        n = nbytes = 0
        for f in files:
            opener = gzip.open if f.path.endswith(".gz") else open
            with opener(f.path, "rb") as fh:
                data = fh.read()
            n += 1
            nbytes += len(data)
            if decode:
                nbytes -= 3 * data.decode("utf-8").startswith("\ufeff")  # a BOM is not text
        return n, nbytes, len(files)
    return run


def base_mediawiki(files: list[InputFile]) -> Callable[[], tuple[int, int, int]]:
    """bz2 + iterparse + mwparserfromhell's strip_code on article pages (no ref/file-link
    cleaning, no title line): the least a wiki dump reader must do."""
    import bz2
    import xml.etree.ElementTree as ET

    import mwparserfromhell

    def run():
        n = nbytes = 0
        for f in files:
            with bz2.open(f.path, "rb") as fh:
                for _, el in ET.iterparse(fh):
                    if el.tag.endswith("}page"):
                        ns, text = el.find("{*}ns"), el.find("{*}revision/{*}text")
                        if ns.text == "0" and el.find("{*}redirect") is None and text is not None and text.text:
                            n += 1
                            nbytes += len(mwparserfromhell.parse(text.text).strip_code().encode())
                        el.clear()
        return n, nbytes, len(files)
    return run


def base_regex_split(files: list[InputFile], pattern: str) -> Callable[[], tuple[int, int, int]]:
    """Whole file in memory, ``re.split`` at the title lines."""
    import re

    rx = re.compile(f"(?m)(?={pattern})")

    def run():
        n = nbytes = 0
        for f in files:
            for piece in rx.split(Path(f.path).read_text(encoding="utf-8")):
                if piece.strip():
                    n += 1
                    nbytes += len(piece.strip().encode())
        return n, nbytes, len(files)
    return run


def base_code_tree(files: list[InputFile]) -> Callable[[], tuple[int, int, int]]:
    """Read each file, skip the binary (NUL) and non-UTF-8 ones, decode."""
    def run():
        n = nbytes = 0
        for f in files:
            data = Path(f.path).read_bytes()
            if b"\x00" in data[:8000] or not data.strip():
                continue
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            n += 1
            nbytes += len(data) - 3 * data.startswith(b"\xef\xbb\xbf")
        return n, nbytes, len(files)
    return run


def base_code_tar(files: list[InputFile]) -> Callable[[], tuple[int, int, int]]:
    """A streamed ``tarfile`` loop doing the same checks per member."""
    import tarfile

    def run():
        n = nbytes = 0
        for f in files:
            with tarfile.open(f.path, "r|*") as tar:
                for m in tar:
                    if not m.isfile():
                        continue
                    data = tar.extractfile(m).read()
                    if b"\x00" in data[:8000] or not data.strip():
                        continue
                    try:
                        data.decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                    n += 1
                    nbytes += len(data) - 3 * data.startswith(b"\xef\xbb\xbf")
        return n, nbytes, len(files)
    return run


# ---------------------------------------------------------------------------- driver


def best(fn: Callable[[], tuple[int, int, int]], repeat: int) -> tuple[float, tuple[int, int, int]]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def build_cases(shared: Path, tmp: Path, split_bytes: int):
    c = shared / "corpora"
    warc_root = c / "web/warc"
    warc = inputs([p for p in warc_root.iterdir() if p.name.endswith((".warc", ".warc.gz"))], warc_root)
    html_root = c / "web/html"
    html = inputs(html_root.iterdir(), html_root)
    books_root = c / "books/gutenberg"
    books = inputs(books_root.rglob("*.txt*"), books_root)

    # JSONL: every shared .jsonl file, concatenated 20x into one ~12 MB file (so that
    # the timing is not all file opens), plus a zstd copy; Parquet written from it.
    blob = b"".join(p.read_bytes() for p in sorted(c.glob("*/*.jsonl")))
    lines = [l for l in blob.splitlines() if l.strip()]
    big = b"\n".join(lines * 20) + b"\n"
    (tmp / "all.jsonl").write_bytes(big)
    (tmp / "all.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(big))
    texts = [json.loads(l)["text"] for l in lines] * 20
    pq.write_table(pa.table({"text": texts}), tmp / "all.parquet", row_group_size=2000)
    jsonl = inputs([tmp / "all.jsonl"], tmp)
    jzst = inputs([tmp / "all.jsonl.zst"], tmp)
    parquet = inputs([tmp / "all.parquet"], tmp)

    # code: real packages of the standard library, as a tree (one repository per package)
    # and as one .tar.gz per package
    import sysconfig
    import tarfile

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    packages = ["asyncio", "email", "json", "xml", "http", "unittest", "concurrent", "importlib"]
    tree = inputs([p for pkg in packages for p in (stdlib / pkg).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts], stdlib)
    for pkg in packages:
        with tarfile.open(tmp / f"{pkg}.tar.gz", "w:gz") as tar:
            tar.add(stdlib / pkg, arcname=pkg, filter=lambda m: None if "__pycache__" in m.name else m)
    tars = inputs([tmp / f"{pkg}.tar.gz" for pkg in packages], tmp)

    wiki_root = c / "wiki"
    wiki = inputs([wiki_root / "enwiki-pages-articles-excerpt.xml.bz2"], wiki_root)
    wikitext = inputs([wiki_root / "wikitext-2-raw.test.txt"], wiki_root)
    title = "^ = [^=].* = $"
    return [
        ("mediawiki (.xml.bz2)", wiki, ours("mediawiki", wiki, split_bytes), base_mediawiki(wiki), "iterparse+strip"),
        ("text split: regex", wikitext, ours("text", wikitext, split_bytes, {"split": "regex", "pattern": title}),
         base_regex_split(wikitext, title), "re.split"),
        ("warc (response pages)", warc, ours("warc", warc, split_bytes), base_warc(warc), "warcio loop"),
        ("warc, 256 KiB splits", warc, ours("warc", warc, 256 << 10), base_warc(warc), "warcio loop"),
        ("html (.html.gz)", html, ours("html", html, split_bytes), base_files(html, False), "gzip read"),
        ("jsonl", jsonl, ours("jsonl", jsonl, split_bytes), base_jsonl(jsonl), "json.loads loop"),
        ("jsonl, 1 MiB splits", jsonl, ours("jsonl", jsonl, 1 << 20), base_jsonl(jsonl), "json.loads loop"),
        ("jsonl.zst", jzst, ours("jsonl", jzst, split_bytes), base_jsonl(jzst), "zstd+json loop"),
        ("parquet", parquet, ours("parquet", parquet, split_bytes), base_parquet(parquet), "pq.read_table"),
        ("code (stdlib tree)", tree, ours("code", tree, split_bytes, {"repos": "folders"}), base_code_tree(tree),
         "read+NUL+decode"),
        ("code (stdlib .tar.gz)", tars, ours("code", tars, split_bytes), base_code_tar(tars), "tarfile loop"),
        ("text (gutenberg .txt.gz)", books, ours("text", books, split_bytes), base_files(books, True), "gzip read+decode"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--split-mb", type=float, default=64)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"repeat": 1})
    shared = shared_dir()
    split_bytes = int(args.split_mb * (1 << 20))
    header = (f"{'reader':<26}{'files':>6}{'splits':>7}{'docs':>8}{'MB':>8} | {'ours s':>7}{'docs/s':>10}"
              f"{'MB/s':>8} | {'baseline':<17}{'s':>7}{'docs/s':>10}{'MB/s':>8} | {'ours/base':>9}")
    with tempfile.TemporaryDirectory() as td:
        cases = build_cases(shared, Path(td), split_bytes)
        print(f"shared data: {shared}   repeat: best of {args.repeat}   split_bytes: {args.split_mb} MiB")
        print(header)
        print("-" * len(header))
        for name, files, mine, base, base_name in cases:
            t_ours, (n, nb, nsplits) = best(mine, args.repeat)
            t_base, (bn, bb, _) = best(base, args.repeat)
            flag = "" if (n, nb) == (bn, bb) else f"  (baseline: {bn} docs, {bb / 1e6:.1f} MB)"
            print(f"{name:<26}{len(files):>6}{nsplits:>7}{n:>8}{nb / 1e6:>8.1f} | {t_ours:>7.3f}{n / t_ours:>10,.0f}"
                  f"{nb / 1e6 / t_ours:>8.1f} | {base_name:<17}{t_base:>7.3f}{bn / t_base:>10,.0f}"
                  f"{bb / 1e6 / t_base:>8.1f} | {t_base / t_ours:>9.2f}{flag}")


if __name__ == "__main__":
    main()
