#!/usr/bin/env python3
"""Build the bundled sample corpus for datapipe from the authored content in ``src/``.

Why: the sample job (jobs/sample.yaml) must run on a fresh clone without ../shared, and every
stage needs something to act on: boilerplate-heavy pages, junk, non-English text, undeclared
encodings, planted PII and planted cross-source (near-)duplicates with known similarity.

Contract:
- Deterministic: the same src/ and the same library versions (zlib, zstandard, pyarrow,
  warcio) give byte-identical files (gzip mtime 0, fixed WARC dates and record ids, fixed
  parquet settings). ``--check-determinism`` builds twice into temporary folders and compares.
- Writes web/, pages/, news/, forum/, wiki/, books/, wet/ and GROUND_TRUTH.json next to this
  file (or under ``--out``). Every planted duplicate pair is measured (word 5-gram Jaccard) and
  must land in the range its relation promises, every planted PII value must be found and
  pass its validator; otherwise the build fails.
- ``--verify`` reads every written file back with warcio / gzip / zstandard / pyarrow and
  prints documents and bytes per source.

Dependencies: Python stdlib, warcio, pyarrow, zstandard.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import email.utils
import gzip
import hashlib
import html
import io
import ipaddress
import itertools
import json
import re
import struct
import sys
import tempfile
import textwrap
import uuid
import zlib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(SRC / "books"))

import boilerplate  # noqa: E402
import dups  # noqa: E402
import forum  # noqa: E402
import news_a  # noqa: E402
import news_b  # noqa: E402
import pages as pages_src  # noqa: E402
import pii  # noqa: E402
import sites  # noqa: E402
import web_a  # noqa: E402
import web_b  # noqa: E402
import wet as wet_src  # noqa: E402
import wiki_1  # noqa: E402
import wiki_2  # noqa: E402
import wiki_3  # noqa: E402

NS = uuid.UUID("6f3c9a52-1d2e-4b7a-9c0e-5a8d2f4b1e77")  # namespace for deterministic record ids
WARC_SOFTWARE = "datapipe-sample-builder/1.0 (warcio)"
OUTPUT_DIRS = ("web", "pages", "news", "forum", "wiki", "books", "wet")


# --------------------------------------------------------------------------------------------
# Markup: blank-line blocks, "## " headings, "- " / "1. " lists, "> " quotes, ``` fences, tables
# --------------------------------------------------------------------------------------------

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def split_blocks(markup: str) -> list[str]:
    """Split markup into blocks at blank lines, keeping ``` fences whole."""
    blocks: list[str] = []
    cur: list[str] = []
    in_fence = False
    for line in markup.split("\n"):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            cur.append(line)
            continue
        if not in_fence and not line.strip():
            if cur:
                blocks.append("\n".join(cur))
                cur = []
        else:
            cur.append(line)
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def _block_kind(block: str) -> str:
    lines = block.split("\n")
    if lines[0].strip().startswith("```"):
        return "fence"
    if lines[0].startswith("### "):
        return "h3"
    if lines[0].startswith("## "):
        return "h2"
    if all(ln.startswith("- ") for ln in lines):
        return "ul"
    if all(re.match(r"\d+\. ", ln) for ln in lines):
        return "ol"
    if all(ln.startswith("|") for ln in lines):
        return "table"
    if all(ln.startswith("> ") for ln in lines):
        return "quote"
    if all(ln.startswith("    ") for ln in lines):
        return "code"
    return "p"


def _inline_plain(text: str) -> str:
    return _LINK.sub(r"\1", text)


def _inline_html(text: str) -> str:
    out, pos = [], 0
    for m in _LINK.finditer(text):
        out.append(html.escape(text[pos:m.start()], quote=False))
        out.append(f'<a href="{html.escape(m.group(2))}">{html.escape(m.group(1), quote=False)}</a>')
        pos = m.end()
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


def _table_rows(block: str) -> list[list[str]]:
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in block.split("\n")]


def block_plain(block: str) -> str:
    kind = _block_kind(block)
    lines = block.split("\n")
    if kind == "fence":
        return "\n".join(lines[1:-1])
    if kind in ("h2", "h3"):
        return lines[0].split(" ", 1)[1]
    if kind == "ul":
        return "\n".join(_inline_plain(ln[2:]) for ln in lines)
    if kind == "ol":
        return "\n".join(_inline_plain(ln.split(". ", 1)[1]) for ln in lines)
    if kind == "table":
        return "\n".join(" ".join(r) for r in _table_rows(block))
    if kind == "quote":
        return "\n".join(_inline_plain(ln[2:]) for ln in lines)
    if kind == "code":
        return "\n".join(ln[4:] for ln in lines)
    return _inline_plain(block)


def markup_plain(markup: str) -> str:
    return "\n\n".join(block_plain(b) for b in split_blocks(markup))


def block_html(block: str) -> str:
    kind = _block_kind(block)
    lines = block.split("\n")
    if kind == "fence":
        return "<pre><code>" + html.escape("\n".join(lines[1:-1]), quote=False) + "</code></pre>"
    if kind == "code":
        return "<pre><code>" + html.escape("\n".join(ln[4:] for ln in lines), quote=False) + "</code></pre>"
    if kind in ("h2", "h3"):
        return f"<{kind}>{_inline_html(lines[0].split(' ', 1)[1])}</{kind}>"
    if kind == "ul":
        return "<ul>\n" + "\n".join(f"  <li>{_inline_html(ln[2:])}</li>" for ln in lines) + "\n</ul>"
    if kind == "ol":
        return "<ol>\n" + "\n".join(f"  <li>{_inline_html(ln.split('. ', 1)[1])}</li>" for ln in lines) + "\n</ol>"
    if kind == "table":
        rows = _table_rows(block)
        body = "\n".join("  <tr>" + "".join(f"<td>{html.escape(c, quote=False)}</td>" for c in r) + "</tr>" for r in rows)
        return f'<table class="data">\n{body}\n</table>'
    if kind == "quote":
        return "<blockquote><p>" + "<br>\n".join(_inline_html(ln[2:]) for ln in lines) + "</p></blockquote>"
    return "<p>" + "<br>\n".join(_inline_html(ln) for ln in lines) + "</p>"


def markup_html(markup: str) -> str:
    blocks = split_blocks(markup)
    merged: list[str] = []
    for b in blocks:  # rejoin indented code split by blank lines inside it
        if merged and _block_kind(b) == "code" and _block_kind(merged[-1]) == "code":
            merged[-1] += "\n\n" + b
        else:
            merged.append(b)
    return "\n".join(block_html(b) for b in merged)


# --------------------------------------------------------------------------------------------
# Derivation: copies of documents with realistic edits
# --------------------------------------------------------------------------------------------


def apply_ops(markup: str, ops: list[tuple], where: str) -> str:
    """Apply edit operations to the blocks of `markup`; a replace that finds nothing fails."""
    blocks = split_blocks(markup)
    for op in ops:
        kind = op[0]
        if kind == "replace":
            text = "\n\n".join(blocks)
            if op[1] not in text:
                raise ValueError(f"{where}: replace target not found: {op[1]!r}")
            blocks = split_blocks(text.replace(op[1], op[2], 1))
            continue
        if kind == "drop_para":
            del blocks[op[1]]
        elif kind == "drop_line":
            if op[1] not in blocks:
                raise ValueError(f"{where}: drop_line block not found: {op[1]!r}")
            blocks.remove(op[1])
        elif kind == "insert_para":
            blocks.insert(op[1], op[2])
        elif kind == "replace_para":
            blocks[op[1]] = op[2]
        elif kind == "swap_para":
            blocks[op[1]], blocks[op[2]] = blocks[op[2]], blocks[op[1]]
        elif kind == "keep_paras":
            blocks = blocks[op[1]:op[2]]
        elif kind == "append_para":
            blocks.append(op[1])
        elif kind == "prepend_para":
            blocks.insert(0, op[1])
        else:
            raise ValueError(f"{where}: unknown op {kind!r}")
        blocks = split_blocks("\n\n".join(blocks))
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------


