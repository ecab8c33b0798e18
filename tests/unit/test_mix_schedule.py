"""Mixes over time: phases by token count with linear transitions, checked sample by sample
against an independent computation of each phase's shares; resume in every phase on any
data-parallel size; a mid-run reweight that keeps the trained prefix, and the edits that
would not, refused; the validation tail; per-sample source ids; the plot."""

from __future__ import annotations

import argparse
import os
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import write_text_sources

from datapipe.errors import SpecError
from trainer_bridge.evaluate import ValidationSet
from trainer_bridge.loader import LoaderConfig, MixLoader
from trainer_bridge.mix import add_cli, plan_mix, resolve_mix

SEQ = 32
MAIN, RAMP = 300, 200                      # samples: main phase, then the anneal's transition
W0 = {"wiki": 0.5, "books": 0.3, "news": 0.2}
W1 = {"wiki": 0.1, "books": 0.9}           # news anneals out


@pytest.fixture(scope="module")
def shards(shared_dir, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sched")
    return write_text_sources(shared_dir, d / "shards", max_bytes=30_000, shard_tokens=2048)


def write_sched(path: Path, shards: dict[str, Path], phases: list[dict], *, budget: int = 800, seed: int = 1234,
                validation: int | None = None, sources: list[str] | None = None) -> Path:
    doc = {"name": path.stem, "seq_len": SEQ, "token_budget": SEQ * budget, "seed": seed, "max_epochs": 1000,
           "warn_epochs": 1000,
           "sources": [{"manifest": os.path.relpath(shards[s], path.parent)} for s in (sources or list(shards))],
           "schedule": phases}
    if validation:
        doc["validation"] = {"tokens": validation}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def anneal(main_tokens: int = MAIN * SEQ + 5) -> list[dict]:
    return [{"name": "main", "tokens": main_tokens, "weights": W0},
            {"name": "anneal", "transition": RAMP * SEQ, "weights": W1}]


def ideal(n: int, names: list[str]) -> list[Fraction]:
    """Expected draws per source among samples [0, n), straight from the schedule's numbers:
    constant weights, then weights moving linearly (lambda_i = (i + 1/2) / RAMP), then constant."""
    w0 = [Fraction(str(W0.get(s, 0))) for s in names]
    w1 = [Fraction(str(W1.get(s, 0))) for s in names]
    w1 = [w / sum(w1) for w in w1]
    a = min(n, MAIN)
    out = [a * w for w in w0]
    m = min(max(0, n - MAIN), RAMP)
    lam = Fraction(m * m, 2 * RAMP)        # sum of lambda_i over the first m ramp samples
    out = [o + (m - lam) * x + lam * y for o, x, y in zip(out, w0, w1)]
    rest = max(0, n - MAIN - RAMP)
    return [o + rest * y for o, y in zip(out, w1)]


def test_two_phase_anneal_sample_by_sample(shards, tmp_path):
    plan = resolve_mix(write_sched(tmp_path / "a.yaml", shards, anneal()))
    names = list(plan.names)
    N = 800
    src, win = plan.locate(0, N)
    counts = np.zeros(len(names), dtype=np.int64)
    start_of = {0: np.zeros(3), MAIN: None, MAIN + RAMP: None}
    for n in range(N + 1):
        if n in start_of and n:
            start_of[n] = counts.copy()
        want = ideal(n, names)
        if n <= MAIN:       # phase 1: within a sample of its weights at every prefix
            dev = [abs(c - float(w)) for c, w in zip(counts, want)]
            assert max(dev) <= 1.0, (n, counts, want)
        else:               # transition and after: the shares since the phase start, within ~2 samples
            base = ideal(MAIN, names)
            dev = [abs((c - s0) - float(w - b)) for c, s0, w, b in zip(counts, start_of[MAIN], want, base)]
            assert max(dev) <= 2.0, (n, counts, want)
            if n >= MAIN + RAMP:  # the constant tail: within a sample of W1 since its start
                b2 = ideal(MAIN + RAMP, names)
                dev = [abs((c - s0) - float(w - b)) for c, s0, w, b in zip(counts, start_of[MAIN + RAMP], want, b2)]
                assert max(dev) <= 1.0, (n, counts, want)
        if n < N:
            counts[src[n]] += 1
    news = names.index("news")
    assert news not in src[MAIN + RAMP:].tolist() and news in src[MAIN:MAIN + RAMP].tolist()
    assert plan.counts_at(N) == counts.tolist()
    # a source's draws continue across phases: every epoch of its windows is a permutation
    for s, name in enumerate(names):
        wins = win[src == s]
        nw = plan.n_windows[s]
        for e in range(0, len(wins), nw):
            chunk = wins[e:e + nw]
            assert len(set(chunk.tolist())) == len(chunk), name
    # random access and reads across segment boundaries agree with the run
    for n in random.Random(1).sample(range(N), 40) + [MAIN - 1, MAIN, MAIN + RAMP - 1, MAIN + RAMP]:
        assert plan.sample(n) == (names[src[n]], int(win[n]))
    rows = plan.read(MAIN - 7, RAMP + 14)
    one = np.concatenate([plan.read(n, 1) for n in range(MAIN - 7, MAIN + RAMP + 7)])
    assert np.array_equal(rows, one)


def test_plan_report_per_phase_and_the_hash_covers_the_schedule(shards, tmp_path):
    rep = plan_mix(write_sched(tmp_path / "a.yaml", shards, anneal()))
    assert [p.name for p in rep.phases] == ["main", "anneal"]
    main, ann = rep.phases
    assert (main.start, main.end, ann.start, ann.transition_end, ann.end) == (0, MAIN, MAIN, MAIN + RAMP, 800)
    assert sum(r.samples for r in main.rows) == MAIN and sum(r.samples for r in ann.rows) == 500
    by = {r.name: r for r in ann.rows}
    assert by["news"].weight == 0 and by["news"].weight_from == Fraction(1, 5)
    assert by["books"].epochs_total == pytest.approx(
        sum(p_r.samples for p in rep.phases for p_r in p.rows if p_r.name == "books") / by["books"].windows)
    text = rep.format()
    assert "phase main: samples [0, 300)" in text and "transition over samples [300, 500)" in text
    assert "0.200->0.000" in text  # news fades out
    short = plan_mix(write_sched(tmp_path / "s.yaml", shards, anneal(), budget=400))
    assert any("transition ends at sample 500, after the end of the token budget" in w
               for w in short.phases[1].warnings)

    base = rep.plan_hash
    same = lambda **kw: plan_mix(write_sched(tmp_path / "b.yaml", shards, **kw)).plan_hash
    assert same(phases=anneal(), budget=1600) == base  # the budget is not in the hash
    assert same(phases=anneal(MAIN * SEQ + 64)) != base
    longer = anneal()
    longer[1]["transition"] = (RAMP + 1) * SEQ
    assert same(phases=longer) != base
    reweighted = anneal()
    reweighted[1]["weights"] = {"wiki": 0.2, "books": 0.8}
    assert same(phases=reweighted) != base


def test_schedule_errors_say_what_to_change(shards, tmp_path):
    bad = anneal()
    bad[1]["weights"] = {"wiki": 1, "bookz": 1}
    with pytest.raises(SpecError, match=r"unknown source\(s\) \['bookz'\]; the mix's sources are "
                                        r"\['wiki', 'books', 'news'\]"):
        plan_mix(write_sched(tmp_path / "a.yaml", shards, bad))
    with pytest.raises(SpecError, match=r"the last phase \('anneal'\) runs to the end .* remove its tokens"):
        plan_mix(write_sched(tmp_path / "b.yaml", shards, [anneal()[0], {**anneal()[1], "tokens": RAMP * SEQ * 2}]))
    with pytest.raises(SpecError, match=r"schedule\[0\] \('main'\) needs tokens"):
        plan_mix(write_sched(tmp_path / "c.yaml", shards, [{"name": "main", "weights": W0}, anneal()[1]]))
    p = tmp_path / "d.yaml"
    write_sched(p, shards, anneal())
    doc = yaml.safe_load(p.read_text())
    doc["sources"][0]["weight"] = 0.5
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match=r"sources\[0\] has a weight, but the mix has a schedule"):
        plan_mix(p)


