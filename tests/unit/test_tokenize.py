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


def test_a_tokenizer_folder_is_kept_beside_the_shards_so_inspect_decodes(shared_dir, tmp_path):
    """Issue #29: a GPT-2 folder tokenizer was not copied beside the shards (the manifest
    said "tokenizer"), so `shards inspect` could not decode; now a tokenizer.json with the
    same fingerprint is written there, as for a file."""
    from datapipe.shards import inspect_shards, verify_shards
    from datapipe.sink import SinkSplit
    from stages.tokenize.identity import load_for_decoding
    from stages.tokenize.shard_sink import ShardSink
    from stages.tokenize.writer import ShardOptions

    folder = shared_dir / "tokenizers" / "gpt2"
    stage = Tokenize(Tokenize.Config(tokenizer=str(folder)))
    text = "The tokenizer beside the shards decodes this sentence."
    batch, _ = stage.process(make_batch(source="s", ids=["s/0"], texts=[text]))
    sink = ShardSink(tokenizer=str(folder), eos=None, options=ShardOptions(shard_tokens=1024), lineage={})
    sink.prepare()
    staging = tmp_path / "staging"
    split = SinkSplit(source="s", index=0, folder=str(staging / "shards" / "s"), work_dir=str(staging / "work" / "s"))
    writer = sink.open(split)
    writer.add(batch)
    result = sink.finish(staging=str(staging), storage=None, sources=["s"], splits=[(split, writer.close())],
                         documents=[{"source": "s", "rows": 1, "num_tokens": batch["num_tokens"][0].as_py()}])
    assert result.problems == []
    shards = staging / "shards" / "s"
    assert (shards / "tokenizer.json").is_file()
    assert load_for_decoding(str(shards / "tokenizer.json"))[1] == tokenizer_info(folder).fingerprint
    assert verify_shards(shards) == []
    rep = inspect_shards(shards, load=load_for_decoding)["sources"]["s"]
    assert rep["excerpt_note"] == "" and rep["excerpt"] == text + "<|endoftext|>"
