"""``tokenizer train --preset code`` (issue 39): trained on real stdlib code, it round-trips
every file of real packages byte for byte, keeps indentation and whitespace runs as single
tokens, splits digits, reserves the FIM and repository sentinels as special tokens (recorded
in the shard manifest's tokenizer block), and never emits a sentinel for text that spells one."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from datapipe.errors import SpecError
from stages.tokenize.identity import SENTINEL_TOKENS, load_tokenizer, tokenizer_info
from stages.tokenize.train import TrainConfig, preset_config, train_tokenizer

SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.fixture(scope="module")
def code_tok(tmp_path_factory):
    """A 2,048-token code tokenizer trained on ~1.5 MB of the interpreter's stdlib."""
    texts, size = [], 0
    for f in sorted(STDLIB.glob("*.py")):
        t = f.read_text(encoding="utf-8", errors="replace")
        texts.append(t)
        size += len(t)
        if size > 1_500_000:
            break
    out = tmp_path_factory.mktemp("codetok")
    train_tokenizer(texts, out, config=preset_config("code", vocab_size=2048))
    return out


def test_every_file_of_real_packages_round_trips_byte_for_byte(code_tok):
    tok = load_tokenizer(code_tok)
    files = [f for pkg in ("click", "attr") for f in sorted((SITE / pkg).rglob("*"))
             if f.is_file() and "__pycache__" not in f.parts]
    assert len(files) > 30
    for f in files:
        data = f.read_bytes()
        # as shipped, with Windows line ends, and indented with tabs
        for variant in (data, data.replace(b"\n", b"\r\n"), data.replace(b"    ", b"\t")):
            ids = tok.encode(variant.decode("utf-8")).ids
            assert tok.decode(ids, skip_special_tokens=False).encode("utf-8") == variant, f
    # text that spells a sentinel is ordinary text: no sentinel id, and it comes back as written
    src = 'PROMPT = "<fim_prefix>def f(<fim_suffix>) <fim_middle><file_sep>"\n'
    ids = tok.encode(src).ids
    assert not set(ids) & {tok.token_to_id(t) for t in SENTINEL_TOKENS}
    assert tok.decode(ids, skip_special_tokens=False) == src


def test_whitespace_runs_are_tokens_and_digits_are_split(code_tok):
    tok = load_tokenizer(code_tok)

    def pieces(text):
        return [tok.decode([i]) for i in tok.encode(text).ids]

    # a newline with the next line's indentation, and indentation alone, are one token each
    assert "\n        " in pieces("if x:\n    for y in x:\n        return y\n")
    assert "\n    " in pieces("def f(x):\n    return x\n")
    assert pieces("x = (1 +\n" + " " * 8 + "2)")[5] == "\n" + " " * 8
    assert pieces("12345") == ["1", "2", "3", "4", "5"]
    assert pieces("x = 2048") == ["x", " =", " ", "2", "0", "4", "8"]


def test_sentinels_are_reserved_and_recorded_for_the_manifest(code_tok):
    info = tokenizer_info(code_tok)
    block = info.to_manifest()
    assert info.eos_id == 0 and info.eos_token == "<|endoftext|>"
    assert block["special"] == {t: i + 1 for i, t in enumerate(SENTINEL_TOKENS)}
    # a prose tokenizer has none: its manifests keep the block they always had
    assert "special" not in tokenizer_info(Path(__file__).resolve().parents[2] / "models/sample/tokenizer").to_manifest()
    with pytest.raises(SpecError, match="preset 'code' means pre_tokenizer 'code'"):
        TrainConfig(vocab_size=1024, preset="code")
    with pytest.raises(SpecError, match="leave --pre-tokenizer gpt2 out"):
        preset_config("code", vocab_size=1024, pre_tokenizer="gpt2")


def test_code_shards_record_sentinels_and_a_fim_mix_trains_on_them(code_tok, tmp_path):
    """The shard writer records the sentinels, a mix asks for FIM over those shards, and what
    the loader serves decodes to real code rewritten prefix-suffix-middle."""
    import numpy as np
    import yaml

    from stages.tokenize.writer import SourceShardWriter
    from trainer_bridge.loader import LoaderConfig, MixLoader
    from trainer_bridge.mix import resolve_mix

    tok = load_tokenizer(code_tok)
    info = tokenizer_info(code_tok)
    blocks = [b for f in sorted((SITE / "click").glob("*.py")) for b in f.read_text(encoding="utf-8").split("\n\n")
              if b.strip()]   # code blocks (functions, classes): several documents per window
    docs = [e.ids for e in tok.encode_batch(blocks)]
    w = SourceShardWriter(tmp_path / "shards" / "code", "code", tokenizer_info=info, shard_tokens=1 << 16, seed=1,
                          lineage={"job_hash": "test", "inputs": []})
    w.add(np.concatenate([np.asarray(d) for d in docs]), np.array([len(d) for d in docs]))
    manifest = w.finish()
    assert yaml.safe_load(manifest.read_text())["tokenizer"]["special"]["<fim_prefix>"] == 1
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump({"name": "fim", "seq_len": 256, "token_budget": 256 * 64, "seed": 3,
                                   "sources": [{"manifest": "shards/code/manifest.json", "weight": 1.0}],
                                   "fim": {"rate": 1.0, "spm_rate": 0.0}}))
    with MixLoader(resolve_mix(mix), LoaderConfig(global_batch=8)) as ld:
        rows = next(ld)["input_ids"].tolist()
    whole = [d for r in rows for d in tok.decode(r, skip_special_tokens=False).split("<|endoftext|>")[:-1] if d]
    assert whole   # documents that end inside a window: each one rewritten PSM (rate 1, spm_rate 0)
    for d in whole:
        assert d.startswith("<fim_prefix>") and d.index("<fim_suffix>") < d.index("<fim_middle>"), d[:200]
