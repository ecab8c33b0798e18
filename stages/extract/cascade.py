"""``extractor: cascade``: trafilatura's own extraction at about 40 % of its CPU.

Where the reference (``trafilatura.extract``, precision settings) spends its time on our
pages: XPath pruning (``re:test`` callbacks into Python on every candidate element), the
comparison with readability and jusText (its "fallback", about 40 %), and parsing the
whole page. ``cascade`` keeps trafilatura's algorithm and cuts each:

1. **prestrip** – lexbor (selectolax) parses the page and drops the elements
   trafilatura deletes anyway before it looks for content (:data:`PRESTRIP`); lxml then
   parses the smaller page, with a plain element class (no per-element Python lookup).
2. **one pass** – trafilatura's own steps (:func:`one_pass`, the sequence of
   ``trafilatura.core.trafilatura_sequence`` for precision without comments) run once on
   that tree: the raw-tree prunes, cleaning and tag conversion, the main extractor. Its
   XPath selectors that take the time are replaced by :class:`Matcher` objects, the same
   selections written in Python (:func:`_matchers`; a unit test checks them against
   trafilatura's XPath on real pages), bound into copies of trafilatura's functions
   (:func:`_internals`); the raw-tree prunes are skipped on pages that cannot match them
   (none of their tokens occurs in the page).
3. **comparison only where it can matter** – the readability/jusText comparison runs on
   the same tree when the main text has at most ``cascade_min_chars`` characters (the
   comparison mostly rescues short extractions); with the comparison, the output is
   exactly ``trafilatura.extract`` on the pre-stripped page. When the main text is empty,
   the full reference runs on the original page instead (content that only the prestrip
   removed: ``aside`` text that readability finds).

A page that would make lexbor's parse quadratic (:func:`stages.extract.html.tree_work`:
thousands of elements left open) skips the prestrip and gets the full reference, whose
Python steps the stage's time limit can stop.

The copies call trafilatura's internals, so ``cascade`` needs the trafilatura version it
was written against (:data:`TRAFILATURA_VERSION`, pinned in pyproject.toml; the stage's
config checks it). Other trafilatura settings than the stage's precision defaults
(``favor_precision: false``, ``favor_recall``, ``include_comments``) take trafilatura's
public path instead: its fast mode on the pre-stripped page, and the full reference on
the original page when that text has at most ``cascade_min_chars`` characters.
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Callable
from copy import copy

from stages.extract import html

#: the trafilatura release whose internals :func:`_internals` binds (pyproject pins it)
TRAFILATURA_VERSION = "2.3.1"

#: Elements removed (with their content, keeping the text that follows them) before
#: trafilatura parses the page. trafilatura's own cleaning deletes each of these
#: (``MANUALLY_CLEANED``) before its main extractor runs. Not in the list although
#: trafilatura cleans them: ``form`` (a form holding most of the page's text is kept as a
#: container: ASP.NET pages wrap everything in one), ``figure`` (a figure holding a table
#: is kept as a table), ``math`` (formulas are salvaged first), ``head`` (the page language
#: is read there), ``time``, ``noscript`` (lexbor parses its content as text, lxml as
#: elements: stripping it here changed what trafilatura kept around it on one
#: articlebench page; trafilatura deletes it itself).
PRESTRIP = (
    "script", "style", "template", "svg", "iframe", "nav", "footer", "aside",
    "button", "input", "select", "option", "textarea", "label", "fieldset", "picture", "video",
    "audio", "canvas", "object", "embed", "map", "menu", "link", "meta",
)

# trafilatura.core._DISCUSSION_FORUM_POSTING_RE: a forum thread keeps its comment containers
_FORUM = re.compile(r'"@type"\s*:\s*"DiscussionForumPosting"|"@type"\s*:\s*\[[^\]]*"DiscussionForumPosting"')
# a page without any of these substrings cannot match REMOVE_COMMENTS(_AND_LISTS)_XPATH
# ([Cc]omment..., comol, disqus_thread, dsq-comments) or RAW_TREE_PRUNE_XPATH
_COMMENT_TOKENS = ("omment", "comol", "disqus_thread", "dsq-comments")
_RAW_PRUNE_TOKENS = ("mvp-post-add-", "infinite", "elementor-share-buttons")


def prestrip(page: str) -> tuple[str, bool]:
    """``(the page without the PRESTRIP elements as HTML, whether it is a forum thread)``.
    The forum test is trafilatura's (schema.org ``DiscussionForumPosting`` in a JSON-LD
    script), made here because the scripts go."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(page)
    forum = "DiscussionForumPosting" in page and any(
        _FORUM.search(node.text() or "") for node in tree.css('script[type="application/ld+json"]'))
    tree.strip_tags(list(PRESTRIP))
    return tree.html or "", forum