@dataclass
class Doc:
    """One document of the corpus, as authored (title + body markup) and as built."""

    key: str
    source: str  # web, pages, news, forum, wiki, books, wet
    title: str
    body: str  # markup (or plain prose for books/wet/forum)
    meta: dict = field(default_factory=dict)
    file: str = ""  # path relative to the corpus root
    locator: str | int = ""  # jsonl line, parquet row, WARC Target-URI, file name
    text: str = ""  # what a reader yields (jsonl/parquet/wet/txt) or the main text (html)
    visible: str = ""  # all visible text of an HTML page (boilerplate included)
    raw: bytes = b""  # html/txt bytes as stored
    lang: str = "en"
    tags: list[str] = field(default_factory=list)


class Corpus:
    """Authored sources indexed by key; resolves `derive_from` chains lazily."""

    def __init__(self) -> None:
        self.specs: dict[str, tuple[str, dict]] = {}
        for a in wiki_1.ARTICLES + wiki_2.ARTICLES + wiki_3.ARTICLES:
            self._add("wiki", a)
        for a in news_a.ARTICLES + news_b.ARTICLES:
            self._add("news", a)
        for t in forum.THREADS:
            self._add("forum", t)
        for p in web_a.PAGES:
            self._add("web", dict(p, warc="a"))
        for p in web_b.PAGES:
            self._add("web", dict(p, warc="b"))
        for p in pages_src.PAGES:
            self._add("pages", p)
        for r in wet_src.RECORDS:
            self._add("wet", r)
        for b in boilerplate.BOOKS:
            self._add("books", b)
        self._parts: dict[str, tuple[str, str]] = {}

    def _add(self, source: str, spec: dict) -> None:
        if spec["key"] in self.specs:
            raise ValueError(f"duplicate key {spec['key']}")
        self.specs[spec["key"]] = (source, spec)

    def parts(self, key: str) -> tuple[str, str]:
        """(title, body markup) of a document, derived documents resolved."""
        if key in self._parts:
            return self._parts[key]
        source, spec = self.specs[key]
        if "derive_from" in spec:
            src_title, src_body = self.parts(spec["derive_from"])
            base = src_body
            if spec.get("part") == "full":
                base = src_title + "\n\n" + src_body
            body = apply_ops(base, spec.get("ops", []), key)
            title = spec.get("title", spec.get("headline", src_title))
        elif source == "books":
            title, body = spec["title"], (SRC / "books" / spec["source"]).read_text(encoding="utf-8").strip()
        elif source == "wet":
            title, body = "", spec["text"]
        elif source == "news":
            title, body = spec["headline"], spec["body"]
        elif source == "forum":
            title, body = spec["title"], ""
        else:
            title, body = spec["title"], spec.get("body", spec.get("text", ""))
        self._parts[key] = (title, body)
        return title, body


# --------------------------------------------------------------------------------------------
# Junk generators (deterministic)
# --------------------------------------------------------------------------------------------


def tide_table() -> str:
    rows = ["| Date | High water | Height (m) | Low water | Height (m) | High water | Height (m) | Low water | Height (m) |"]
    base = 2 * 60 + 14  # minutes after midnight of the first high water on 1 May
    for day in range(1, 32):
        hw1 = (base + (day - 1) * 50) % (24 * 60)
        spring = 0.9 * abs(((day + 3) % 15) - 7) / 7  # crude spring-neap cycle
        times = [(hw1 + k * 372) % (24 * 60) for k in range(4)]
        heights = [4.1 + spring, 1.3 - spring / 2, 4.0 + spring, 1.4 - spring / 2]
        cells = []
        for t, h in zip(times, heights):
            cells += [f"{t // 60:02d}:{t % 60:02d}", f"{h:.1f}"]
        weekday = dt.date(2024, 5, day).strftime("%a")
        rows.append(f"| {weekday} {day} May | " + " | ".join(cells) + " |")
    return ("Times are BST. Heights are above chart datum. Predictions are for Port Alder harbour mouth; "
            "allow for weather.\n\n" + "\n".join(rows))


def link_farm() -> str:
    kw = ["cheap hiking boots", "best hiking tents", "hiking sale", "discount camping gear", "buy hiking poles",
          "waterproof jackets cheap", "hiking boots outlet", "tents clearance", "best headlamp 2024",
          "cheap rucksack", "hiking gear online", "camping deals uk"]
    doms = ["top-deals-hub.biz", "bestprice-outdoor.info", "cheapgear-online.xyz", "hiking-discounts.top",
            "camping-bargains.club", "outdoor-sale-center.online"]
    lines = []
    for i, (k, d) in enumerate(itertools.product(kw, doms)):
        if i % 2:
            continue
        lines.append(f"- [{k} {2024 - i % 3}](https://{d}/{k.replace(' ', '-')}-{i})")
    return "## Top hiking deals\n\n" + "\n".join(lines) + "\n\n## Partner sites\n\n" + "\n".join(
        f"- [{d}](https://{d}/)" for d in doms)


def seo_spam() -> str:
    phrases = ["cheap hiking boots", "hiking boots cheap", "best cheap hiking boots", "cheap hiking boots sale",
               "cheap hiking boots online", "buy cheap hiking boots"]
    templates = ["Looking for {a}? We have the best {b} at the lowest prices for {c}.",
                 "Our {a} are the best {b} and the cheapest {c} you can buy.",
                 "Buy {a} today and get {b} with free shipping on all {c}.",
                 "{A} for men, {b} for women, {c} for kids.",
                 "Why pay more for {a} when you can get {b} here? Best {c}!"]
    paras = []
    for p in range(6):
        sents = []
        for s in range(5):
            a, b, c = (phrases[(p + s + k) % len(phrases)] for k in range(3))
            sents.append(templates[(p * 5 + s) % len(templates)].format(a=a, b=b, c=c, A=a.capitalize()))
        paras.append(" ".join(sents))
    kw_line = "Tags: " + ", ".join(phrases * 4)
    return "## Cheap Hiking Boots\n\n" + "\n\n".join(paras) + "\n\n" + kw_line


JUNK_BODIES = {"@@TIDE_TABLE@@": tide_table, "@@LINK_FARM@@": link_farm, "@@SEO_SPAM@@": seo_spam}


# --------------------------------------------------------------------------------------------
# HTML page rendering
# --------------------------------------------------------------------------------------------

ANALYTICS = """<script>
  window.dataLayer = window.dataLayer || [];
  function gtag(){dataLayer.push(arguments);}
  gtag('js', new Date());
  gtag('config', 'G-7QX2PLK4ZD', { 'anonymize_ip': true, 'cookie_flags': 'SameSite=None;Secure' });
</script>"""

