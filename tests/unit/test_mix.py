"""Mix manifests: loading, validation errors that say what to change, the plan report,
`mix new` / `mix plan`, and the plan hash (what it covers and what it does not)."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
import yaml
from shard_helper import write_mix, write_source, write_text_sources

from datapipe.errors import SpecError
from trainer_bridge.mix import add_cli, load_mix, new_mix, plan_mix

SEQ = 64


@pytest.fixture(scope="module")
def shards(shared_dir, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("mixshards")
    return write_text_sources(shared_dir, d / "shards", max_bytes=20_000, shard_tokens=4096)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="datapipe")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_plan_report_counts(shards, tmp_path):
    budget = SEQ * 900
    mix = write_mix(tmp_path / "m.yaml", shards, {"wiki": 0.5, "books": 0.3, "news": 0.2}, seq_len=SEQ,
                    token_budget=budget)
    rep = plan_mix(mix)
    by = {r.name: r for r in rep.rows}
    assert set(by) == {"wiki", "books", "news"} and rep.samples == 900
    assert sum(r.samples for r in rep.rows) == 900
    assert [by[s].samples for s in ("wiki", "books", "news")] == [450, 270, 180]
    for name, path in shards.items():
        tokens = json.loads(path.read_text())["totals"]["tokens"]
        r = by[name]
        assert r.tokens_available == tokens and r.windows == (tokens - 1) // SEQ
        assert r.tokens_drawn == r.samples * SEQ and r.epochs == pytest.approx(r.samples / r.windows)
    text = rep.format()
    assert "tokens available" in text and rep.plan_hash in text and "wiki" in text


def test_warn_and_max_epochs(shards, tmp_path):
    windows = {n: (json.loads(p.read_text())["totals"]["tokens"] - 1) // SEQ for n, p in shards.items()}
    w = {"wiki": 0.5, "books": 0.3, "news": 0.2}
    scarce = min(w, key=lambda n: windows[n] / w[n])
    budget_samples = int(windows[scarce] * 3 / w[scarce])  # the scarcest source is read ~3 epochs
    mix = write_mix(tmp_path / "m.yaml", shards, {"wiki": 0.5, "books": 0.3, "news": 0.2}, seq_len=SEQ,
                    token_budget=SEQ * budget_samples, max_epochs=4, warn_epochs=2)
    rep = plan_mix(mix)
    assert any(f"'{scarce}'" in m and "warn_epochs" in m for m in rep.warnings)
    too_much = write_mix(tmp_path / "m2.yaml", shards, {"wiki": 0.5, "books": 0.3, "news": 0.2}, seq_len=SEQ,
                         token_budget=SEQ * budget_samples * 2, max_epochs=4, warn_epochs=2)
    with pytest.raises(SpecError, match=rf"exceeds max_epochs 4: (.*; )?{scarce} would be read .* Lower token_budget to about") as e:
        plan_mix(too_much)
    suggested = int(str(e.value).split("about ")[1].split(" ")[0].replace(",", ""))
    ok = write_mix(tmp_path / "m3.yaml", shards, {"wiki": 0.5, "books": 0.3, "news": 0.2}, seq_len=SEQ,
                   token_budget=suggested - 2 * SEQ, max_epochs=4, warn_epochs=2)
    assert max(r.epochs for r in plan_mix(ok).rows) <= 4  # the suggested budget does fit


def test_invalid_mixes_say_what_to_change(shards, tmp_path):
    with pytest.raises(SpecError, match=r"not found: sources\[1\].manifest .*nope.*datapipe run"):
        plan_mix(write_mix(tmp_path / "a.yaml", {"wiki": shards["wiki"], "x": tmp_path / "nope/manifest.json"},
                           {"wiki": 1, "x": 1}, seq_len=SEQ, token_budget=SEQ * 10))
    with pytest.raises(SpecError, match=r"weight -0.5 must be > 0"):
        plan_mix(write_mix(tmp_path / "b.yaml", shards, {"wiki": 1, "books": -0.5, "news": 1}, seq_len=SEQ,
                           token_budget=SEQ * 10))
    with pytest.raises(SpecError, match=r"weight 0 must be > 0"):
        plan_mix(write_mix(tmp_path / "c.yaml", shards, {"wiki": 1, "books": 0, "news": 1}, seq_len=SEQ,
                           token_budget=SEQ * 10))
    other = write_source(tmp_path / "other", "other", [[1, 2, 3]] * 100, eos_id=0, vocab_size=10, shard_tokens=64,
                         fingerprint="blake2b-256:another-tokenizer")
    with pytest.raises(SpecError, match=r"different tokenizers .*other: blake2b-256:another-tokenizer.*re-tokenise"):
        plan_mix(write_mix(tmp_path / "d.yaml", {"wiki": shards["wiki"], "other": other}, {"wiki": 1, "other": 1},
                           seq_len=SEQ, token_budget=SEQ * 10))
    bad = tmp_path / "e.yaml"
    bad.write_text(yaml.safe_dump({"name": "e", "seq_len": SEQ, "token_budget": 640, "weights": [1],
                                   "sources": []}))
    with pytest.raises(SpecError, match=r"e.yaml: unknown key 'weights' \(valid keys"):
        load_mix(bad)
    with pytest.raises(SpecError, match="below one sample"):
        plan_mix(write_mix(tmp_path / "f.yaml", shards, {"wiki": 1, "books": 1, "news": 1}, seq_len=SEQ,
                           token_budget=SEQ - 1))


def test_wrong_type_in_a_mix_names_file_entry_and_field(tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text(yaml.safe_dump({"name": "t", "seq_len": SEQ, "token_budget": SEQ * 10,
                                   "sources": [{"manifest": "a/manifest.json", "weight": 1},
                                               {"manifest": "b/manifest.json", "weight": "lots"}]}))
    with pytest.raises(SpecError, match=r"typo.yaml: sources\[1\]: key 'weight' must be float or null, got 'lots'"):
        load_mix(bad)
    bad.write_text(yaml.safe_dump({"name": "t", "seq_len": "64", "token_budget": SEQ * 10, "sources": []}))
    with pytest.raises(SpecError, match=r"typo.yaml: key 'seq_len' must be int, got '64'"):
        load_mix(bad)


def test_plan_hash_covers_the_sample_sequence_not_the_budget(shards, tmp_path):
    w = {"wiki": 0.5, "books": 0.3, "news": 0.2}
    base = plan_mix(write_mix(tmp_path / "a.yaml", shards, w, seq_len=SEQ, token_budget=SEQ * 100)).plan_hash
    assert plan_mix(write_mix(tmp_path / "b.yaml", shards, w, seq_len=SEQ, token_budget=SEQ * 300)).plan_hash == base
    assert plan_mix(write_mix(tmp_path / "c.yaml", shards, w, seq_len=SEQ, token_budget=SEQ * 100, seed=5)).plan_hash != base
    assert plan_mix(write_mix(tmp_path / "d.yaml", shards, {**w, "news": 0.3}, seq_len=SEQ,
                              token_budget=SEQ * 100)).plan_hash != base
    assert plan_mix(write_mix(tmp_path / "e.yaml", shards, w, seq_len=SEQ + 1, token_budget=SEQ * 100)).plan_hash != base
    # content-keyed: the same shards elsewhere give the same plan
    moved = {}
    for name, p in shards.items():
        shutil.copytree(p.parent, tmp_path / "moved" / name)
        moved[name] = tmp_path / "moved" / name / "manifest.json"
    assert plan_mix(write_mix(tmp_path / "f.yaml", moved, w, seq_len=SEQ, token_budget=SEQ * 100)).plan_hash == base


def test_mix_new_and_plan_cli(shards, tmp_path, capsys):
    out = tmp_path / "mixes" / "mine.yaml"
    args = ["mix", "new", f"{shards['wiki']}=0.6", f"{shards['books']}=0.4", "-o", str(out),
            "--seq-len", str(SEQ), "--token-budget", str(SEQ * 200), "--seed", "3"]
    assert _cli(args) == 0
    printed = capsys.readouterr().out
    raw = yaml.safe_load(out.read_text())
    assert raw["name"] == "mine" and raw["seq_len"] == SEQ and raw["seed"] == 3
    for s, p in zip(raw["sources"], [shards["wiki"], shards["books"]]):
        assert not Path(s["manifest"]).is_absolute() and (out.parent / s["manifest"]).resolve() == p.resolve()
    assert _cli(["mix", "plan", str(out)]) == 0
    plan_out = capsys.readouterr().out
    rep = plan_mix(out)
    assert rep.plan_hash in plan_out and rep.plan_hash in printed
    assert "wiki" in plan_out and "books" in plan_out and "epochs" in plan_out
    assert _cli(["mix", "plan", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 200
    # an invalid mix is never written, and plan exits 2 with the reason
    bad = tmp_path / "mixes" / "bad.yaml"
    assert _cli(["mix", "new", f"{shards['wiki']}=0", "-o", str(bad), "--seq-len", str(SEQ)]) == 2
    assert not bad.exists() and "must be > 0" in capsys.readouterr().err
    assert _cli(["mix", "plan", str(tmp_path / "missing.yaml")]) == 2


def test_new_mix_default_budget_reads_no_source_twice(shards, tmp_path):
    """Without a budget: the largest one at which no source is read more than once (#29:
    "all tokens" read the smaller source many epochs at equal weights)."""
    out = new_mix([shards["wiki"], shards["news"]], [1, 1], out=tmp_path / "x.yaml", seq_len=SEQ)
    spec = load_mix(out)
    windows = [(json.loads(shards[s].read_text())["totals"]["tokens"] - 1) // SEQ for s in ("wiki", "news")]
    assert spec.token_budget == 2 * min(windows) * SEQ        # equal weights: twice the smaller source
    assert max(r.epochs for r in plan_mix(out).rows) == 1.0


def test_sample_mix_file(repo_dir):
    spec = load_mix(repo_dir / "mixes" / "sample.yaml")
    assert spec.name == "sample" and spec.seq_len == 128
    names = [Path(s.manifest).parent.name for s in spec.sources]
    assert names == ["wiki", "news", "web", "books", "forum", "code"]
    assert all(s.manifest == f"../runs/sample/shards/{n}/manifest.json" for s, n in zip(spec.sources, names))
    assert sum(s.weight for s in spec.sources) == pytest.approx(1.0)


def test_validation_advice_is_a_fix_that_works(shared_dir, shards, tmp_path):
    """The validation split holds out whole documents: for a one-document source no
    ``validation.tokens`` can leave a sample on both sides, so the error says so instead
    of "lower validation.tokens"; for a source it fits at a lower value, the value it
    names resolves."""
    from shard_helper import tiny_tokenizer, write_source

    tok, eos, vocab, fp = tiny_tokenizer(shared_dir)
    play = (shared_dir / "corpora" / "books" / "tinyshakespeare.txt").read_text(encoding="utf-8")[:8000]
    one = write_source(tmp_path / "play", "play", [tok.encode(play).ids], eos_id=eos, vocab_size=vocab,
                       shard_tokens=4096, fingerprint=fp)

    def mix(name: str, sources: dict[str, Path], tokens: int) -> Path:
        path = write_mix(tmp_path / f"{name}.yaml", sources, {s: 1 for s in sources}, seq_len=SEQ,
                         token_budget=SEQ * 10)
        doc = yaml.safe_load(path.read_text())
        path.write_text(yaml.safe_dump({**doc, "validation": {"tokens": tokens}}, sort_keys=False))
        return path

    with pytest.raises(SpecError) as e:
        plan_mix(mix("one", {"wiki": shards["wiki"], "play": one}, 300))
    msg = str(e.value)
    assert "play (" in msg and "in 1 document)" in msg and "no validation.tokens helps" in msg
    assert "lower validation.tokens" not in msg and "wiki" not in msg
    wiki_tokens = json.loads(shards["wiki"].read_text())["totals"]["tokens"]
    with pytest.raises(SpecError, match=r"wiki \(.*lower validation.tokens to [\d,]+ or less") as e:
        plan_mix(mix("big", {"wiki": shards["wiki"]}, wiki_tokens - SEQ))
    most = int(str(e.value).split("lower validation.tokens to ")[1].split(" ")[0].replace(",", ""))
    assert SEQ < most < wiki_tokens - SEQ
    plan = plan_mix(mix("fixed", {"wiki": shards["wiki"]}, most))        # the advice works
    assert plan.validation[0][1] >= most