def _load(page: str):
    """``trafilatura.utils.load_html`` for a string, with a parser whose elements are all
    ``HtmlElement`` (lxml.html's per-element class lookup is a Python call per element
    touched; the form-control classes it picks are for elements the prestrip removed)."""
    from lxml import etree
    from lxml import html as lh
    from trafilatura.utils import is_dubious_html, repair_faulty_html

    parser = etree.HTMLParser(collect_ids=False, default_doctype=False, encoding="utf-8",
                              remove_comments=True, remove_pis=True)
    parser.set_element_class_lookup(etree.ElementDefaultClassLookup(
        element=lh.HtmlElement, comment=lh.HtmlComment, pi=lh.HtmlProcessingInstruction, entity=lh.HtmlEntity))
    beginning = page[:50].lower()
    page = repair_faulty_html(page, beginning)
    try:
        tree = lh.fromstring(page, parser=parser)
    except ValueError:   # "Unicode strings with encoding declaration are not supported."
        tree = None
    if tree is None or len(tree) < 1:
        try:
            tree = lh.fromstring(page.encode("utf8", "surrogatepass"), parser=parser)
        except Exception:   # noqa: BLE001 - as trafilatura.utils.fromstring_bytes: no tree, the full pass runs
            return None
    if tree is not None and is_dubious_html(beginning) and len(tree) < 2:
        return None
    return tree


# -- trafilatura's selectors in Python ---------------------------------------------------

def _first(e, a: str, b: str) -> str | None:
    """XPath ``string(@a|@b)``: the value of whichever attribute comes first on the element
    (what trafilatura's ``re:test(@id|@class, ...)`` tests)."""
    va, vb = e.get(a), e.get(b)
    if va is None or vb is None:
        return va if vb is None else vb
    for key in e.keys():   # noqa: SIM118 - an lxml element's `in` tests children, not attributes
        if key in (a, b):
            return va if key == a else vb
    return None


class Matcher:
    """A stand-in for one of trafilatura's XPath selectors: ``m(tree)`` lists the elements
    the XPath selects, in document order, and ``first=True`` only the first one (the
    ``(...)[1]`` content selectors, of which ``_extract`` takes the first anyway)."""

    def __init__(self, tags: tuple[str, ...] | None, test: Callable[..., bool], *, first: bool = False):
        self.tags, self.test, self.first = tags, test, first

    def __call__(self, tree) -> list:
        from lxml.etree import Element

        elems = tree.iterdescendants(*self.tags) if self.tags else tree.iterdescendants(Element)
        if self.first:
            return next(([e] for e in elems if self.test(e)), [])
        return [e for e in elems if self.test(e)]