def _global(plan, state, *, world, steps, G=16):
    """Global batches (ranks' rows concatenated) and the end state."""
    parts = []
    for rank in range(world):
        with MixLoader(plan, LoaderConfig(global_batch=G, rank=rank, world_size=world, verify=False)) as ld:
            ld.load_state_dict(state)
            parts.append([next(ld) for _ in range(steps)])
            end = ld.state_dict()
    return [np.concatenate([p[t]["input_ids"].numpy() for p in parts]) for t in range(steps)], \
        [np.concatenate([p[t]["source"].numpy() for p in parts]) for t in range(steps)], end


def test_resume_in_each_phase_and_in_the_transition_on_any_world_size(shards, tmp_path):
    plan = resolve_mix(write_sched(tmp_path / "a.yaml", shards, anneal()))
    G = 16
    ref, ref_src, _ = _global(plan, {"plan_hash": plan.plan_hash, "samples_committed": 0}, world=1, steps=48)
    assert np.array_equal(np.concatenate(ref_src), plan.locate(0, 48 * G)[0])  # each row's source id
    for step, world in [(5, 2), (18, 4), (19, 1), (25, 8), (31, 2), (40, 4)]:  # main; transition x3; anneal
        state = {"plan_hash": plan.plan_hash, "samples_committed": step * G}
        got, _, end = _global(plan, state, world=world, steps=5)
        for t in range(5):
            assert np.array_equal(got[t], ref[step + t]), (step, world, t)
        assert end["samples_committed"] == (step + 5) * G