STYLE = """<style>
  body{font-family:Georgia,serif;margin:0;color:#222}
  .site-header{background:#0b2a4a;color:#fff;padding:8px 16px}
  .main-nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:12px;margin:0;padding:0}
  .cookie-banner{position:fixed;bottom:0;left:0;right:0;background:#fff;border-top:2px solid #0b2a4a;padding:16px}
  .sidebar{float:right;width:280px}
  footer{background:#eee;padding:24px;font-size:13px}
</style>"""


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def _links(items: list[tuple[str, str]], cls: str) -> str:
    lis = "\n".join(f'      <li><a href="{_esc(h)}">{_esc(t)}</a></li>' for t, h in items)
    return f'<ul class="{cls}">\n{lis}\n    </ul>'


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def _posts_html(posts: list[tuple[str, str, str]]) -> str:
    out = []
    for i, (user, date, text) in enumerate(posts, 1):
        out.append(f'''  <div class="topic-post" id="post_{i}" data-post-number="{i}">
    <div class="topic-avatar"><img src="/user_avatar/{_slug(user)}/48.png" alt="" width="48" height="48"></div>
    <div class="topic-meta"><span class="username"><a href="/u/{_slug(user)}">{_esc(user)}</a></span>
      <time datetime="{date}T12:00:00Z">{date}</time> <a class="post-number" href="#post_{i}">#{i}</a></div>
    <div class="cooked">
{markup_html(text)}
    </div>
    <div class="post-controls"><button>Like</button> <button>Link</button> <button>Flag</button> <button>Reply</button></div>
  </div>''')
    return "\n".join(out)


def _comments_html(comments: list[tuple[str, str, str]]) -> str:
    if not comments:
        return ""
    items = "\n".join(f'''    <li class="comment"><div class="comment-author"><b>{_esc(n)}</b> <span class="says">says:</span></div>
      <div class="comment-meta"><time datetime="{d}">{d}</time> <a href="#reply">Reply</a></div>
      <div class="comment-content"><p>{_esc(t)}</p></div></li>''' for n, d, t in comments)
    return f'''<section id="comments" class="comments-area">
  <h3 class="comments-title">{len(comments)} {"comment" if len(comments) == 1 else "comments"}</h3>
  <ol class="comment-list">
{items}
  </ol>
  <div id="respond"><h3>Leave a Reply</h3><p>Your email address will not be published. Required fields are marked *</p>
  <form><textarea name="comment"></textarea><input name="author" placeholder="Name *"><input name="email" placeholder="Email *">
  <button type="submit">Post Comment</button></form></div>
</section>'''


def _reviews_html(reviews: list[tuple[str, int, str]]) -> str:
    if not reviews:
        return ""
    avg = sum(r[1] for r in reviews) / len(reviews)
    items = "\n".join(f'''    <div class="review"><span class="stars" aria-label="{s} out of 5">{"★" * s}{"☆" * (5 - s)}</span>
      <b>{_esc(n)}</b><p>{_esc(t)}</p><small>Was this review helpful? Yes / No</small></div>''' for n, s, t in reviews)
    return f'''<section class="reviews"><h2>Customer reviews</h2><p>{avg:.1f} out of 5 ({len(reviews)} reviews) <a href="#write">Write a review</a></p>
{items}
</section>'''


def _product_html(product: dict) -> str:
    if not product:
        return ""
    was = f' <s class="was">{_esc(product["was"])}</s>' if product.get("was") else ""
    return f'''<div class="buy-box">
  <p class="price"><span class="now">{_esc(product["price"])}</span>{was}</p>
  <p class="stock">{_esc(product["stock"])}</p>
  <p class="sku">Product code: {_esc(product["sku"])}</p>
  <label>Quantity <select><option>1</option><option>2</option><option>3</option></select></label>
  <button class="add-to-basket">Add to basket</button> <button class="wishlist">Add to wishlist</button>
  <p class="klarna">Pay in 3 interest-free payments. 18+, T&amp;C apply.</p>
</div>'''


def _sidebar_html(site: dict) -> str:
    if not site["sidebar"]:
        return ""
    blocks = []
    for title, items in site["sidebar"]:
        lis = "\n".join(f'      <li><a href="/{_slug(i)[:60]}">{_esc(i)}</a></li>' for i in items)
        blocks.append(f'  <section class="widget"><h3 class="widget-title">{_esc(title)}</h3>\n    <ul>\n{lis}\n    </ul>\n  </section>')
    return '<aside class="sidebar" role="complementary">\n' + "\n".join(blocks) + "\n</aside>"


def _footer_html(site: dict) -> str:
    cols = "\n".join(
        f'  <div class="footer-col"><h4>{_esc(t)}</h4>\n    ' + _links([(i, "/" + _slug(i) + "/") for i in items], "footer-links") + "\n  </div>"
        for t, items in site["footer_cols"])
    social = " ".join(f'<a href="{_esc(h)}" rel="noopener">{_esc(n)}</a>' for n, h in site["social"])
    parts = [cols]
    if social:
        parts.append(f'  <div class="social">Follow us: {social}</div>')
    if site["address"]:
        parts.append(f'  <address>{_esc(site["address"])}</address>')
    if site["copyright"]:
        parts.append(f'  <p class="copyright">{_esc(site["copyright"])}</p>')
    return '<footer class="site-footer">\n' + "\n".join(p for p in parts if p) + "\n</footer>"


def _head(page: dict, site: dict, title: str, description: str, charset: bool) -> str:
    meta_charset = '<meta charset="utf-8">\n' if charset else ""
    ld = json.dumps({"@context": "https://schema.org", "@type": "Article" if site["layout"] != "shop" else "Product",
                     "headline" if site["layout"] != "shop" else "name": title, "url": page["url"],
                     "datePublished": page["date"], "publisher": {"@type": "Organization", "name": site["name"]}},
                    ensure_ascii=False)
    return f'''<head>
{meta_charset}<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}{" | " + _esc(site["name"]) if site["name"] else ""}</title>
<meta name="description" content="{_esc(description)}">
<link rel="canonical" href="{_esc(page["url"])}">
<meta property="og:title" content="{_esc(title)}">
<meta property="og:url" content="{_esc(page["url"])}">
<meta property="og:site_name" content="{_esc(site["name"])}">
<meta property="article:published_time" content="{page["date"]}">
<link rel="stylesheet" href="/static/css/main.4f2a9c.css">
{STYLE}
<script type="application/ld+json">{ld}</script>
{ANALYTICS}
</head>'''


