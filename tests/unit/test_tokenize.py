"""The tokenize stage: ids equal to the tokenizer's own, EOS excluded, drops untouched."""

from __future__ import annotations

import pytest

from datapipe.errors import JobError, SpecError
from datapipe.schema import make_batch
from stages.tokenize.identity import load_tokenizer, tokenizer_info
from stages.tokenize import Tokenize


def test_tokens_match_the_tokenizer_and_skip_dropped_rows(shared_dir):
    path = shared_dir / "tokenizers" / "gpt-neox-20b.tokenizer.json"
    stage = Tokenize(Tokenize.Config(tokenizer=str(path)))
    texts = ["Hello world.", "", None, "dropped earlier", "Ünïcödé <|endoftext|> text\n\nsecond paragraph"]
    batch = make_batch(source="s", ids=[f"s/{i}" for i in range(5)], texts=texts,
                       reject_reasons=[None, None, None, "length:too_short", None])
    out, stats = stage.process(batch)
    tok = load_tokenizer(path)
    got = out.column("tokens").to_pylist()
    n = out.column("num_tokens").to_pylist()
    for i in (0, 4):
        assert got[i] == tok.encode(texts[i], add_special_tokens=False).ids and n[i] == len(got[i])
    assert got[1] == [] and got[2] == [] and n[1] == n[2] == 0
    assert got[3] is None and n[3] is None  # dropped rows are not tokenized
    assert tokenizer_info(path).eos_id not in got[4]
    assert stats["s"].docs_in == 4 and stats["s"].docs_out == 4


def test_config_errors_and_fingerprint_pin(shared_dir, tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        Tokenize.Config(tokenizer=str(tmp_path / "missing.json"))
    path = str(shared_dir / "tokenizers" / "gpt2")
    stage = Tokenize(Tokenize.Config(tokenizer=path, fingerprint="blake2b-256:" + "0" * 64))
    with pytest.raises(JobError, match="fingerprint"):
        stage.setup()
    ok = Tokenize(Tokenize.Config(tokenizer=path, fingerprint=tokenizer_info(path).fingerprint, eos="<|endoftext|>"))
    ok.setup()
    assert ok.eos_id == 50256