def _matchers() -> dict[str, list]:
    """trafilatura's XPath lists that take the time, as :class:`Matcher` lists (the others
    kept): the regular expressions are trafilatura's own token lists."""
    from trafilatura import xpaths as X

    def rx(tokens, flags=0):
        return re.compile(X._alt(tokens), flags)

    od_id = rx(X._OVERALL_DISCARD_BOTH_TOKENS + X._OVERALL_DISCARD_ID_TOKENS)
    od_class = rx(X._OVERALL_DISCARD_BOTH_TOKENS + X._OVERALL_DISCARD_CLASS_TOKENS)
    od_consent = rx(X._CONSENT_ID_CLASS_TOKENS)

    def overall_discard(e) -> bool:
        g = e.get
        if g("data-lp-replacement-content") is not None:
            return True
        role, comp = g("role"), g("data-component")
        if role and "nav" in role.replace("N", "n") or comp and "MostPopularStories" in comp:
            return True
        i, c = g("id"), g("class")
        if i is None and c is None:
            return False
        first = _first(e, "id", "class")
        return bool(first and od_consent.search(first) or i and od_id.search(i) or c and od_class.search(c))

    hidden_id = re.compile("reader-comments|akismet")
    hidden_class = re.compile("^hide-|comments-title|nocomments|-reply-|message|akismet|suggest-links|-hide-"
                              "|hide-print| hidden| hide|noprint|notloaded")

    def overall_hidden(e) -> bool:
        if not len(e.attrib):
            return False
        g = e.get
        i, c, s = g("id"), g("class"), g("style")
        if c == "comments-title" or g("aria-hidden") == "true":
            return True
        first = _first(e, "id", "class")
        if first and first.startswith("reply-"):
            return True
        first = _first(e, "id", "style")
        if first and "hidden" in first or s and ("display:none" in s or "display: none" in s):
            return True
        return bool(i and hidden_id.search(i) or c and hidden_class.search(c))

    bottom, link = re.compile(r"(^|\s)bottom|bottom(\s|$)"), re.compile(r"(^|\s)link(\s|$)")

    def precision_discard(e) -> bool:
        s = e.get("style")
        if s and "border" in s:
            return True
        first = _first(e, "id", "class")
        return bool(first and (bottom.search(first) or link.search(first)))

    b0_id, b0_class = rx(X._ARTICLE_CONTENT_ID_TOKENS), rx(X._ARTICLE_CONTENT_CLASS_TOKENS)

    def body_article(e) -> bool:
        g = e.get
        i, c = g("id"), g("class")
        return (c in ("post", "entry") or g("itemprop") == "articleBody" or i == "articleContent"
                or bool(i and b0_id.search(i)) or bool(c and b0_class.search(c)))

    b2_id, b2_class, fulltext = rx(X._STORY_ID_TOKENS), rx(X._STORY_CLASS_TOKENS), re.compile("fulltext", re.IGNORECASE)

    def body_story(e) -> bool:
        g = e.get
        i, c = g("id"), g("class")
        return (g("role") == "article" or i in ("article", "story")
                or c in ("postarea", "art-postcontent", "text", "cell", "story")
                or bool(i and b2_id.search(i)) or bool(c and (fulltext.search(c) or b2_class.search(c))))

    b3_id, b3_class = rx(X._MAIN_CONTENT_ID_TOKENS), rx(X._MAIN_CONTENT_CLASS_TOKENS)

    def body_main(e) -> bool:
        g = e.get
        i, c = g("id"), g("class")
        if i == "content" or c == "content":
            return True
        if i and (b3_id.search(i) or "main-content" in i.replace("C", "c").replace("M", "m")):
            return True
        return bool(c and (b3_class.search(c) or "main-content" in c.replace("C", "c").replace("M", "m")
                           or "page-content" in c.replace("C", "c").replace("P", "p")))

    sections, containers = ("div", "item", "list", "p", "section", "span"), ("article", "div", "main", "section")
    return {
        "OVERALL_DISCARD_XPATH": [Matcher(sections, overall_discard), Matcher(None, overall_hidden)],
        "PRECISION_DISCARD_XPATH": [X.PRECISION_DISCARD_XPATH[0], Matcher(sections, precision_discard)],
        "BODY_XPATH": [Matcher(containers, body_article, first=True), X.BODY_XPATH[1],
                       Matcher(containers, body_story, first=True), Matcher(containers, body_main, first=True),
                       X.BODY_XPATH[4]],
    }


def _rebind(fn, **names):
    """A copy of function ``fn`` that sees ``names`` instead of its module's globals of
    those names (trafilatura reads its XPath lists and helpers as module globals)."""
    scope = dict(fn.__globals__)
    scope.update(names)
    new = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


@functools.cache
def _internals() -> tuple[Callable, Callable]:
    """``(extract_content, compare_extraction)``: trafilatura's, with :func:`_matchers`
    in place of its XPath selectors. Built once per process; trafilatura itself (the
    reference) is left as it is."""
    from trafilatura import external
    from trafilatura import main_extractor as me

    m = _matchers()
    prune = _rebind(me.prune_unwanted_sections, OVERALL_DISCARD_XPATH=m["OVERALL_DISCARD_XPATH"],
                    PRECISION_DISCARD_XPATH=m["PRECISION_DISCARD_XPATH"])
    extract = _rebind(me._extract, BODY_XPATH=m["BODY_XPATH"], prune_unwanted_sections=prune)
    recover = _rebind(me.recover_wild_text, prune_unwanted_sections=prune)
    extract_content = _rebind(me.extract_content, _extract=extract, recover_wild_text=recover)
    compare = _rebind(external.compare_extraction, OVERALL_DISCARD_XPATH=m["OVERALL_DISCARD_XPATH"])
    return extract_content, compare