def _reweighted(at: int) -> list[dict]:
    """The anneal schedule edited at sample ``at`` (inside main): a news-heavy phase until the anneal."""
    return [{"name": "main", "tokens": at * SEQ, "weights": W0},
            {"name": "more-news", "tokens": (MAIN - at) * SEQ + 5, "weights": {"news": 0.6, "wiki": 0.4}},
            {"name": "anneal", "transition": RAMP * SEQ, "weights": W1}]


def test_mid_run_reweight_keeps_the_prefix_and_changes_only_what_follows(shards, tmp_path):
    G, at = 16, 160
    old = resolve_mix(write_sched(tmp_path / "a.yaml", shards, anneal()))
    new = resolve_mix(write_sched(tmp_path / "b.yaml", shards, _reweighted(at)))
    assert new.plan_hash != old.plan_hash
    with MixLoader(old, LoaderConfig(global_batch=G, verify=False)) as ld:
        for _ in range(at // G):
            next(ld)
        state = ld.state_dict()
    with MixLoader(new, LoaderConfig(global_batch=G, verify=False)) as ld:
        ld.load_state_dict(state)
        assert ld.mix_changes == [{"at": at, "from": old.plan_hash, "to": new.plan_hash}]
        after = next(ld)
        assert ld.state_dict()["mix_changes"] and ld.state_dict()["plan_hash"] == new.plan_hash
    assert np.array_equal(new.read(0, at), old.read(0, at))                     # the trained prefix
    assert np.array_equal(after["input_ids"].numpy(), new.read(at, G)[:, :-1])  # the new weights from here on
    src_new, src_old = new.locate(at, MAIN - at)[0], old.locate(at, MAIN - at)[0]
    assert not np.array_equal(src_new, src_old)
    names = list(new.names)
    assert abs(int((src_new == names.index("news")).sum()) - 0.6 * (MAIN - at)) <= 1
    assert int((src_new == names.index("books")).sum()) == 0
    # the anneal after the edit has the same weights: the same source sequence (other windows)
    assert np.array_equal(new.locate(MAIN + RAMP, 100)[0], old.locate(MAIN + RAMP, 100)[0])


@pytest.mark.parametrize("edit, cursor, message", [
    ("main ends early", 160, r"phase 'main' now ends at sample 150 \(token 4,800\), before the checkpoint's cursor 160 "
                             r".*Make it last at least 5,120 tokens"),
    ("main reweighted", 160, r"phase 'main': its weights changed, but samples \[0, 160\) were trained"),
    ("transition edited", 400, r"transition starting at sample 300 .* cannot change once it has begun"),
    ("seed", 160, r"seed 1234 -> 7"),
    ("source removed", 160, r"source 'news' was removed or moved"),
    ("validation", 160, r"source '\w+': its training tokens \(the validation split\) changed"),
])
def test_edits_that_would_change_trained_samples_are_refused(shards, tmp_path, edit, cursor, message):
    old = resolve_mix(write_sched(tmp_path / "a.yaml", shards, anneal(), validation=300))
    kw: dict = {"validation": 300}
    phases = anneal()
    if edit == "main ends early":
        phases = _reweighted(150)
    elif edit == "main reweighted":
        phases[0]["weights"] = {"wiki": 0.4, "books": 0.4, "news": 0.2}
    elif edit == "transition edited":
        phases[1]["weights"] = {"wiki": 0.3, "books": 0.7}
    elif edit == "seed":
        kw["seed"] = 7
    elif edit == "source removed":
        phases = [{**p, "weights": {k: v for k, v in p["weights"].items() if k != "news"}} for p in phases]
        kw["sources"] = ["wiki", "books"]
    elif edit == "validation":
        kw["validation"] = 600
    new = resolve_mix(write_sched(tmp_path / "b.yaml", shards, phases, **kw))
    state = {**MixLoader(old, LoaderConfig(global_batch=16, verify=False)).state_dict(), "samples_committed": cursor}
    with pytest.raises(SpecError, match="changes samples this checkpoint already trained on .*" + message):
        MixLoader(new, LoaderConfig(global_batch=16, verify=False)).load_state_dict(state)


def test_validation_tail_is_held_out_at_plan_time(shards, tmp_path):
    plan = resolve_mix(write_sched(tmp_path / "a.yaml", shards, anneal(), validation=300))
    full = resolve_mix(write_sched(tmp_path / "b.yaml", shards, anneal()))
    assert plan.plan_hash != full.plan_hash
    vset = ValidationSet(plan)
    for s, st in enumerate(plan.streams):
        cut = plan.train_tokens[s]
        tokens = st.read(0, st.n_tokens)
        assert tokens[cut - 1] == plan.eos_id                       # the tail starts at a document start
        assert st.n_tokens - cut >= 300                              # at least the asked tokens ...
        next_doc = cut + int(np.flatnonzero(tokens[cut:] == plan.eos_id)[0]) + 1
        assert st.n_tokens - next_doc < 300                          # ... in as few documents as that takes
        assert plan.n_windows[s] * SEQ + 1 <= cut                    # no training window reaches the tail
        mine = vset.starts[vset.source == s]
        assert len(mine) == (st.n_tokens - cut - 1) // SEQ and mine.min() == cut
    # training never reads held-out tokens: every served window lies before its source's cut
    src, win = plan.locate(0, 800)
    assert all(w * SEQ + SEQ + 1 <= plan.train_tokens[s] for s, w in zip(src.tolist(), win.tolist()))
    assert any(w * SEQ + SEQ + 1 > plan.train_tokens[s] for s, w in zip(*[a.tolist() for a in full.locate(0, 4000)]))
    rep = plan.report()
    assert [v[0] for v in rep.validation] == list(plan.names) and "held out" in rep.format()


def test_mix_plot_cli_writes_a_png(shards, tmp_path):
    from PIL import Image

    mix = write_sched(tmp_path / "a.yaml", shards, anneal())
    metrics = tmp_path / "m.jsonl"
    metrics.write_text("".join(
        f'{{"step": {s}, "samples": [{16 * (s - 1)}, {16 * s}], "loss_by_source": {{"wiki": {5 - s / 10}, '
        f'"books": {6 - s / 9}}}, "val_loss": {{"wiki": {5.2 - s / 10}}}}}\n' for s in range(1, 40)))
    parser = argparse.ArgumentParser()
    add_cli(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "plot.png"
    args = parser.parse_args(["mix", "plot", str(mix), "-o", str(out), "--metrics", str(metrics)])
    assert args.func(args) == 0
    img = Image.open(out).convert("RGB")
    assert img.size[0] == 960 and img.size[1] > 500      # two panels
    colors = {c for _, c in img.getcolors(1 << 20)}
    assert (0x1f, 0x77, 0xb4) in colors and (0xd6, 0x27, 0x28) in colors  # the first two sources' lines
