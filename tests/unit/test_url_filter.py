"""url_filter on real crawl URLs (the WARC-Target-URI of the shared WARC files) with the
block list the repo ships in public list formats (jobs/curate_data/url_lists)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pyarrow as pa
import pytest

import datapipe
from datapipe.errors import SpecError

LISTS = Path(__file__).resolve().parents[2] / "jobs" / "curate_data" / "url_lists"


@pytest.fixture(scope="module")
def crawl_urls(shared_dir) -> list[str]:
    urls: set[str] = set()
    for f in sorted((shared_dir / "corpora" / "web" / "warc").glob("*.warc*")):
        data = (gzip.open if f.suffix == ".gz" else open)(f, "rb").read()
        urls.update(m.decode() for m in re.findall(rb"WARC-Target-URI: ?<?([^\r\n>]*)", data))
    return sorted(urls)


def test_block_list_formats_drop_the_listed_hosts_and_name_the_entry(crawl_urls):
    # the same crawl URLs written the ways URLs arrive: upper case, www., port, trailing dot
    variants = [u.replace("http://", "HTTP://WWW.", 1).replace(".com/", ".com.:8080/", 1) for u in crawl_urls[:40]]
    urls = crawl_urls + variants + ["http://bücher.example.net/", None]
    kept, rejects = datapipe.stage("url_filter", block_files=[str(LISTS / "blocklist.txt")],
                                   block=["xn--bcher-kva.example.net"])(
        pa.table({"url": urls, "text": [f"doc {i}" for i in range(len(urls))]}))
    detail = dict(zip(rejects.column("url").to_pylist(), rejects.column("reject_detail").to_pylist()))
    kept_urls = set(kept.column("url").to_pylist())
    def blocked(u):
        return u in detail
    by_host = {u: u.split("/")[2] for u in crawl_urls}
    for u, host in by_host.items():
        if host == "0513mt.com" or host == "ajax.googleapis.com":           # hosts-file lines
            assert "host:" in detail[u] and "blocklist.txt:" in detail[u]
        elif host.endswith("041696.com") or host.endswith("psb556.com"):    # plain domains + subdomains
            assert blocked(u)
        elif host == "amyxzhang.wordpress.com":                             # @@ exception wins
            assert u in kept_urls
        elif host.endswith("github.io"):                                    # *.github.io
            assert detail[u].startswith("subdomain:github.io")
        elif u.startswith("http://books.toscrape.com/media/"):              # ||host/path prefix
            assert detail[u].startswith("prefix:books.toscrape.com/media/")
        elif host == "books.toscrape.com":
            assert u in kept_urls                                           # other paths stay
        elif host in ("allenai.org", "commoncrawl.org", "example.com", "gnu.org"):
            assert u in kept_urls
    assert any(by_host.get(u) == "0760.jxtdw.com" for u in detail)          # ||jxtdw.com^$third-party
    # normalisation: upper case, www., port and trailing dot change nothing
    for v, u in zip(variants, crawl_urls[:40]):
        assert blocked(v) == blocked(u), (v, u)
    assert blocked("http://bücher.example.net/")                          # IDNA
    assert None in kept_urls                                                # no URL: kept
    assert rejects.num_rows < len(urls) - 40


def test_tags_write_a_column_and_drop_nothing(crawl_urls):
    urls = crawl_urls + ["https://docs.python.org/3/library/re.html", "https://developer.mozilla.org/en-US/",
                         "https://pip.readthedocs.io/en/stable/", "https://readthedocs.io/"]
    runner = datapipe.stage("url_filter", tag_files={"priority_domain": [str(LISTS / "technical.txt")]},
                            tags={"wiki": ["wikipedia.org"]})
    out = runner.mark(pa.table({"url": urls, "text": ["x"] * len(urls)}))
    tag = dict(zip(out.column("url").to_pylist(), out.column("url_tag").to_pylist()))
    assert out.column("reject_reason").null_count == len(urls)
    assert tag["https://docs.python.org/3/library/re.html"] == "priority_domain"
    assert tag["https://developer.mozilla.org/en-US/"] == "priority_domain"
    assert tag["https://pip.readthedocs.io/en/stable/"] == "priority_domain"
    assert tag["https://readthedocs.io/"] is None                             # *. is subdomains only
    assert {tag[u] for u in crawl_urls if "cs.washington.edu" in u} == {"priority_domain"}
    assert {tag[u] for u in crawl_urls if "wikipedia.org" in u} == {"wiki"}
    assert sum(t is not None for t in tag.values()) < len(urls) / 2


def test_allow_only_and_config_errors(crawl_urls):
    kept, rejects = datapipe.stage("url_filter", allow=["allenai.org"], allow_only=True)(
        pa.table({"url": crawl_urls, "text": ["x"] * len(crawl_urls)}))
    assert kept.num_rows and all("allenai.org" in u.split("/")[2] for u in kept.column("url").to_pylist())
    assert set(r.split("|")[0] for r in rejects.column("reject_reason").to_pylist()) == {"url_filter:not_allowed"}
    with pytest.raises(SpecError, match="not a file"):
        datapipe.stage("url_filter", block_files=["/nonexistent/list.txt"])
    with pytest.raises(SpecError, match="not a URL rule"):
        datapipe.stage("url_filter", block=["/ads/*"])(pa.table({"url": ["http://a.b/"], "text": ["x"]}))


def test_allow_only_names_blocked_and_unlisted_hosts_apart(crawl_urls):
    # one batch with both reasons: blocked rows name the entry, the others their host
    kept, rejects = datapipe.stage("url_filter", allow=["allenai.org"], allow_only=True,
                                   block=["=homes.cs.washington.edu", "org"])(
        pa.table({"url": crawl_urls + ["http://localhost/"], "text": ["x"] * (len(crawl_urls) + 1)}))
    got = dict(zip(rejects.column("url").to_pylist(),
                   zip(rejects.column("reject_reason").to_pylist(), rejects.column("reject_detail").to_pylist())))
    hosts = {u: u.split("/")[2].lower().removeprefix("www.").split(":")[0] for u in crawl_urls}
    assert {h for u, h in hosts.items() if u not in got} >= {"allenai.org"}
    for u, h in hosts.items():
        if h == "homes.cs.washington.edu":
            assert got[u] == ("url_filter:blocked", "host:homes.cs.washington.edu (block[0])")
        elif h.endswith("allenai.org"):
            assert u not in got                                   # allowed (over the one-label "org")
        elif h.endswith(".org"):
            assert got[u] == ("url_filter:blocked", "domain:org (block[1])")
        else:
            assert got[u] == ("url_filter:not_allowed", h)
    assert got["http://localhost/"] == ("url_filter:not_allowed", "localhost")
    assert any(h == "homes.cs.washington.edu" for h in hosts.values())
    assert any(h.endswith(".org") and not h.endswith("allenai.org") for h in hosts.values())