def one_pass(small: str, options, *, is_forum: bool, compare: Callable[[int], bool]) -> tuple[str | None, int]:
    """``(text or None, length of the main extractor's text)`` for a pre-stripped page:
    ``trafilatura.core.trafilatura_sequence`` for precision without comments, then
    ``bare_extraction``'s checks and ``extract``'s rendering, the comparison with
    readability/jusText only where ``compare(length)`` says so. With ``compare`` always
    true this is ``trafilatura.extract`` on ``small`` (the unit tests hold it to that)."""
    from lxml.etree import Element, strip_tags
    from trafilatura.core import determine_returnstring
    from trafilatura.deduplication import duplicate_test
    from trafilatura.htmlprocessing import (
        convert_tags,
        prune_unwanted_nodes,
        tree_cleaning,
    )
    from trafilatura.metadata import Document
    from trafilatura.xpaths import (
        RAW_TREE_PRUNE_XPATH,
        REMOVE_COMMENTS_AND_LISTS_XPATH,
        REMOVE_COMMENTS_XPATH,
    )

    assert options.focus == "precision" and not options.comments, "one_pass covers precision without comments"
    extract_content, compare_extraction = _internals()
    tree = _load(small)
    if tree is None:
        return None, 0
    comments = any(t in small for t in _COMMENT_TOKENS)
    if any(t in small for t in _RAW_PRUNE_TOKENS):
        tree = prune_unwanted_nodes(tree, RAW_TREE_PRUNE_XPATH)
    if comments:
        tree = prune_unwanted_nodes(tree, REMOVE_COMMENTS_AND_LISTS_XPATH)
    cleaned = convert_tags(tree_cleaning(copy(tree), options), options, options.url)
    if comments and not is_forum:
        cleaned = prune_unwanted_nodes(cleaned, REMOVE_COMMENTS_XPATH)
    body, text = extract_content(cleaned, options)
    main_len = len(text)
    if compare(main_len):
        body, text = compare_extraction(tree_cleaning(copy(tree), options), copy(tree), body, text, options)
    if options.max_tree_size and len(body) > options.max_tree_size:
        strip_tags(body, "hi")
        if len(body) > options.max_tree_size:
            return None, main_len
    if len(text) < options.min_output_size and options.min_output_comm_size > 0 or (
            options.dedup and duplicate_test(body, options)):
        return None, main_len
    document = Document()
    document.raw_text, document.body, document.commentsbody = text, body, Element("body")
    return determine_returnstring(document, options), main_len


def options(kwargs: dict, url: str | None):
    """trafilatura's ``Extractor`` for ``trafilatura.extract(page, url=url, **kwargs)``."""
    from trafilatura.settings import Extractor

    return Extractor(output_format=kwargs["output_format"], fast=kwargs["fast"], precision=kwargs["favor_precision"],
                     recall=kwargs["favor_recall"], comments=kwargs["include_comments"],
                     formatting=kwargs["include_formatting"], links=kwargs["include_links"],
                     images=kwargs["include_images"], tables=kwargs["include_tables"], dedup=kwargs["deduplicate"],
                     url=url, with_metadata=kwargs["with_metadata"])


def extract(page: str, url: str | None, kwargs: dict, min_chars: int) -> tuple[str | None, bool]:
    """``(text or None, whether the comparison or the full reference ran)`` for a decoded
    page; ``kwargs`` are ``trafilatura.extract``'s keyword arguments (the stage's)."""
    import trafilatura

    kwargs = dict(kwargs, fast=False)
    if html.tree_work(page) > html.LEXBOR_MAX_WORK:   # lexbor would be quadratic: the reference, on lxml
        return trafilatura.extract(page, url=url, **kwargs), True
    small, is_forum = prestrip(page)
    opts = options(kwargs, url)
    if opts.focus != "precision" or opts.comments:   # outside one_pass: trafilatura's public path
        text = trafilatura.extract(small, url=url, **dict(kwargs, fast=True))
        if text is not None and len(text) > min_chars:
            return text, False
        return trafilatura.extract(page, url=url, **kwargs), True
    text, main_len = one_pass(small, opts, is_forum=is_forum, compare=lambda n: 0 < n <= min_chars)
    if main_len == 0:
        return trafilatura.extract(page, url=url, **kwargs), True
    return text, main_len <= min_chars
