"""``datapipe tokenizer eval`` (fertility per language, two tokenizers side by side) and
``tokenizer train --balance language`` (temperature sampling, card with the sample and
the fertility table), on the UDHR of the shared corpora (issue 27)."""

from __future__ import annotations

import argparse
import json
import zipfile

import pytest
from PIL import Image

from stages.tokenize.eval import word_count
from stages.tokenize.train import add_cli

LANGS = {"en": "eng", "de": "deu", "ru": "rus", "zh": "cmn_hans", "th": "tha"}


@pytest.fixture(scope="module")
def udhr(shared_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("udhr")
    with zipfile.ZipFile(shared_dir / "corpora" / "nltk" / "udhr2.zip") as z:
        rows = [{"text": p.strip(), "language": lang}
                for lang, name in LANGS.items()
                for p in z.read(f"udhr2/{name}.txt").decode("utf-8").split("\n") if p.strip()]
    with open(d / "udhr.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    # the same text with no language column: langid (packaged lid.176) must find them
    with open(d / "udhr.txt", "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(r["text"] for r in rows if len(r["text"]) > 20))
    return d


def _cli(argv):
    ap = argparse.ArgumentParser()
    add_cli(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    return args.func(args)


def test_word_segmentation_fits_the_script():
    assert word_count("Alle Menschen sind frei – und gleich.", "de") == 6
    assert word_count("人人生而自由，在尊严和权利上一律平等。", "zh") == 17
    assert word_count("มนุษย์ทั้งหลาย", "th") == 10  # letters only: combining vowel marks are not counted


def test_eval_compares_two_tokenizers_per_language(udhr, shared_dir, tmp_path, capsys):
    out = tmp_path / "ev"
    rc = _cli(["tokenizer", "eval", "--input", str(udhr / "udhr.jsonl"), "--lang-key", "language",
               "--tokenizer", str(shared_dir / "tokenizers" / "gpt-neox-20b.tokenizer.json"), "--name", "neox",
               "--tokenizer", str(shared_dir / "tokenizers" / "tiny-2k.tokenizer.json"), "--name", "tiny",
               "--out", str(out)])
    assert rc == 0
    rows = {r["language"]: r for r in json.loads((out / "fertility.json").read_text())["rows"]}
    assert set(rows) == set(LANGS)
    assert rows["zh"]["unit"] == rows["th"]["unit"] == "char" and rows["en"]["unit"] == "word"
    # a 50k English-centric BPE splits English least, and beats a 2k one on Latin script
    # (the 2k one has no byte fallback: it drops what its vocabulary lacks)
    assert min(rows, key=lambda lg: rows[lg]["neox"]["fertility"]) == "en"
    assert all(rows[lg]["neox"]["fertility"] * 2 < rows[lg]["tiny"]["fertility"] for lg in ("en", "de"))
    assert all(r["neox"]["bytes_per_token"] > 1 for r in rows.values())
    assert "| en | word |" in (out / "fertility.md").read_text()
    with Image.open(out / "fertility.png") as im:
        assert im.format == "PNG" and im.size[1] > 200
    # without a language column, lid.176 assigns the same languages
    rc = _cli(["tokenizer", "eval", "--input", str(udhr / "udhr.txt"),
               "--tokenizer", str(shared_dir / "tokenizers" / "tiny-2k.tokenizer.json"), "--out", str(tmp_path / "ev2")])
    found = {r["language"] for r in json.loads((tmp_path / "ev2" / "fertility.json").read_text())["rows"]}
    assert set(LANGS) <= found


def test_balanced_training_samples_by_temperature_and_records_the_card(udhr, tmp_path):
    out = tmp_path / "tok"
    rc = _cli(["tokenizer", "train", "--source-glob", str(udhr / "udhr.jsonl"), "--vocab-size", "600",
               "--balance", "language", "--lang-key", "language", "--alpha", "0.0", "--max-bytes", "200000",
               "--out", str(out), "--eval-input", str(udhr / "udhr.jsonl"), "--eval-lang-key", "language"])
    assert rc == 0
    meta = json.loads((out / "tokenizer.meta.json").read_text())
    sample = meta["trained_on"]["balance"]["languages"]
    assert set(sample) == set(LANGS)
    # alpha 0: every language the same share of the budget, small ones repeated
    assert all(abs(v["p"] - 0.2) < 1e-6 for v in sample.values())
    assert all(40_000 <= v["sampled_bytes"] < 40_000 + 3_000 for v in sample.values())
    assert any(v["passes"] > 1 for v in sample.values())
    assert {r["language"] for r in meta["fertility"]["rows"]} == set(LANGS)


def test_letters_marks_pre_tokenizer_keeps_indic_words_whole(shared_dir, tmp_path):
    """GPT-2's pattern cuts a Devanagari word at each vowel sign; letters+marks does not,
    so BPE can learn whole Hindi words (lower fertility at the same vocabulary) and the
    text still round-trips byte for byte."""
    from stages.tokenize.eval import evaluate, load_tokenizer
    from stages.tokenize.train import TrainConfig, train_tokenizer

    with zipfile.ZipFile(shared_dir / "corpora" / "nltk" / "udhr2.zip") as z:
        hi = [p for p in z.read("udhr2/hin.txt").decode("utf-8").split("\n") if p.strip()]
        en = [p for p in z.read("udhr2/eng.txt").decode("utf-8").split("\n") if p.strip()]
    fert = {}
    for name in ("gpt2", "letters+marks"):
        out = tmp_path / name
        train_tokenizer(hi + en, out, config=TrainConfig(vocab_size=1500, pre_tokenizer=name))
        tok = load_tokenizer(out)
        assert tok.decode(tok.encode(hi[5]).ids) == hi[5]
        fert[name] = evaluate([("hi", t) for t in hi], [tok])["hi"].fertility(0)
    assert fert["letters+marks"] < 0.8 * fert["gpt2"], fert
    meta = json.loads((tmp_path / "letters+marks" / "tokenizer.meta.json").read_text())
    assert meta["pre_tokenizer"] == "letters+marks"
