"""Throughput of the ``url_filter`` stage beside a plain-Python baseline (``urllib.parse``
+ a set lookup over every label suffix of the host) measured in the same run, and
datatrove's ``URLFilter`` when it can run in this venv.

URLs: the real WARC-Target-URIs of the shared crawls (../shared or $DATAPIPE_SHARED),
their hosts re-rooted under IANA top-level domains and, for a quarter of them, under
domains of the block list, so that ~25% are blocked. Each ``--idn-share`` is one mix: that
share of the URLs has an internationalised (Unicode) TLD, so its host needs IDNA. 1% is
the realistic mix (IDN hosts are a small share of a crawl, and crawlers mostly write them
as ``xn--`` already); 10% the worst case. Block list: datatrove's bundled UT1
domain list (4.5M real domains) when datatrove is installed, else one built from the
crawl's host labels and the IANA TLDs. CPU seconds (``time.process_time``), best of 3.

    .venv/bin/python bench/url_filter.py [--urls 1000000] [--batch 8192] [--job-batch 256] [--idn-share 0.01 0.1]
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import re
import sys
import tarfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from datapipe import schema as S  # noqa: E402
from stages.heuristics.url_filter import Matcher, UrlFilter, UrlFilterConfig, parse_list  # noqa: E402


def _shared() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))


def _datatrove_list() -> tuple[str, str] | None:
    try:
        from datatrove.utils._import_utils import ASSETS_PATH
    except ImportError:
        return None
    tar = Path(ASSETS_PATH) / "url_filterblacklistsv0_3_0.tar.gz"
    if not tar.is_file():
        return None
    with tarfile.open(tar) as t:
        return "datatrove UT1 domains", t.extractfile("domains").read().decode("utf-8", "replace")


def _list(ascii_tlds: bool, built_list: bool) -> tuple[str, str]:
    """(name, text) of the block list: datatrove's UT1 list, or one built from the crawl."""
    got = None if built_list else _datatrove_list()
    if got is not None:
        return got
    parts, tlds = _crawl(ascii_tlds)
    labels = sorted({lab for p in parts for lab in (p.hostname or "").split(".")[:-1] if lab})
    rnd = random.Random(1)
    doms = sorted({f"{rnd.choice(labels)}{rnd.randrange(10**6)}.{rnd.choice(tlds)}" for _ in range(200_000)})
    return "built from crawl labels x IANA TLDs", "\n".join(doms)


def _crawl(ascii_tlds: bool = False):
    shared = _shared()
    real: set[str] = set()
    for f in sorted((shared / "corpora" / "web" / "warc").glob("*.warc*")):
        data = (gzip.open if f.suffix == ".gz" else open)(f, "rb").read()
        real.update(m.decode() for m in re.findall(rb"WARC-Target-URI: ?<?([^\r\n>]*)", data))
    parts = [urlsplit(u) for u in sorted(real) if u.startswith("http")]
    tlds = [t.strip().lower() for t in (shared / "lists" / "iana_tlds.txt").read_text().split()
            if t.strip() and not t.startswith("#") and (t.isascii() or not ascii_tlds)]
    return parts, tlds


