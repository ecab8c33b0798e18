"""`datapipe lm train` / `lm cutoffs` end to end on real text, and the `perplexity` stage."""

from __future__ import annotations

import argparse
import json
import random
import re

import kenlm
import lxml.html
import numpy as np
import pyarrow as pa
import pytest
from warcio.archiveiterator import ArchiveIterator

from datapipe import schema as S
from datapipe.errors import SpecError
from stages.models.perplexity import cli as lm_cli
from stages.models import training_text as corpus
from stages.models.model_card import read_card
from stages.models.perplexity.score import perplexities
from stages.models.perplexity.train import compute_cutoffs, read_cutoffs, train_lm
from stages.models.textnorm import TextNorm
from stages.models.langid import packaged_model_path
from stages.models.perplexity import PerplexityConfig, PerplexityFilter

HELDOUT_ARTICLES = 8


def _wiki_articles(shared_dir) -> list[str]:
    text = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    text = text.replace("\r\n", "\n")
    starts = [m.start() for m in re.finditer(r"^ = [^=].* = $", text, flags=re.M)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def _naive_page_text(html: bytes) -> str:
    """All visible text of a page, menus and footers included: what a Common Crawl WET
    file holds before any CCNet filtering, the material its tail bucket is made of."""
    doc = lxml.html.fromstring(html)
    for bad in doc.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    lines = (ln.strip() for ln in doc.text_content().split("\n"))
    return "\n".join(ln for ln in lines if ln)


@pytest.fixture(scope="module")
def wiki(shared_dir, tmp_path_factory):
    """A 5-gram model of all wiki articles but the last few, and those held out."""
    articles = _wiki_articles(shared_dir)
    assert len(articles) > 50
    tmp = tmp_path_factory.mktemp("lm")
    train_file = tmp / "wiki-train.txt"
    train_file.write_text("".join(articles[:-HELDOUT_ARTICLES]), encoding="utf-8")
    model = tmp / "wiki.arpa"
    card = train_lm([str(train_file)], str(model), order=5, language="en", heldout_fraction=0.01)
    return {"model": model, "card": card, "heldout": articles[-HELDOUT_ARTICLES:], "dir": tmp}


@pytest.fixture(scope="module")
def web_pages(shared_dir) -> list[str]:
    pages = []
    for name in ("crawl2024-0000.warc.gz", "crawl2024-0001.warc.gz"):
        with open(shared_dir / "corpora" / "web" / "warc" / name, "rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type == "response" and "html" in (rec.http_headers.get_header("Content-Type") or ""):
                    text = _naive_page_text(rec.content_stream().read())
                    if len(text.split()) > 100:
                        pages.append(text)
    assert len(pages) >= 20
    return pages


def _ccnet_docs(shared_dir) -> list[dict]:
    docs = []
    for path in sorted((shared_dir / "corpora" / "ccnet").glob("cc_en_head-*.jsonl")):
        docs += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return docs


def test_train_writes_a_loadable_arpa_and_card(wiki):
    card = read_card(wiki["model"], required=True)
    assert card == wiki["card"]
    assert card["kind"] == "kenlm-ngram" and card["order"] == 5 and card["language"] == "en"
    assert card["normalisation_max_error"] < 1e-9
    assert card["textnorm"] == TextNorm().to_dict()
    assert card["heldout"]["lines"] > 0 and 50 < card["heldout"]["perplexity"] < 2000
    lm = kenlm.Model(str(wiki["model"]))
    assert lm.order == 5
    assert card["ngrams"][0] == card["vocab_size"]


def test_heldout_wiki_beats_shuffled_and_raw_web_text(wiki, web_pages, shared_dir):
    lm = kenlm.Model(str(wiki["model"]))
    norm = TextNorm()
    heldout = perplexities(lm, norm, wiki["heldout"])
    rng = random.Random(0)

    def shuffle_words(doc: str) -> str:
        out = []
        for line in doc.split("\n"):
            words = line.split()
            rng.shuffle(words)
            out.append(" ".join(words))
        return "\n".join(out)

    shuffled = perplexities(lm, norm, [shuffle_words(d) for d in wiki["heldout"]])
    web = perplexities(lm, norm, web_pages)
    ccnet_head = perplexities(lm, norm, [d["text"] for d in _ccnet_docs(shared_dir)])
    # document by document, the same words in a random order are far less likely
    assert np.all(heldout < shuffled)
    assert np.median(shuffled) > 2.5 * np.median(heldout)
    # raw crawl pages (menus, lists, boilerplate): CCNet's tail material
    assert np.median(heldout) < np.median(web)
    assert np.max(heldout) < np.percentile(web, 25)
    # and CCNet's own head-bucket documents sit in between, as CCNet's model put them
    assert np.median(heldout) < np.median(ccnet_head) < np.median(web)


def test_cutoffs_csv_and_buckets(wiki, web_pages, tmp_path):
    sample = tmp_path / "sample.jsonl"
    with open(sample, "w", encoding="utf-8") as f:
        for text in web_pages + wiki["heldout"]:
            f.write(json.dumps({"text": text}) + "\n")
        f.write(json.dumps({"text": "ein deutscher Text", "language": "de"}) + "\n")
    out = tmp_path / "cutoffs.csv"
    with pytest.raises(SpecError, match="had no language"):   # never silently the model's language
        compute_cutoffs({"en": str(wiki["model"])}, [str(sample)], str(out))
    res = compute_cutoffs({"en": str(wiki["model"])}, [str(sample)], str(out), default_language="en")
    assert res["languages"] == {"en": len(web_pages) + len(wiki["heldout"])}
    assert res["skipped_other_languages"] == 1
    table = read_cutoffs(str(out))
    assert list(table) == ["en"] and len(table["en"]) == 101
    assert np.all(np.diff(table["en"]) >= 0)

    stage = PerplexityFilter(PerplexityConfig(model=str(wiki["model"]), cutoffs=str(out), drop_buckets=("tail",)))
    texts = wiki["heldout"][:3] + web_pages[:10] + ["", "ein deutscher Text über Dinge"]
    batch = S.make_batch(source="t", ids=[f"t/{i}" for i in range(len(texts))], texts=texts)
    batch = batch.append_column("language", pa.array(["en"] * 13 + [None, "de"]))
    out_batch, stats = stage.process(batch)
    ppl = out_batch.column("perplexity").to_pylist()
    buckets = out_batch.column("perplexity_bucket").to_pylist()
    reasons = out_batch.column(S.REJECT_REASON).to_pylist()
    head_cut, tail_cut = table["en"][30], table["en"][60]
    for p, b, r in zip(ppl[:13], buckets[:13], reasons[:13]):
        want = "head" if p < head_cut else "middle" if p < tail_cut else "tail"
        assert b == want
        assert (r == "perplexity:tail") == (b == "tail")
    assert buckets[:3] == ["head"] * 3                # held-out wiki
    assert ppl[13] is None and buckets[13] is None    # no words: unscored, kept
    assert ppl[14] is None and reasons[14] is None    # German: no German model, kept
    st = stats["t"]
    assert st.docs_in == 15 and st.docs_out + sum(st.dropped.values()) == 15
    assert st.dropped.get("perplexity:tail", 0) == buckets.count("tail")


def test_stage_matches_kenlm_and_threshold_drops(wiki, web_pages):
    lm = kenlm.Model(str(wiki["model"]))
    doc = wiki["heldout"][0]
    lines = TextNorm().lines(doc)
    want = 10 ** (-sum(lm.score(s) for s in lines) / sum(len(s.split()) + 1 for s in lines))
    texts = [doc] + web_pages[:5]
    batch = S.make_batch(source="w", ids=[f"w/{i}" for i in range(len(texts))], texts=texts)
    stage = PerplexityFilter(PerplexityConfig(model=str(wiki["model"]), max_perplexity=float(want) * 1.5))
    out, stats = stage.process(batch)
    ppl = out.column("perplexity").to_pylist()
    assert ppl[0] == pytest.approx(want, rel=1e-5)
    assert out.schema.field("perplexity").type == pa.float32()
    reasons = out.column(S.REJECT_REASON).to_pylist()
    details = out.column(S.REJECT_DETAIL).to_pylist()
    for p, r, d in zip(ppl, reasons, details):
        assert (r == "perplexity:too_high") == (p > want * 1.5)
        if r:
            assert float(d) == pytest.approx(p, abs=0.06)
    assert stats["w"].dropped["perplexity:too_high"] == sum(p > want * 1.5 for p in ppl) >= 3
    assert out.column("perplexity_bucket").null_count == len(texts)  # no cut-offs, no buckets


def test_ccnet_cutoffs_file_reads(shared_dir):
    table = read_cutoffs(str(shared_dir / "models" / "kenlm" / "ccnet-perplexity-cutoffs.csv"))
    assert "en" in table and len(table["en"]) == 100  # CCNet wrote percentiles 0..99
    assert np.all(np.diff(table["en"]) >= 0)


def test_config_errors_name_the_fix(wiki, tmp_path):
    with pytest.raises(SpecError, match="datapipe lm train"):
        PerplexityConfig(model=str(tmp_path / "missing.arpa"))
    with pytest.raises(SpecError, match="cutoffs"):
        PerplexityConfig(model=str(wiki["model"]), drop_buckets=("tail",))
    with pytest.raises(SpecError, match="drop_buckets"):
        PerplexityConfig(model=str(wiki["model"]), drop_buckets=("bottom",))
    with pytest.raises(SpecError, match="model"):
        PerplexityConfig()


def test_cli_train_and_cutoffs(shared_dir, tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="datapipe")
    lm_cli.add_cli(parser.add_subparsers(dest="command", required=True), packaged_langid=packaged_model_path)
    out = tmp_path / "books.arpa"
    args = parser.parse_args(["lm", "train", "--input", str(shared_dir / "corpora" / "books" / "tinyshakespeare.txt"),
                              "--out", str(out), "--order", "3", "--max-mb", "0.3"])
    assert args.func(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["order"] == 3 and summary["heldout"]["perplexity"] > 1
    args = parser.parse_args(["lm", "cutoffs", "--model", str(out), "--input",
                              str(shared_dir / "corpora" / "ccnet" / "cc_en_head-*.jsonl"),
                              "--out", str(tmp_path / "c.csv")])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["languages"] == {"en": 20}


def test_sample_corpus_recipe(repo_dir, shared_dir, tmp_path):
    """`lm train` + `lm cutoffs` on the bundled sample corpus, as `make sample` runs them."""
    d = repo_dir / "jobs" / "sample_data"
    model = tmp_path / "en.arpa"
    card = train_lm([str(d / "wiki" / "*.parquet")], str(model), order=5)
    assert card["documents"] == 40 and card["normalisation_max_error"] < 1e-9
    sample = [str(d / "web" / "*.warc.gz"), str(d / "news" / "*.jsonl*"), str(d / "forum" / "*.jsonl.zst"),
              str(d / "wet" / "*.wet.gz")]
    lid = str(shared_dir / "models" / "lid.176.ftz")
    res = compute_cutoffs({"en": str(model)}, sample, str(tmp_path / "cutoffs.csv"), langid=lid)
    # the sample's German, French, Spanish and Polish pages are identified, not taken for English
    assert res["languages"]["en"] > 60 and res["skipped_other_languages"] >= 10 and res["no_language"] <= 2
    stage = PerplexityFilter(PerplexityConfig(model=str(model), cutoffs=str(tmp_path / "cutoffs.csv"),
                                              max_perplexity=3000.0))
    texts = [doc.text for doc in corpus.iter_docs([str(d / "forum" / "*.jsonl.zst")])]
    out, stats = stage.process(S.make_batch(source="forum", ids=[f"f/{i}" for i in range(len(texts))], texts=texts))
    assert set(out.column("perplexity_bucket").to_pylist()) <= {"head", "middle", "tail"}
    assert 0 < stats["forum"].docs_out < len(texts)
