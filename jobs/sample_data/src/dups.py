'''Planted duplicate groups. Members are document keys; build.py maps them to
(source, file, locator), measures the word-5-gram Jaccard of every member pair and fails if a
pair falls outside the range its relation promises:

- exact:    texts identical after build (Jaccard 1.0); dedup must remove all but one copy.
- near:     edited copies, Jaccard in [0.85, 0.98]; dedup at threshold 0.8 must remove them.
- similar:  related but distinct documents, Jaccard in [0.35, 0.65]; must NOT be removed.
- distinct: share boilerplate or a passage only, Jaccard below 0.35; must NOT be removed.
'''

RANGES = {"exact": (1.0, 1.0), "near": (0.85, 0.98), "similar": (0.35, 0.65), "distinct": (0.0, 0.35)}

GROUPS = [
    ("G01", "near", ["wiki/lighthouse", "web/coastwise_lighthouse"],
     "encyclopedia article republished on a travel blog: intro and licence line added, four phrases reworded"),
    ("G02", "exact", ["wiki/varnholm", "wet/varnholm_mirror"],
     "encyclopedia article mirrored verbatim by a town-guide site (WET text identical to the parquet text)"),
    ("G03", "near", ["wiki/sourdough", "forum/sourdough_paste"],
     "encyclopedia article pasted into a forum thread with a preface and a reply"),
    ("G04", "near", ["wiki/dry_stone_wall", "pages/dry_stone_walls"],
     "encyclopedia article reused by a heritage society: a phrase reworded, a course advert appended"),
    ("G05", "similar", ["wiki/tide_mill", "web/courier_tide_mill"],
     "news feature that reuses half of the encyclopedia article and adds its own reporting"),
    ("G06", "near", ["news/harbour_dredging", "news/harbour_dredging_syndicated"],
     "local story syndicated by a wire service: new headline, typos, credit line"),
    ("G07", "exact", ["news/ferry_strike", "news/ferry_strike_resent"],
     "wire story re-sent unchanged into the second news file"),
    ("G08", "near", ["news/maternity_unit", "forum/maternity_paste"],
     "paywalled story pasted into a forum post with a one-line preface, byline dropped, a typo"),
    ("G09", "near", ["news/keeper_obituary", "web/gazette_obituary"],
     "news article and the same article on the newspaper's website (caption, small edits, page chrome)"),
    ("G10", "similar", ["news/flood_defences", "news/flood_followup"],
     "original story and a follow-up months later that reuses its background paragraphs"),
    ("G11", "near", ["news/varnholm_lamps", "wet/varnholm_lamps_truncated"],
     "wire story on another site, captured as WET text with the last paragraph cut"),
    ("G12", "near", ["web/gazette_gullrock150", "wet/gazette_gullrock150"],
     "HTML page in the WARC and its WET conversion (navigation and footer lines included)"),
    ("G13", "near", ["web/ridgeway_headlamp", "web/gearbargains_headlamp"],
     "product description copied by a reseller under a longer SEO title, with a typo"),
    ("G14", "near", ["web/thrifty_leek_soup", "pages/leek_soup"],
     "recipe copied to another recipe site with its two intro paragraphs swapped (the original has a reader comment)"),
    ("G15", "near", ["web/kuestenbote_faehre", "pages/nordsee_faehre"],
     "German news article republished by a regional portal with small rewording"),
    ("G16", "similar", ["web/quillstack_getting_started_24", "web/quillstack_getting_started_30"],
     "two versions of the same documentation page; about half rewritten"),
    ("G17", "similar", ["forum/git_undo_1", "forum/git_undo_2"],
     "same question asked twice in a forum with different circumstances and answers"),
    ("G18", "near", ["book/lamplighter", "book/lamplighter_rerelease"],
     "two editions of the same book: different header block, a few transcription differences"),
    ("G19", "distinct", ["book/salt_road", "book/bees"],
     "two different books sharing the same long licence boilerplate"),
    ("G20", "distinct", ["book/salt_road", "pages/salt_road_excerpt"],
     "a web page quoting the first story of a book (containment, low Jaccard)"),
]