def _urls(n: int, text: str, idn_share: float) -> list[str]:
    """``n`` URLs: a quarter under block-list domains, the rest crawl hosts re-rooted under
    IANA TLDs, an IDN TLD (Unicode, as a URL may carry it) for ``idn_share`` of all URLs."""
    parts, tlds = _crawl()
    idn = [t for t in tlds if not t.isascii()]
    plain = [t for t in tlds if t.isascii()]
    listed = [d for d in text.splitlines()[:: max(1, len(text) // 2_000_000)] if d and not d.startswith("#")]
    rnd = random.Random(0)
    urls = []
    for i in range(n):
        p = parts[i % len(parts)]
        if i % 4 == 0:
            host = rnd.choice(("", "www.", "m.", "cdn.")) + rnd.choice(listed)
        else:
            tld = rnd.choice(idn) if rnd.random() < idn_share / 0.75 else rnd.choice(plain)
            host = (p.hostname or "example.org").rsplit(".", 1)[0] + "." + tld
        urls.append(f"{p.scheme}://{host}{p.path or '/'}{'?' + p.query if p.query else ''}")
    return urls


def _baseline(urls: list[str], domains: set[str]) -> np.ndarray:
    out = np.zeros(len(urls), dtype=bool)
    for i, u in enumerate(urls):
        h = (urlsplit(u).hostname or "").rstrip(".")
        if h.startswith("www."):
            h = h[4:]
        while h:
            if h in domains:
                out[i] = True
                break
            _, _, h = h.partition(".")
    return out


def _best(fn, repeat: int = 3) -> tuple[float, object, float]:
    """(best CPU seconds, result, first run's CPU seconds)."""
    times, res = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        res = fn()
        times.append(time.process_time() - t0)
    return min(times), res, times[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--idn-share", type=float, nargs="+", default=[0.01, 0.10],
                    help="share of URLs with an IDN (Unicode) TLD; one mix per value (default: 1%% realistic, "
                         "10%% worst case)")
    ap.add_argument("--job-batch", type=int, default=256,
                    help="also time the stage once in batches of this many rows, a job's default "
                         "execution.batch_rows (0: skip)")
    ap.add_argument("--built-list", action="store_true",
                    help="a 200k-domain list built from crawl labels, not datatrove's 4.5M-domain UT1 list")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"urls": 5_000, "built_list": True, "idn_share": [0.01]})
    list_name, text = _list(True, args.built_list)
    t0 = time.process_time()
    parsed = parse_list(text, name="list")
    matcher = Matcher(parsed.rules, [parsed])
    setup_s = time.process_time() - t0
    print(f"block list: {list_name}: {len(matcher):,} entries, parsed + indexed in {setup_s:.1f} s CPU, "
          f"{matcher.nbytes / 1e6:.0f} MB")
    domains = set(parsed.domains) | {r.value for r in parsed.rules if r.kind == "domain"}
    print(f"{args.urls:,} URLs a mix, batches of {args.batch}; CPU seconds (process time), best of 3 "
          "(first run, cold caches, in brackets; baseline 1 run); measured under whatever load the machine has")
    print(f"{'':52} {'CPU s':>8} {'(cold)':>8} {'URLs/s':>12} {'blocked':>9}")
    for share in args.idn_share:
        _mix(_urls(args.urls, text, share), share, matcher, domains, args.batch, args.job_batch)


def _mix(urls: list[str], share: float, matcher: Matcher, domains: set[str], batch: int, job_batch: int) -> None:
    batches = [pa.array(urls[i:i + batch], pa.string()) for i in range(0, len(urls), batch)]
    # a fresh stage per mix: its per-stage caches (IDNA per distinct host) start empty
    stage = UrlFilter(UrlFilterConfig(block=["example.invalid"]))
    stage.setup()
    stage.block = matcher
    stage._ready = True

    def ours_matcher():
        return int(sum(matcher.match(stage._view_of_urls(b)).mask.sum() for b in batches))

    tables = [pa.table({S.ID: pa.array([str(j) for j in range(len(b))]), S.SOURCE: pa.array(["web"] * len(b)),
                        S.TEXT: pa.array(["x"] * len(b)), S.URL: b, S.RAW: pa.nulls(len(b), pa.binary()),
                        S.REJECT_STAGE: pa.nulls(len(b), pa.string()), S.REJECT_REASON: pa.nulls(len(b), pa.string()),
                        S.REJECT_DETAIL: pa.nulls(len(b), pa.string())}) for b in batches]

    def ours_stage():
        return sum(sum(st.docs_in - st.docs_out for st in stage.process(t)[1].values()) for t in tables)

    t_stage, dropped, cold_stage = _best(ours_stage)
    small = None
    if job_batch and job_batch != batch:
        # the same stage in a job's default batches (execution.batch_rows): per-batch costs
        # (a few hundred Arrow/numpy calls, the engine's marks and stats) dominate there
        parts = [t.slice(i, job_batch) for t in tables for i in range(0, t.num_rows, job_batch)]
        small, _, _ = _best(lambda: sum(sum(st.docs_in - st.docs_out for st in stage.process(t)[1].values())
                                        for t in parts), repeat=1)
    t_match, hits, cold_match = _best(ours_matcher)
    t_base, base, _ = _best(lambda: _baseline(urls, domains), repeat=1)
    n = len(urls)
    idn = sum(not u.split("/", 3)[2].isascii() for u in urls)
    rows = [("url_filter stage (parse, match, reject marks, url_tag)", t_stage, cold_stage, dropped),
            *([(f"  same stage in batches of {job_batch} (1 run)", small, None, None)] if small else []),
            ("  of which matcher (hosts, suffix hash lookup)", t_match, cold_match, hits),
            ("baseline: urllib.parse + set over suffixes", t_base, None, int(base.sum()))]
    try:
        from datatrove.data import Document
        from datatrove.pipeline.filters.url_filter import URLFilter
        dt = URLFilter(extra_domains=list(domains), use_integrated_lists=False)
        sample = urls[: min(n, 100_000)]
        t_dt, kept, _ = _best(lambda: sum(dt.filter(Document(text="x", id=str(i), metadata={"url": u})) is True
                                          for i, u in enumerate(sample)), repeat=1)
        rows.append((f"datatrove URLFilter ({len(sample):,} URLs, scaled)", t_dt * n / len(sample), None, None))
    except Exception as e:  # noqa: BLE001 - any reason it cannot run is reported
        print(f"datatrove URLFilter not run: {type(e).__name__}: {e}")
    print(f"mix: {share:.0%} IDN TLDs ({idn:,} URLs with a non-ASCII host)")
    for name, t, cold, k in rows:
        print(f"{name:52} {t:8.2f} {'' if cold is None else f'({cold:.2f})':>8} {n / t:12,.0f} "
              f"{'' if k is None else k:>9}")
    print(f"  per 1M URLs: stage {t_stage * 1e6 / n:.2f} s CPU, baseline {t_base * 1e6 / n:.2f} s CPU "
          f"({t_base / t_stage:.1f}x); blocked counts agree with the baseline: {hits == int(base.sum()) == dropped}")


if __name__ == "__main__":
    main()