def render_html(page: dict, site: dict, title: str, body_html: str, description: str) -> str:
    """Wrap a page body in its site's chrome; the layout decides the skeleton."""
    layout = site["layout"]
    lang = f' lang="{site["lang"]}"' if site["lang"] else ""
    charset = page.get("declare_charset", True)
    extras = "\n".join(x for x in (_product_html(page.get("product", {})), _reviews_html(page.get("reviews", [])),
                                   _comments_html(page.get("comments", []))) if x)
    if layout == "junk":
        return f'''<!DOCTYPE html>
<html{lang}>
<head>{'<meta charset="utf-8">' if charset else ""}<title>{_esc(title)}</title>
<meta name="keywords" content="{_esc(title.lower())}"></head>
<body>
<h1>{_esc(title)}</h1>
{body_html}
</body>
</html>
'''
    if layout == "appshell":
        return f'''<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{_esc(title)}</title>
<link rel="manifest" href="/manifest.json"><link rel="icon" href="/favicon.ico">
<script defer="defer" src="/static/js/main.8c1f2e4a.js"></script>
<link href="/static/css/main.1b7d09e3.css" rel="stylesheet"></head>
<body><noscript>{_esc(page["body"])}</noscript><div id="root"></div>
<script>!function(e){{function r(r){{for(var n,a,i=r[0],c=r[1],l=r[2],p=0,s=[];p<i.length;p++)a=i[p],Object.prototype.hasOwnProperty.call(o,a)&&o[a]&&s.push(o[a][0]),o[a]=0;for(n in c)Object.prototype.hasOwnProperty.call(c,n)&&(e[n]=c[n]);for(f&&f(r);s.length;)s.shift()();return u.push.apply(u,l||[]),t()}}var o={{1:0}},u=[];}}([]);</script>
</body>
</html>
'''
    if layout == "legacy":
        nav = " | ".join(f'<a href="{_esc(h)}">{_esc(t)}</a>' for t, h in site["nav"])
        return f'''<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
<HTML>
<HEAD>
<TITLE>{_esc(title)}</TITLE>
<META NAME="keywords" CONTENT="{_esc(site["name"])}">
</HEAD>
<BODY BGCOLOR="#FFFFF0" TEXT="#333333" LINK="#993300">
<CENTER>
<TABLE WIDTH="760" BORDER="0" CELLPADDING="6">
<TR><TD BGCOLOR="#993300"><FONT FACE="Arial" SIZE="5" COLOR="#FFFFFF"><B>{_esc(site["name"])}</B></FONT></TD></TR>
<TR><TD><FONT FACE="Arial" SIZE="2">{nav}</FONT></TD></TR>
<TR><TD>
<FONT FACE="Times New Roman" SIZE="3">
<H1>{_esc(title)}</H1>
{body_html}
</FONT>
</TD></TR>
<TR><TD><HR><FONT SIZE="1">{_esc(site["address"])}<BR>{_esc(site["copyright"])}</FONT></TD></TR>
</TABLE>
<IMG SRC="/cgi-bin/counter.gif" WIDTH="88" HEIGHT="31" ALT="counter">
</CENTER>
</BODY>
</HTML>
'''
    head = _head(page, site, title, description, charset)
    cookie = ""
    if site["cookie"]:
        cookie = f'''<div id="cookie-banner" class="cookie-banner" role="dialog" aria-label="Cookie consent">
  <p>{_esc(site["cookie"])}</p>
  <button class="accept">Accept all</button> <button class="reject">Reject all</button> <a href="/cookie-policy/">Cookie settings</a>
</div>'''
    topbar = ""
    if site["topbar"]:
        topbar = '<div class="topbar">' + " ".join(f"<span>{_esc(t)}</span>" for t in site["topbar"]) + "</div>"
    nav = _links(site["nav"], "menu") if site["nav"] else ""
    tagline = f'<p class="tagline">{_esc(site["tagline"])}</p>' if site["tagline"] else ""
    search = '<form class="search" action="/search"><input type="search" name="q" placeholder="Search"><button>Search</button></form>'
    header = f'''<header class="site-header">
  <a class="logo" href="/">{_esc(site["name"])}</a>
  {tagline}
  {search}
  <nav class="main-nav" aria-label="Main">
    {nav}
  </nav>
</header>'''
    crumbs = ""
    if layout in ("news", "shop", "docs", "plain"):
        section = site["nav"][1][0] if len(site["nav"]) > 1 else "Home"
        crumbs = f'<nav class="breadcrumbs"><a href="/">Home</a> › <a href="#">{_esc(section)}</a> › <span>{_esc(title)}</span></nav>'
    share = ""
    if site["share"]:
        share = '<div class="share-buttons">' + " ".join(f'<a href="#share" class="share">{_esc(s)}</a>' for s in site["share"]) + "</div>"
    byline = f'<p class="byline">{_esc(page["byline"])}</p>' if page.get("byline") else ""
    newsletter = ""
    if site["newsletter"]:
        newsletter = f'''<section class="newsletter-signup"><h3>Newsletter</h3><p>{_esc(site["newsletter"])}</p>
  <form><input type="email" name="email" placeholder="Your email address"><button>Sign up</button></form>
  <p class="small">By signing up you agree to our privacy policy. You can unsubscribe at any time.</p></section>'''
    related = ""
    if layout == "news":
        items = [t for t in (site["sidebar"][0][1] if site["sidebar"] else []) if t != title][:3]
        related = '<section class="related"><h2>More stories</h2>\n' + "\n".join(
            f'  <a class="teaser" href="/{_slug(t)[:60]}"><h3>{_esc(t)}</h3></a>' for t in items) + "\n</section>"
    if layout == "docs":
        main = f'''<div class="docs-layout">
<nav class="docs-sidebar" aria-label="Documentation">
{_sidebar_html(site).replace('<aside class="sidebar" role="complementary">', '').replace('</aside>', '')}
</nav>
<main class="docs-content" role="main">
{crumbs}
<article class="doc">
<h1>{_esc(title)}</h1>
{body_html}
</article>
{share}
<nav class="prev-next"><a href="#prev" rel="prev">« Previous</a> <a href="#next" rel="next">Next »</a></nav>
</main>
</div>'''
    else:
        time_ = f'<time datetime="{page["date"]}" class="published">{page["date"]}</time>'
        main = f'''<div class="container">
{crumbs}
<main id="main" class="content" role="main">
<article class="{'product' if layout == 'shop' else 'post'}">
<h1 class="entry-title">{_esc(title)}</h1>
{byline}
{time_ if layout in ("news", "blog") else ""}
{share}
<div class="entry-content">
{body_html}
</div>
{extras}
</article>
{related}
</main>
{_sidebar_html(site)}
</div>'''
    body = "\n".join(x for x in (cookie, topbar, header, main, newsletter, _footer_html(site)) if x)
    return f'''<!DOCTYPE html>
<html{lang}>
{head}
<body class="layout-{layout}">
<a class="skip-link" href="#main">Skip to content</a>
{body}
<script src="/static/js/vendor.9d1c3b.js" defer></script>
</body>
</html>
'''


