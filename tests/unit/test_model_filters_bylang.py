"""Per-language model filters (issue 27): ``lm train --by-language`` and ``quality
train --by-language`` write one model per language into a folder; the ``perplexity``
and ``quality`` stages pick the model by the document's ``language`` and keep, counted
as ``passed_no_model``, the languages with no model. Real data: the German and English
MediaWiki articles, real German/English web pages, the packaged lid.176."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from datapipe import schema as S
from datapipe.cli import main as datapipe_main
from datapipe.errors import SpecError
from stages.models import training_text as corpus
from stages.models import fasttext as fasttext_compat
from stages.models.textnorm import TextNorm
from stages.models.perplexity.score import load_kenlm, perplexities
from stages.models.perplexity.stage import PerplexityConfig, PerplexityFilter
from stages.models.quality.stage import QualityConfig, QualityFilter
from stages.models.quality.train import positive_scores


@pytest.fixture(scope="module")
def models(shared_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("bylang")
    wiki = str(shared_dir / "corpora" / "wiki" / "wikitext-markup" / "*.txt")
    pages = str(shared_dir / "corpora" / "web" / "html" / "[0-9a-c]*.html.gz")
    assert datapipe_main(["lm", "train", "--by-language", "--input", wiki, "--languages", "en", "de",
                          "--min-docs", "5", "--order", "3", "--out-dir", str(out / "lm")]) == 0
    assert datapipe_main(["quality", "train", "--by-language", "--positive", wiki, "--negative", pages,
                          "--languages", "en", "de", "--min-docs", "5", "--epoch", "5", "--max-examples", "300",
                          "--out-dir", str(out / "quality")]) == 0
    return out


@pytest.fixture(scope="module")
def docs(shared_dir):
    """Real web pages of three languages, as the extract stage gives them."""
    pages = [str(shared_dir / "corpora" / "web" / "html" / p) for p in (
        "90min.de-Bundesliga-Tabelle.html.gz", "KATAPULT-Magazin.de-parteien.html.gz",
        "Lebensmittelpraxis.de-Stadtzentrum.html.gz",
        "Finowie odkrywają wino _ Res Publica Nowa.html.gz")]
    texts = [d.text for d in corpus.iter_docs(pages)]
    texts.append("The committee met on Tuesday and agreed the budget for the new library after a long debate.")
    langs = ["de", "de", "de", "pl", "en"]
    return texts, langs


def test_each_language_is_scored_by_its_own_model_and_others_pass_counted(models, docs):
    texts, langs = docs
    cards = {p.stem.removesuffix(".card"): json.loads(p.read_text()) for p in (models / "lm").glob("*.card.json")}
    assert set(cards) == {"en", "de"} and all(cards[k]["language"] == k for k in cards)
    stage = PerplexityFilter(PerplexityConfig(models_dir=str(models / "lm")))
    batch = S.make_batch(source="web", ids=[f"d{i}" for i in range(len(texts))], texts=texts)
    batch = batch.append_column("language", pa.array(langs))
    out, stats = stage.process(batch)
    ppl = out.column("perplexity").to_pylist()
    for lang in ("de", "en"):
        lm = load_kenlm(models / "lm" / f"{lang}.arpa")
        other = load_kenlm(models / "lm" / f"{'en' if lang == 'de' else 'de'}.arpa")
        norm = TextNorm.from_dict(cards[lang]["textnorm"])
        idx = [i for i, lg in enumerate(langs) if lg == lang]
        own = perplexities(lm, norm, [texts[i] for i in idx])
        assert np.allclose([ppl[i] for i in idx], own, rtol=1e-5)
        assert not np.allclose(own, perplexities(other, norm, [texts[i] for i in idx]), rtol=1e-2)
    assert ppl[3] is None  # Polish: no model, kept
    assert out.num_rows == len(texts) and stats["web"].changes["passed_no_model"] == 1


def test_quality_models_per_language(models, docs):
    texts, langs = docs
    stage = QualityFilter(QualityConfig(models_dir=str(models / "quality"), mode="threshold", threshold=0.5))
    batch = S.make_batch(source="web", ids=[f"d{i}" for i in range(len(texts))], texts=texts)
    batch = batch.append_column("language", pa.array(langs))
    out, stats = stage.process(batch)

    de = fasttext_compat.load(models / "quality" / "de.bin")
    card = json.loads((models / "quality" / "de.card.json").read_text())
    assert card["language"] == "de" and card["by_language"]["positive_docs"] >= 5
    norm = TextNorm.from_dict(card["textnorm"])
    want = positive_scores(de, [norm.one_line(t) for t in texts[:3]])
    scores = out.column("quality_score").to_pylist()
    assert np.allclose(scores[:3], want, atol=1e-6)
    assert scores[3] is None and stats["web"].changes["passed_no_model"] == 1
    reasons = out.column(S.REJECT_REASON).to_pylist() if S.REJECT_REASON in out.column_names else [None] * 5
    assert reasons[3] is None  # the Polish page is kept


def test_single_model_configs_still_work_and_missing_dirs_are_clear(models, tmp_path):
    one = PerplexityFilter(PerplexityConfig(model=str(models / "lm" / "de.arpa")))
    batch = S.make_batch(source="s", ids=["a"], texts=["Die Sitzung wurde am Dienstag eröffnet und dauerte lange."])
    out, _ = one.process(batch)
    assert out.column("perplexity").to_pylist()[0] > 0  # no language column: the one model scores it
    q = QualityFilter(QualityConfig(model=str(models / "quality" / "en.bin"), mode="score"))
    assert q.process(batch)[0].column("quality_score").to_pylist()[0] is not None
    with pytest.raises(SpecError, match="--by-language --out-dir"):
        PerplexityConfig(models_dir=str(tmp_path))
    with pytest.raises(SpecError, match="models_dir"):
        QualityConfig()
