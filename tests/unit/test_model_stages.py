"""The ``classify`` and ``embed`` stages against the libraries they wrap, on CPU with the
real all-MiniLM-L6-v2 (a dev dependency ships it): scores equal one direct
``AutoModelForSequenceClassification`` call, vectors equal sentence-transformers'
``encode``, whatever the length-bucketed batching does to the order."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minilm import minilm_classifier  # noqa: E402

from datapipe import schema as S  # noqa: E402
from datapipe.errors import SpecError  # noqa: E402


def _texts(shared_dir: Path, n: int = 24) -> list[str]:
    """Real paragraphs of very different lengths (a heading, a sentence, a long article
    paragraph past 512 tokens), plus an empty document."""
    paras = [p.strip() for p in (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
             .split("\n") if p.strip()]
    longest = max(paras, key=len)
    picked = [paras[i * 7] for i in range(n - 3)] + [longest + " " + longest, "", "Nur ein kurzer deutscher Satz."]
    assert len(longest.split()) > 400        # one text is cut at max_length
    return picked


def _batch(texts: list[str]) -> pa.Table:
    return S.make_batch(source="t", ids=[f"t/{i:03d}" for i in range(len(texts))], texts=texts)


@pytest.fixture(scope="module")
def regressor(minilm_dir, tmp_path_factory) -> Path:
    return minilm_classifier(tmp_path_factory.mktemp("edu") / "model")


def _direct_logits(model_dir: Path, texts: list[str], max_length: int) -> np.ndarray:
    """What a user's own transformers code gives: one padded batch, head truncation."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    with torch.inference_mode():
        enc = tok(texts, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
        return model(**enc).logits.float().numpy()


def test_classify_scores_equal_a_direct_transformers_call(regressor, shared_dir):
    from stages.models.stage import Classify, ClassifyConfig

    texts = _texts(shared_dir)
    want = _direct_logits(regressor, texts, 512)[:, 0]
    threshold = float(np.median(want))
    # batch_tokens small: the rows run in many sub-batches, shortest first
    stage = Classify(ClassifyConfig(model=str(regressor), prefix="edu", int_score=(0, 5), min_score=threshold,
                                    batch_tokens=1024))
    assert set(stage.adds) == {"edu_score", "edu_int_score"}
    out, stats = stage.process(_batch(texts))
    got = np.asarray(out.column("edu_score").to_pylist(), dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    assert out.column("edu_int_score").to_pylist() == [int(round(max(0.0, min(float(s), 5.0)))) for s in got]
    below = got < threshold
    reasons = out.column(S.REJECT_REASON).to_pylist()
    assert [r is not None for r in reasons] == below.tolist()
    assert set(filter(None, reasons)) == {"classify:below_min_score"}
    assert stats["t"].docs_out == int((~below).sum()) and stats["t"].dropped == {"classify:below_min_score": int(below.sum())}


def test_classify_probabilities_labels_and_keep_labels(minilm_dir, shared_dir, tmp_path):
    from stages.models.stage import Classify, ClassifyConfig

    labels = ["High", "Medium", "Low"]
    model = minilm_classifier(tmp_path / "quality", labels, seed=3)
    texts = _texts(shared_dir, 12)
    logits = _direct_logits(model, texts, 128)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    stage = Classify(ClassifyConfig(model=str(model), prefix="nq", label="High", all_labels=True, max_length=128,
                                    keep_labels=("High", "Medium")))
    out, stats = stage.process(_batch(texts))
    np.testing.assert_allclose(out.column("nq_score").to_pylist(), probs[:, 0], atol=1e-5)
    np.testing.assert_allclose(out.column("nq_low").to_pylist(), probs[:, 2], atol=1e-5)
    top = [labels[i] for i in probs.argmax(axis=1)]
    assert out.column("nq_label").to_pylist() == top
    assert out.column(S.REJECT_DETAIL).to_pylist() == [t if t == "Low" else None for t in top]
    assert stats["t"].dropped == ({"classify:label": top.count("Low")} if "Low" in top else {})


def test_embed_vectors_equal_sentence_transformers(minilm_dir, shared_dir):
    from sentence_transformers import SentenceTransformer

    from stages.models.embed import encode_texts
    from stages.models.stage import Embed, EmbedConfig

    texts = _texts(shared_dir)
    st = SentenceTransformer(str(minilm_dir), device="cpu", local_files_only=True)
    st.max_seq_length = 256    # the model's own setting (sentence_bert_config.json)
    want = st.encode(texts, batch_size=8, convert_to_numpy=True)
    got = encode_texts(str(minilm_dir), texts, max_length=256)
    assert got.dtype == np.float32 and got.shape == (len(texts), 384)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)

    stage = Embed(EmbedConfig(model=str(minilm_dir), max_length=256, batch_tokens=512))
    out, _ = stage.process(_batch(texts))
    col = out.column("embedding")
    assert col.type == pa.list_(pa.float16(), 384)
    vecs = np.stack([np.asarray(v, dtype=np.float16) for v in col.to_pylist()])
    np.testing.assert_allclose(vecs.astype(np.float32), want, rtol=0, atol=2.5e-4)   # half a float16 step at 1


def test_model_stage_config_errors_name_the_value_and_the_fix(minilm_dir, regressor, tmp_path):
    from stages.models.stage import ClassifyConfig, EmbedConfig

    with pytest.raises(SpecError, match=r"embed\.model: '.*nowhere' is not a folder.*never download"):
        EmbedConfig(model=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpecError, match="has no config.json"):
        ClassifyConfig(model=str(tmp_path / "empty"))
    with pytest.raises(SpecError, match="min_int_score needs int_score"):
        ClassifyConfig(model=str(regressor), min_int_score=3)
    with pytest.raises(SpecError, match="keep_labels needs a model with several labels"):
        ClassifyConfig(model=str(regressor), keep_labels=("LABEL_0",))
    with pytest.raises(SpecError, match=r"gpus must be 0, 1"):
        EmbedConfig(model=str(minilm_dir), gpus=2)
    cfg = EmbedConfig(model=str(minilm_dir))   # no GPU here: auto is 0, fp32
    assert (cfg.gpus, cfg.dtype) == (0.0, "fp32")


def test_length_batches_cover_every_row_once_within_the_token_and_padding_bounds():
    from stages.models.kit import length_batches, naive_batches

    # a crawl's mix: most rows cut at 512 tokens, a tail of short ones, in input order
    rng = np.random.default_rng(0)
    lengths = np.where(rng.random(1000) < 0.7, 512, rng.integers(3, 512, 1000))
    batches = length_batches(lengths, batch_tokens=16384)
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(1000))
    assert all(len(b) * lengths[b].max() <= 16384 for b in batches)
    padded = sum(len(b) * int(lengths[b].max()) for b in batches)
    naive = sum(len(b) * int(lengths[b].max()) for b in naive_batches(1000, 32))
    assert padded <= 1.1 * lengths.sum() < naive
    assert len(batches) < 80
    assert [b.tolist() for b in length_batches(lengths, batch_tokens=16384)] == [b.tolist() for b in batches]
    assert [b.tolist() for b in length_batches([9000, 5], batch_tokens=4096)] == [[1], [0]]   # too long: alone