class _Visible(HTMLParser):
    """All text a browser would show (head, script, style and noscript skipped)."""

    SKIP = {"script", "style", "head", "noscript", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth and data.strip():
            self.parts.append(data.strip())


def visible_text(markup: str) -> str:
    p = _Visible()
    p.feed(markup)
    p.close()
    return "\n".join(p.parts)


# --------------------------------------------------------------------------------------------
# Shingles
# --------------------------------------------------------------------------------------------

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Word n-grams after lowercasing and removing punctuation (the ground-truth definition)."""
    words = _PUNCT.sub("", text.lower()).split()
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


# --------------------------------------------------------------------------------------------
# Binary payloads for the non-HTML responses
# --------------------------------------------------------------------------------------------


def png_bytes() -> bytes:
    w, h = 96, 32
    rows = []
    for y in range(h):
        row = bytearray([0])
        for x in range(w):
            on = (x // 8 + y // 8) % 2 == 0
            row += bytes((11, 42, 74) if on else (240, 240, 232))
        rows.append(bytes(row))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")


def pdf_bytes() -> bytes:
    text = "BT /F1 18 Tf 72 720 Td (Holmbridge District Council - Budget summary 2024/25) Tj ET"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(text)} >>\nstream\n{text}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n{o}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


ROBOTS = b"""User-agent: *
Disallow: /search
Disallow: /account/
Disallow: /e-edition/
Allow: /

User-agent: GPTBot
Disallow: /

Sitemap: https://www.harbourgazette.co.uk/sitemap.xml
"""


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def rec_id(*parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(NS, '|'.join(parts))}>"


def warc_date(base: dt.datetime, i: int) -> tuple[str, str]:
    t = base + dt.timedelta(seconds=37 * i)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ"), email.utils.format_datetime(t, usegmt=True)


LANG_BY_SITE = {k: (v["lang"] or "").split("-")[0] for k, v in sites.SITES.items()}
LANG_BY_SITE.update({"saintaubin": "fr", "restaurante": "es", "cornercafe": "en"})
NEWS_LANG = {"kuestenbote": "de", "diario": "es", "saintaubin": "fr"}


class Builder:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.c = Corpus()
        self.docs: dict[str, Doc] = {}
        self.files: dict[str, dict] = {}  # relative path -> {source, docs, bytes}
        self.response_ids: dict[str, str] = {}  # Target-URI -> WARC-Record-ID of its response

    # ---------------- helpers
    def _write(self, rel: str, data: bytes, source: str, ndocs: int) -> None:
        p = self.out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        self.files[rel] = {"source": source, "docs": ndocs, "bytes": len(data)}

    def _html_page(self, spec: dict, source: str) -> Doc:
        key = spec["key"]
        site = sites.SITES[spec["site"]]
        title, body = self.c.parts(key)
        if body in JUNK_BODIES:
            body = JUNK_BODIES[body]()
        posts = spec.get("posts")
        if posts:
            body_html = _posts_html(posts)
            main = "\n\n".join([title] + [f"{u}\n{markup_plain(t)}" for u, _, t in posts])
        else:
            body_html = markup_html(body) if site["layout"] != "appshell" else ""
            main = title + "\n\n" + markup_plain(body)
        description = markup_plain(body)[:155].replace("\n", " ") if not posts else posts[0][2][:155].replace("\n", " ")
        page = dict(spec, body=body)
        markup = render_html(page, site, title, body_html, description)
        enc = spec.get("encoding", "utf-8")
        raw = markup.encode(enc)
        lang = LANG_BY_SITE.get(spec["site"], "en") or "en"
        tags = list(spec.get("tags", []))
        if spec["site"] == "junk" or key.startswith(("web/junk_", "pages/app_shell")):
            tags.append("junk")
        if enc != "utf-8":
            tags.append(f"encoding:{enc}" + ("" if spec.get("declare_charset", True) else ":undeclared"))
        if lang != "en":
            tags.append(f"lang:{lang}")
        return Doc(key=key, source=source, title=title, body=body, meta=spec, text=main,
                   visible=visible_text(markup), raw=raw, lang=lang, tags=tags)

    # ---------------- sources
    def build_wiki(self) -> None:
        arts = wiki_1.ARTICLES + wiki_2.ARTICLES + wiki_3.ARTICLES
        rows = {"id": [], "title": [], "text": [], "url": []}
        for i, a in enumerate(arts):
            title, body = self.c.parts(a["key"])
            text = markup_plain(body)
            words = len(text.split())
            if not 300 <= words <= 1500:
                raise ValueError(f"{a['key']}: {words} words, expected 300-1500")
            lang = "de" if a["key"] == "wiki/reetdach" else "en"
            host = "de.openlexicon.org" if lang == "de" else "en.openlexicon.org"
            url = f"https://{host}/wiki/{title.replace(' ', '_')}"
            rows["id"].append(str(1840213 + 37 * i))
            rows["title"].append(title)
            rows["text"].append(text)
            rows["url"].append(url)
            self.docs[a["key"]] = Doc(key=a["key"], source="wiki", title=title, body=body, file="wiki/wiki.parquet",
                                      locator=i, text=text, lang=lang, tags=[f"lang:{lang}"] if lang != "en" else [])
        table = pa.table({k: pa.array(v, pa.string()) for k, v in rows.items()})
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=10, compression="zstd", compression_level=9, use_dictionary=False,
                       write_statistics=True, version="2.6", data_page_version="1.0", store_schema=True)
        self._write("wiki/wiki.parquet", buf.getvalue(), "wiki", len(arts))

    def build_news(self) -> None:
        for fi, (mod, rel) in enumerate(((news_a, "news/news-0.jsonl.gz"), (news_b, "news/news-1.jsonl"))):
            lines = []
            for li, a in enumerate(mod.ARTICLES):
                title, body = self.c.parts(a["key"])
                text = title + "\n\n" + markup_plain(body)
                outlet = news_a.OUTLETS[a["outlet"]]
                url = outlet[1] + a["date"].replace("-", "/") + "/" + _slug(title)[:70]
                doc_id = "nw-" + hashlib.sha1(a["key"].encode()).hexdigest()[:12]
                lines.append(json.dumps({"id": doc_id, "text": text, "url": url, "date": a["date"]}, ensure_ascii=False))
                lang = NEWS_LANG.get(a["outlet"], "en")
                tags = [f"lang:{lang}"] if lang != "en" else []
                if a["key"] in ("news/live_stub", "news/corrections"):
                    tags.append("short")
                self.docs[a["key"]] = Doc(key=a["key"], source="news", title=title, body=body, file=rel, locator=li,
                                          text=text, lang=lang, tags=tags)
            data = ("\n".join(lines) + "\n").encode("utf-8")
            self._write(rel, gz(data) if rel.endswith(".gz") else data, "news", len(lines))

    def _forum_text(self, t: dict) -> tuple[str, list[tuple[str, str, str]]]:
        posts = []
        for p in t["posts"]:
            if p[0] == "paste":
                _, src_key, (user, date, preface), ops = p
                st, sb = self.c.parts(src_key)
                src_source = self.c.specs[src_key][0]
                base = (st + "\n\n" + sb) if src_source == "news" else sb
                pasted = markup_plain(apply_ops(base, ops, t["key"]))
                posts.append((user, date, preface + "\n\n" + pasted))
            else:
                posts.append(p)
        text = t["title"] + "\n\n" + "\n\n".join(f"{u} wrote on {d}:\n{x}" for u, d, x in posts)
        return text, posts

    def build_forum(self) -> None:
        lines = []
        shorts = iter(forum.SHORT_POSTS)
        li = 0
        for ti, t in enumerate(forum.THREADS):
            text, _ = self._forum_text(t)
            num = t["slug"].rsplit("/", 1)[1]
            lang = {"de_": "de", "fr_": "fr", "es_": "es", "pl_": "pl"}.get(t["key"].split("/")[1][:3], "en")
            lines.append(json.dumps({"id": f"tb-{num}", "text": text, "url": forum.BASE + t["slug"]}, ensure_ascii=False))
            self.docs[t["key"]] = Doc(key=t["key"], source="forum", title=t["title"], body="", file="forum/forum.jsonl.zst",
                                      locator=li, text=text, lang=lang, tags=[f"lang:{lang}"] if lang != "en" else [])
            li += 1
            if ti % 3 == 2:
                s = next(shorts, None)
                if s:
                    key, slug, stext = s
                    lines.append(json.dumps({"id": "tb-" + slug.split("/")[1].replace("?reply=", "-r"), "text": stext,
                                             "url": forum.BASE + slug}, ensure_ascii=False))
                    self.docs[key] = Doc(key=key, source="forum", title="", body="", file="forum/forum.jsonl.zst",
                                         locator=li, text=stext, tags=["junk", "short"])
                    li += 1
        for key, slug, stext in shorts:
            lines.append(json.dumps({"id": "tb-" + slug.split("/")[1].replace("?reply=", "-r"), "text": stext,
                                     "url": forum.BASE + slug}, ensure_ascii=False))
            self.docs[key] = Doc(key=key, source="forum", title="", body="", file="forum/forum.jsonl.zst", locator=li,
                                 text=stext, tags=["junk", "short"])
            li += 1
        data = ("\n".join(lines) + "\n").encode("utf-8")
        comp = zstandard.ZstdCompressor(level=19, write_checksum=True, write_content_size=True).compress(data)
        self._write("forum/forum.jsonl.zst", comp, "forum", len(lines))

    def build_books(self) -> None:
        for b in boilerplate.BOOKS:
            _, prose = self.c.parts(b["key"])
            wrapped = []
            for para in prose.split("\n\n"):
                lines = []
                for line in para.split("\n"):
                    lines.extend(textwrap.wrap(line, 72, break_long_words=False, break_on_hyphens=False) or [""])
                wrapped.append("\n".join(lines))
            fields = dict(b, upper_title=b["title"].upper(), original=b.get("original", ""), updated=b.get("updated", ""))
            header = (boilerplate.HEADER_A if b["header"] == "A" else boilerplate.HEADER_B).format(**fields)
            footer = boilerplate.FOOTER.format(**fields)
            text = header + "\n\n\n" + "\n\n".join(wrapped) + "\n\n\n\n" + footer
            newline = "\r\n" if b["header"] == "B" else "\n"  # the older edition has DOS line endings
            raw = text.replace("\n", newline).encode("utf-8")
            if b["key"] == "book/lamplighter":
                raw = b"\xef\xbb\xbf" + raw  # a byte-order mark, as many e-text files carry
            rel = "books/" + b["file"]
            tags = ["encoding:utf-8-bom"] if raw.startswith(b"\xef\xbb\xbf") else []
            if newline == "\r\n":
                tags.append("newlines:crlf")
            self.docs[b["key"]] = Doc(key=b["key"], source="books", title=b["title"], body=prose, file=rel,
                                      locator=b["file"], text=text, raw=raw, tags=tags)
            self._write(rel, gz(raw) if rel.endswith(".gz") else raw, "books", 1)
            if not 20_000 <= len(raw) <= 80_000:
                raise ValueError(f"{rel}: {len(raw)} bytes, expected 20-80 KB")

    def build_pages(self) -> None:
        for spec in pages_src.PAGES:
            d = self._html_page(spec, "pages")
            rel = "pages/" + spec["file"]
            d.file, d.locator = rel, spec["file"]
            self.docs[spec["key"]] = d
            self._write(rel, gz(d.raw) if rel.endswith(".gz") else d.raw, "pages", 1)

    def build_web(self) -> None:
        specials = {"a": [], "b": []}
        for s in web_b.SPECIAL:
            specials[s["warc"]].append(s)
        plan = {"a": [("special", s) for s in specials["a"] if s["kind"] in ("robots", "redirect")]
                + [("page", p) for p in web_a.PAGES[:8]]
                + [("special", s) for s in specials["a"] if s["kind"] == "png"]
                + [("page", p) for p in web_a.PAGES[8:]],
                "b": [("page", p) for p in web_b.PAGES[:6]]
                + [("special", s) for s in specials["b"]]
                + [("page", p) for p in web_b.PAGES[6:]]}
        bases = {"a": dt.datetime(2024, 5, 14, 6, 2, 11, tzinfo=dt.timezone.utc),
                 "b": dt.datetime(2024, 6, 20, 21, 40, 3, tzinfo=dt.timezone.utc)}
        for w in ("a", "b"):
            rel = f"web/crawl-{w}.warc.gz"
            buf = io.BytesIO()
            writer = WARCWriter(buf, gzip=True, warc_version="1.0")
            info_id = rec_id(rel, "warcinfo")
            d0, _ = warc_date(bases[w], 0)
            info = (f"software: {WARC_SOFTWARE}\r\nformat: WARC File Format 1.0\r\n"
                    f"conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.0/\r\n"
                    f"isPartOf: datapipe-sample-crawl-2024\r\noperator: datapipe sample corpus (synthetic)\r\n"
                    f"description: Synthetic crawl written for datapipe's sample job; all pages are authored.\r\n"
                    f"robots: checked via robots.txt\r\nhttp-header-user-agent: datapipe-sample-bot/1.0 (+https://example.org/bot)\r\n").encode()
            writer.write_record(writer.create_warc_record(
                "", "warcinfo", payload=io.BytesIO(info), length=len(info), warc_content_type="application/warc-fields",
                warc_headers_dict={"WARC-Record-ID": info_id, "WARC-Date": d0, "WARC-Filename": f"crawl-{w}.warc.gz"}))
            n_resp = 0
            for i, (kind, spec) in enumerate(plan[w], 1):
                wdate, hdate = warc_date(bases[w], i)
                uri = spec["url"]
                status, ctype, extra = "200 OK", "text/html; charset=utf-8", []
                if kind == "page":
                    d = self._html_page(spec, "web")
                    d.file, d.locator = rel, uri
                    self.docs[spec["key"]] = d
                    payload = d.raw
                    if not spec.get("declare_charset", True):
                        ctype = "text/html"
                    extra = [("Cache-Control", "max-age=300, public"), ("Vary", "Accept-Encoding"),
                             ("X-Frame-Options", "SAMEORIGIN")]
                    if sites.SITES[spec["site"]]["cookie"]:
                        extra.append(("Set-Cookie", f"session={hashlib.sha1(uri.encode()).hexdigest()[:24]}; Path=/; Secure; HttpOnly; SameSite=Lax"))
                else:
                    payload = {"png": png_bytes, "pdf": pdf_bytes, "robots": lambda: ROBOTS,
                               "redirect": lambda: b"<html><head><title>301 Moved Permanently</title></head><body><h1>Moved Permanently</h1></body></html>\n"}[spec["kind"]]()
                    ctype = {"png": "image/png", "pdf": "application/pdf", "robots": "text/plain",
                             "redirect": "text/html"}[spec["kind"]]
                    if spec["kind"] == "redirect":
                        status = "301 Moved Permanently"
                        extra = [("Location", spec["location"])]
                    tags = {"png": ["non_html"], "pdf": ["non_html"], "robots": ["non_html"], "redirect": ["redirect"]}[spec["kind"]]
                    self.docs[spec["key"]] = Doc(key=spec["key"], source="web", title="", body="", file=rel, locator=uri,
                                                 text="", raw=payload, tags=tags)
                host = uri.split("/")[2]
                path = "/" + uri.split("/", 3)[3] if uri.count("/") >= 3 else "/"
                req_headers = [("Host", host), ("User-Agent", "datapipe-sample-bot/1.0 (+https://example.org/bot)"),
                               ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                               ("Accept-Language", "en-GB,en;q=0.9,de;q=0.6,fr;q=0.5,es;q=0.4,pl;q=0.3"),
                               ("Accept-Encoding", "identity"), ("Connection", "close")]
                resp_id, req_id, meta_id = rec_id(rel, uri, "response"), rec_id(rel, uri, "request"), rec_id(rel, uri, "metadata")
                self.response_ids[uri] = resp_id
                ip = ".".join(str(int(hashlib.sha1(host.encode()).hexdigest()[k:k + 2], 16)) for k in (0, 2, 4, 6))
                common = {"WARC-Date": wdate, "WARC-Warcinfo-ID": info_id, "WARC-IP-Address": ip}
                req = writer.create_warc_record(
                    uri, "request", payload=io.BytesIO(b""), length=0,
                    http_headers=StatusAndHeaders(f"GET {path} HTTP/1.1", req_headers, is_http_request=True),
                    warc_headers_dict=dict(common, **{"WARC-Record-ID": req_id, "WARC-Concurrent-To": resp_id}))
                resp_headers = [("Date", hdate), ("Server", "nginx"), ("Content-Type", ctype),
                                ("Content-Length", str(len(payload)))] + extra
                resp = writer.create_warc_record(
                    uri, "response", payload=io.BytesIO(payload), length=len(payload),
                    http_headers=StatusAndHeaders(status, resp_headers, protocol="HTTP/1.1"),
                    warc_headers_dict=dict(common, **{"WARC-Record-ID": resp_id,
                                                      "WARC-Identified-Payload-Type": ctype.split(";")[0]}))
                writer.write_record(req)
                writer.write_record(resp)
                fetch_ms = 80 + int(hashlib.sha1(uri.encode()).hexdigest()[:3], 16) % 900
                meta = f"fetchTimeMs: {fetch_ms}\r\ncharset-detected: {'UTF-8' if kind == 'page' and spec.get('encoding', 'utf-8') == 'utf-8' else 'unknown'}\r\n".encode()
                writer.write_record(writer.create_warc_record(
                    uri, "metadata", payload=io.BytesIO(meta), length=len(meta), warc_content_type="application/warc-fields",
                    warc_headers_dict={"WARC-Record-ID": meta_id, "WARC-Date": wdate, "WARC-Warcinfo-ID": info_id,
                                       "WARC-Concurrent-To": resp_id}))
                n_resp += 1
            self._write(rel, buf.getvalue(), "web", n_resp)

    def build_wet(self) -> None:
        rel = "wet/sample-00000.warc.wet.gz"
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True, warc_version="1.0")
        base = dt.datetime(2024, 5, 22, 3, 10, 0)
        info_id = rec_id(rel, "warcinfo")
        info = (f"software: {WARC_SOFTWARE}\r\nisPartOf: datapipe-sample-crawl-2024\r\n"
                f"description: Wet files containing plain text extracted from HTML responses (synthetic).\r\n").encode()
        writer.write_record(writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(info), length=len(info), warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": info_id, "WARC-Date": base.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "WARC-Filename": "sample-00000.warc.wet.gz"}))
        for i, r in enumerate(wet_src.RECORDS):
            _, body = self.c.parts(r["key"])
            if "derive_from" not in r:
                text = body  # authored as WET text already
            elif r.get("part") == "full":  # one line per block, as a crawler's converter writes it
                text = "\n".join(block_plain(b) for b in split_blocks(body))
            else:
                text = markup_plain(body)
            data = text.encode("utf-8")
            writer.write_record(writer.create_warc_record(
                r["url"], "conversion", payload=io.BytesIO(data), length=len(data), warc_content_type="text/plain",
                warc_headers_dict={"WARC-Record-ID": rec_id(rel, r["url"], "conversion"), "WARC-Date": r["date"],
                                   "WARC-Refers-To": self.response_ids.get(r["url"], rec_id("crawl", r["url"], "response")),
                                   "WARC-Identified-Content-Language": r["lang"]}))
            lang = {"eng": "en", "deu": "de", "fra": "fr"}[r["lang"]]
            tags = [f"lang:{lang}"] if lang != "en" else []
            if r["key"] == "wet/cookie_wall":
                tags.append("junk")
            self.docs[r["key"]] = Doc(key=r["key"], source="wet", title="", body=body, file=rel, locator=r["url"],
                                      text=text, lang=lang, tags=tags)
        self._write(rel, buf.getvalue(), "wet", len(wet_src.RECORDS))

    # ---------------- ground truth
    def ground_truth(self) -> dict:
        groups, problems = [], []
        for gid, rel, keys, desc in dups.GROUPS:
            lo, hi = dups.RANGES[rel]
            members = [self._member(k) for k in keys]
            pairs = []
            for a, b in itertools.combinations(keys, 2):
                da, db = self.docs[a], self.docs[b]
                j = round(jaccard(da.text, db.text), 4)
                if rel == "exact":
                    if da.text != db.text:
                        problems.append(f"{gid}: exact pair {a} / {b} differ (Jaccard {j})")
                elif not lo <= j <= hi:
                    problems.append(f"{gid}: Jaccard {a} / {b} = {j}, outside [{lo}, {hi}] for relation {rel}")
                pair = {"a": a, "b": b, "jaccard": j}
                if da.visible or db.visible:
                    pair["jaccard_visible_text"] = round(jaccard(da.visible or da.text, db.visible or db.text), 4)
                pairs.append(pair)
            groups.append({"id": gid, "relation": rel, "expected_jaccard": [lo, hi], "description": desc,
                           "members": members, "pairs": pairs})
        if problems:
            raise ValueError("planted duplicates miss their targets:\n  " + "\n  ".join(problems))
        return {
            "about": "Ground truth for datapipe's bundled sample corpus, written by build.py. Paths are relative to "
                     "jobs/sample_data/. Locators: jsonl = 0-based line number, parquet = 0-based row, warc/wet = "
                     "WARC-Target-URI, txt/html = file name.",
            "shingling": {"n": 5, "unit": "word", "normalisation": "lowercase; remove every character that is neither "
                          "a word character nor whitespace (Python re [^\\w\\s]); split on whitespace",
                          "text_compared": "reader text for jsonl/parquet/txt/wet; for HTML the main text (title + "
                          "article body, no site chrome, no comments); jaccard_visible_text uses every visible text "
                          "node of the page instead"},
            "sources": self._sources_summary(),
            "documents": [self._doc_entry(d) for d in self.docs.values()],
            "duplicate_groups": groups,
            "pii": self._pii_entries(pii.PII, validate=True),
            "pii_negatives": self._pii_entries(pii.NEGATIVES, validate=False),
        }

    def _member(self, key: str) -> dict:
        d = self.docs[key]
        return {"key": key, "source": d.source, "file": d.file, "locator": d.locator}

    def _doc_entry(self, d: Doc) -> dict:
        return {"key": d.key, "source": d.source, "file": d.file, "locator": d.locator, "lang": d.lang,
                "words": len(d.text.split()), "tags": d.tags}

    def _sources_summary(self) -> dict:
        out: dict[str, dict] = {}
        for rel, f in sorted(self.files.items()):
            s = out.setdefault(f["source"], {"files": [], "docs": 0, "bytes": 0})
            s["files"].append(rel)
            s["docs"] += f["docs"]
            s["bytes"] += f["bytes"]
        return out

    def _pii_entries(self, items: list[tuple[str, str, str]], validate: bool) -> list[dict]:
        entries = []
        for typ, value, note in items:
            locs = []
            for d in self.docs.values():
                hay_main = d.text
                hay_all = d.visible or d.text
                if d.raw and not d.visible and not d.text:
                    continue
                if value in hay_all or value in hay_main or (d.raw and value in _decode(d.raw)):
                    locs.append({"source": d.source, "file": d.file, "locator": d.locator, "key": d.key,
                                 "in_main_text": value in hay_main})
            if not locs:
                raise ValueError(f"planted value not found anywhere: {typ} {value!r}")
            e = {"type": typ, "value": value, "note": note, "locations": locs}
            if validate:
                e["check"] = validate_pii(typ, value)
            entries.append(e)
        return entries

    def build_all(self) -> dict:
        self.build_wiki()
        self.build_news()
        self.build_forum()
        self.build_books()
        self.build_pages()
        self.build_web()
        self.build_wet()
        gt = self.ground_truth()
        data = (json.dumps(gt, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        p = self.out / "GROUND_TRUTH.json"
        p.write_bytes(data)
        return gt


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


# --------------------------------------------------------------------------------------------
# PII validators (the build refuses values that would not pass a real checker)
# --------------------------------------------------------------------------------------------


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()][::-1]
    total = 0
    for i, dgt in enumerate(digits):
        if i % 2:
            dgt *= 2
            if dgt > 9:
                dgt -= 9
        total += dgt
    return total % 10 == 0


def iban_ok(value: str) -> bool:
    s = value.replace(" ", "").upper()
    s = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in s)) % 97 == 1


def validate_pii(typ: str, value: str) -> str:
    """Return the name of the check passed; raise if the planted value is invalid."""
    if typ == "credit_card":
        if not luhn_ok(value):
            raise ValueError(f"card fails Luhn: {value}")
        return "luhn"
    if typ == "iban":
        if not iban_ok(value):
            raise ValueError(f"IBAN fails mod-97: {value}")
        return "mod97"
    if typ == "us_ssn":
        a, g, s = (int(x) for x in value.split("-"))
        if a in (0, 666) or a >= 900 or g == 0 or s == 0:
            raise ValueError(f"SSN in an invalid range: {value}")
        return "ssn_ranges"
    if typ == "aws_access_key":
        if not re.fullmatch(r"AKIA[A-Z2-7]{16}", value):
            raise ValueError(f"not an AWS access key id: {value}")
        return "regex AKIA[A-Z2-7]{16}"
    if typ in ("ipv4", "ipv4_private", "ipv6"):
        ip = ipaddress.ip_address(value)
        if (typ == "ipv4_private") != ip.is_private:
            raise ValueError(f"{value}: is_private={ip.is_private} does not match type {typ}")
        return "ipaddress " + ("private" if ip.is_private else "global")
    if typ == "email":
        if not re.fullmatch(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", value):
            raise ValueError(f"not an email: {value}")
        return "regex"
    if typ == "jwt":
        head = json.loads(base64.urlsafe_b64decode(value.split(".")[0] + "=="))
        if head.get("typ") != "JWT":
            raise ValueError("JWT header")
        return "base64url header"
    return "format"


# --------------------------------------------------------------------------------------------
# Verification: read every file back with the real libraries
# --------------------------------------------------------------------------------------------


def verify(root: Path) -> dict[str, list[int]]:
    """Read every built file back; return {source: [docs, bytes]} and fail on any mismatch."""
    from warcio.archiveiterator import ArchiveIterator

    gt = json.loads((root / "GROUND_TRUTH.json").read_text(encoding="utf-8"))
    summary: dict[str, list[int]] = {}

    def add(src: str, n: int, b: int) -> None:
        s = summary.setdefault(src, [0, 0])
        s[0] += n
        s[1] += b

    for rel in sorted(itertools.chain.from_iterable(v["files"] for v in gt["sources"].values())):
        p = root / rel
        size = p.stat().st_size
        if rel.endswith((".warc.gz", ".warc.wet.gz")):
            counts: dict[str, int] = {}
            with p.open("rb") as f:
                for rec in ArchiveIterator(f, check_digests="raise"):
                    counts[rec.rec_type] = counts.get(rec.rec_type, 0) + 1
                    rec.content_stream().read()
            n = counts.get("response", 0) + counts.get("conversion", 0)
            add(rel.split("/")[0], n, size)
            print(f"  {rel}: {counts}")
        elif rel.endswith(".jsonl.gz") or rel.endswith(".jsonl"):
            raw = gzip.decompress(p.read_bytes()) if rel.endswith(".gz") else p.read_bytes()
            rows = [json.loads(x) for x in raw.decode("utf-8").splitlines()]
            assert all({"id", "text", "url"} <= set(r) for r in rows), rel
            add(rel.split("/")[0], len(rows), size)
        elif rel.endswith(".jsonl.zst"):
            raw = zstandard.ZstdDecompressor().decompress(p.read_bytes())
            rows = [json.loads(x) for x in raw.decode("utf-8").splitlines()]
            add("forum", len(rows), size)
        elif rel.endswith(".parquet"):
            f = pq.ParquetFile(p)
            t = f.read()
            assert t.column_names == ["id", "title", "text", "url"], t.column_names
            print(f"  {rel}: {t.num_rows} rows in {f.num_row_groups} row groups")
            add("wiki", t.num_rows, size)
        elif rel.endswith((".txt", ".txt.gz", ".html", ".html.gz")):
            raw = gzip.decompress(p.read_bytes()) if rel.endswith(".gz") else p.read_bytes()
            assert raw, rel
            add(rel.split("/")[0], 1, size)
        else:
            raise ValueError(f"unexpected file {rel}")
    for src, info in gt["sources"].items():
        if summary[src][0] != info["docs"]:
            raise ValueError(f"{src}: read {summary[src][0]} docs, ground truth says {info['docs']}")
    return summary


def tree_hashes(root: Path) -> dict[str, str]:
    out = {}
    for d in OUTPUT_DIRS + ("GROUND_TRUTH.json",):
        base = root / d
        files = [base] if base.is_file() else sorted(x for x in base.rglob("*") if x.is_file())
        for f in files:
            out[str(f.relative_to(root))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE,
                    help="corpus root to write (default: next to this file); its web/ pages/ news/ forum/ wiki/ "
                         "books/ wet/ folders are emptied first")
    ap.add_argument("--verify", action="store_true", help="read every file back after building and print a summary")
    ap.add_argument("--check-determinism", action="store_true", help="build twice into temp dirs and compare bytes")
    args = ap.parse_args(argv)

    if args.check_determinism:
        with tempfile.TemporaryDirectory() as t1, tempfile.TemporaryDirectory() as t2:
            Builder(Path(t1)).build_all()
            Builder(Path(t2)).build_all()
            h1, h2 = tree_hashes(Path(t1)), tree_hashes(Path(t2))
            if h1 != h2:
                diff = sorted(k for k in set(h1) | set(h2) if h1.get(k) != h2.get(k))
                print("NOT deterministic:", diff)
                return 1
            print(f"deterministic: {len(h1)} files byte-identical across two builds")
        return 0

    for d in OUTPUT_DIRS:  # stale files from an older build must not survive
        for f in sorted((args.out / d).rglob("*")) if (args.out / d).is_dir() else []:
            if f.is_file():
                f.unlink()
    gt = Builder(args.out).build_all()
    print(f"wrote corpus to {args.out}")
    print(f"{'source':8} {'files':>5} {'docs':>5} {'bytes':>9}")
    for src, s in gt["sources"].items():
        print(f"{src:8} {len(s['files']):5d} {s['docs']:5d} {s['bytes']:9d}")
    print(f"duplicate groups: {len(gt['duplicate_groups'])}")
    for g in gt["duplicate_groups"]:
        for p in g["pairs"]:
            vis = f"  visible {p['jaccard_visible_text']:.3f}" if "jaccard_visible_text" in p else ""
            print(f"  {g['id']} {g['relation']:8} {p['jaccard']:.3f}{vis}  {p['a']} ~ {p['b']}")
    print(f"pii items: {len(gt['pii'])} ({sum(len(x['locations']) for x in gt['pii'])} locations), "
          f"negatives: {len(gt['pii_negatives'])}")
    if args.verify:
        print("verify (read back):")
        summary = verify(args.out)
        total = 0
        print(f"{'source':8} {'docs':>5} {'bytes':>9}")
        for src, (n, b) in sorted(summary.items()):
            print(f"{src:8} {n:5d} {b:9d}")
            total += b
        print(f"{'total':8} {sum(v[0] for v in summary.values()):5d} {total:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
