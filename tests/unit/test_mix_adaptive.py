"""The mix's ``adaptive:`` policy without a trainer: a weight update is a new segment of the
plan at the cursor (what came before is untouched, what follows reads the new weights), the
loader state carries the history so a fresh loader resumes between two updates reading
exactly what the uninterrupted loader read, the update rules (direction, floors and
ceilings, the grid), and the mix manifest mistakes that are refused."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import write_text_sources

from datapipe.errors import SpecError
from trainer_bridge.adaptive import AdaptiveSpec, history_entry, next_weights
from trainer_bridge.loader import LoaderConfig, MixLoader
from trainer_bridge.mix import load_mix, plan_mix, resolve_mix

SEQ, G = 32, 8
NAMES = ("wiki", "books", "news")


@pytest.fixture(scope="module")
def shards(shared_dir, tmp_path_factory) -> dict[str, Path]:
    return write_text_sources(shared_dir, tmp_path_factory.mktemp("adaptive") / "shards", max_bytes=30_000,
                              shard_tokens=2048)


def write_adaptive(path: Path, shards: dict[str, Path], adaptive: dict, **extra) -> Path:
    doc = {"name": path.stem, "seq_len": SEQ, "token_budget": SEQ * 800, "seed": 7, "max_epochs": 1000,
           "warn_epochs": 1000,
           "sources": [{"manifest": os.path.relpath(shards[s], path.parent), "weight": w}
                       for s, w in zip(NAMES, (0.5, 0.3, 0.2))],
           "adaptive": adaptive, **extra}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _loader(mix: Path) -> MixLoader:
    return MixLoader(resolve_mix(mix), LoaderConfig(global_batch=G, prefetch=3))


def _entry(loader: MixLoader, step: int, units: tuple[int, ...]) -> dict:
    return history_entry(step=step, at=loader.samples_committed, names=NAMES, units=units, grid=1000,
                         losses={"wiki": 3.0, "books": 4.0, "news": 5.0})


def test_update_is_a_segment_at_the_cursor_and_a_resume_between_updates_reads_the_same(shards, tmp_path):
    mix = write_adaptive(tmp_path / "a.yaml", shards, {"every": 4, "signal": "train"})
    static = _loader(mix)
    before = [next(static)["input_ids"].numpy().copy() for _ in range(12)]

    run = _loader(mix)
    got, states = [], {}
    for step in range(1, 25):   # updates after steps 4 and 8 (news up, then wiki up); a stop after step 6
        got.append(next(run)["input_ids"].numpy().copy())
        if step == 4:
            run.apply_update(_entry(run, 4, (200, 200, 600)))
        if step == 8:
            run.apply_update(_entry(run, 8, (700, 100, 200)))
        if step == 6:
            states[6] = run.state_dict()
    # the steps before the first update read what the static mix reads; the next ones do not
    assert all(np.array_equal(a, b) for a, b in zip(got[:4], before[:4]))
    assert not all(np.array_equal(a, b) for a, b in zip(got[4:8], before[4:8]))
    # draws follow the new weights from the update's sample on (within a sample or so)
    plan = run.plan
    c4, c8, c24 = plan.counts_at(4 * G), plan.counts_at(8 * G), plan.counts_at(24 * G)
    assert all(abs((b - a) - 32 * w) <= 1 for a, b, w in zip(c4, c8, (0.2, 0.2, 0.6)))
    assert abs((c24[0] - c8[0]) - 0.7 * 16 * G) <= 1
    assert [h["at"] for h in plan.history] == [4 * G, 8 * G]

    # a fresh loader (another process, another dp size) resumed between the two updates
    # serves the same samples: the history it loads, then the update the policy applies at step 8
    resumed = _loader(mix)
    resumed.load_state_dict(states[6])
    assert [h["step"] for h in resumed.plan.history] == [4]
    tail = []
    for step in range(7, 25):
        tail.append(next(resumed)["input_ids"].numpy().copy())
        if step == 8:
            resumed.apply_update(_entry(resumed, 8, (700, 100, 200)))
    assert all(np.array_equal(a, b) for a, b in zip(tail, got[6:]))
    two = MixLoader(resolve_mix(mix), LoaderConfig(global_batch=G, rank=1, world_size=2))
    two.load_state_dict(states[6])   # rank 1 of dp=2 gets the second half of every global batch
    assert np.array_equal(next(two)["input_ids"].numpy(), got[6][G // 2:])


def test_rules_move_weights_toward_the_losses_within_bounds_on_the_grid():
    names, static, start = ["a", "b", "c"], [0.5, 0.3, 0.2], [500, 300, 200]
    losses = {"a": 2.0, "b": 3.0, "c": 4.0}
    eg = next_weights(AdaptiveSpec(every=1, eta=1.0, smoothing=0.0), names, start, static, losses)
    assert sum(eg) == 1000 and eg[2] > 200 and eg[0] < 500   # the highest loss is read more
    assert eg == next_weights(AdaptiveSpec(every=1, eta=1.0, smoothing=0.0), names, start, static, losses)
    bounded = next_weights(AdaptiveSpec(every=1, eta=5.0, smoothing=0.0, floors={"a": 0.3}, ceilings={"c": 0.4}),
                           names, start, static, losses)
    assert sum(bounded) == 1000 and bounded[0] >= 300 and bounded[2] <= 400
    # DoReMi's excess: only where the run trails the reference; behind on b only -> b up
    ex = next_weights(AdaptiveSpec(every=1, rule="excess_loss", reference={"a": 2.5, "b": 2.0, "c": 4.5},
                                   smoothing=0.0), names, start, static, losses)
    assert ex[1] > 300 and ex[0] < 500 and ex[2] < 200 and sum(ex) == 1000
    # a source without a loss in the window keeps its relative size; every source keeps a unit
    tiny = next_weights(AdaptiveSpec(every=1, eta=50.0, smoothing=0.0), names, start, static, {"a": 1.0, "c": 9.0})
    assert min(tiny) >= 1 and sum(tiny) == 1000


@pytest.mark.parametrize("adaptive, extra, says", [
    ({"every": 4}, {}, "signal validation needs a validation split"),
    ({"every": 0, "signal": "train"}, {}, "every 0 must be an integer >= 1"),
    ({"every": 4, "signal": "train", "rule": "excess_loss"}, {}, "excess_loss needs reference"),
    ({"every": 4, "signal": "train", "floors": {"wikii": 0.1}}, {}, "floors names unknown source(s) ['wikii']"),
    ({"every": 4, "signal": "train", "floors": {"wiki": 0.6, "books": 0.6}}, {}, "floors sum to 1.2"),
    ({"every": 4, "signal": "train"}, {"schedule": [{"name": "x", "weights": {"wiki": 1}}]}, "has a schedule"),
])
def test_mistakes_are_refused_naming_the_fix(shards, tmp_path, adaptive, extra, says):
    mix = write_adaptive(tmp_path / "bad.yaml", shards, adaptive, **extra)
    if "schedule" in extra:
        doc = yaml.safe_load(mix.read_text())
        for s in doc["sources"]:
            s.pop("weight")
        mix.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError) as e:
        resolve_mix(load_mix(mix))
    assert says in str(e.value)


def test_mix_plot_draws_the_weights_as_they_moved(shards, tmp_path):
    import json

    from PIL import Image

    from trainer_bridge.mix import main as mix_main

    mix = write_adaptive(tmp_path / "p.yaml", shards, {"every": 4, "signal": "train"})
    loader = _loader(mix)
    rows = []
    for step in range(1, 13):
        next(loader)
        row = {"step": step, "samples": [(step - 1) * G, step * G], "loss_by_source": {"wiki": 5.0, "books": 5.5}}
        if step in (4, 8):
            row["mix_update"] = _entry(loader, step, (200, 200, 600) if step == 4 else (700, 100, 200))
            loader.apply_update(row["mix_update"])
        rows.append(row)
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert mix_main(["plot", str(mix), "-o", str(tmp_path / "static.png")]) == 0
    assert mix_main(["plot", str(mix), "-o", str(tmp_path / "moved.png"), "--metrics", str(metrics)]) == 0
    static, moved = (np.asarray(Image.open(tmp_path / f"{n}.png").convert("RGB"))[:300] for n in ("static", "moved"))
    assert not np.array_equal(static, moved)    # the weight panel steps at the updates


def test_an_edited_policy_resumes_with_the_history_so_far(shards, tmp_path):
    mix = write_adaptive(tmp_path / "e.yaml", shards, {"every": 4, "signal": "train", "eta": 1.0})
    run = _loader(mix)
    for step in range(1, 7):
        next(run)
        if step == 4:
            run.apply_update(_entry(run, 4, (200, 200, 600)))
    state = run.state_dict()
    write_adaptive(mix, shards, {"every": 4, "signal": "train", "eta": 3.0})   # the user edits eta mid-run
    assert "adaptive: every 4 steps the weights move by exp_gradient (eta 3" in plan_mix(mix).format()
    resumed = _loader(mix)
    assert resumed.plan.plan_hash != run.plan.plan_hash
    resumed.load_state_dict(state)
    assert [c["at"] for c in resumed.mix_changes] == [6 * G] and [h["step"] for h in resumed.plan.history] == [4]
    assert np.array_equal(next(resumed)["input_ids"].numpy(), next(run)["input_ids"].numpy())


def test_updates_keep_every_source_within_max_epochs(shards, tmp_path):
    from trainer_bridge.adaptive import AdaptivePolicy

    mix = write_adaptive(tmp_path / "m.yaml", shards, {"every": 4, "signal": "train", "eta": 50.0, "smoothing": 0.0})
    doc = yaml.safe_load(mix.read_text())
    doc["max_epochs"], doc["warn_epochs"], doc["token_budget"] = 3, 3, SEQ * 3000   # static: 1.9 epochs at most
    mix.write_text(yaml.safe_dump(doc))
    loader = _loader(mix)
    policy = AdaptivePolicy(loader.plan, "cpu")
    for _ in range(4):
        next(loader)
    # news has by far the highest loss: eta 50 would give it nearly everything, max_epochs caps it
    loader.adaptive_acc = {"sum": [3.0, 3.0, 9.0], "count": [1.0, 1.0, 1.0]}
    entry = policy.update(4, loader, None)
    plan = loader.plan
    end = plan.counts_at(plan.total_samples)
    assert entry["units"]["news"] < 990
    assert all(c <= 3 * nw + 2 for c, nw in zip(end, plan.n_windows)), (end, plan.n_windows)
