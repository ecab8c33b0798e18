"""Recovery pieces that need no process group: skip ranges (math and loader), the metrics
rollback and the loss-spike report."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from shard_helper import write_mix, write_text_sources

from datapipe.errors import SpecError
from trainer_bridge import checkpoint
from trainer_bridge.loader import LoaderConfig, MixLoader
from trainer_bridge.mix import resolve_mix
from trainer_bridge.order import SkipRanges
from trainer_bridge.train import _SpikeWatch, load_config, truncate_metrics


def _served(ranges, lo: int, hi: int) -> list[int]:
    """Brute force: the samples of [lo, hi) outside every range."""
    return [n for n in range(lo, hi) if not any(a <= n < b for a, b in ranges)]


def test_skip_ranges_match_brute_force():
    rng = random.Random(0)
    for _ in range(300):
        ranges = [(a, a + rng.randint(1, 12)) for a in (rng.randrange(0, 80) for _ in range(rng.randint(0, 5)))]
        sk = SkipRanges(ranges)
        pos, count = rng.randrange(0, 90), rng.randint(0, 20)
        want = _served(ranges, pos, pos + 200)[:count]
        got = [n for a, k in sk.runs(pos, count) for n in range(a, a + k)]
        assert got == want
        assert sk.advance(pos, count) == (want[-1] + 1 if want else pos)
        assert sk.kept_between(pos, pos + 30) == len(_served(ranges, pos, pos + 30))
    assert SkipRanges([[10, 20], [15, 30], [30, 31], [0, 2]]).as_list() == [[0, 2], [10, 31]]
    for bad in ([5, 5], [-1, 3], [3], [1.5, 4]):
        with pytest.raises(ValueError, match="skip range"):
            SkipRanges([bad])


@pytest.fixture(scope="module")
def plan(shared_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("skip")
    manifests = write_text_sources(shared_dir, d / "shards", max_bytes=20_000, shard_tokens=2048)
    return resolve_mix(write_mix(d / "mix.yaml", manifests, {"wiki": 0.5, "books": 0.3, "news": 0.2},
                                 seq_len=16, token_budget=16 * 400))


def _global(plan, state, *, world, steps, G=12):
    """Global batches (ranks' rows in rank order) and the end state, from ``state``."""
    per_rank = []
    for r in range(world):
        with MixLoader(plan, LoaderConfig(global_batch=G, rank=r, world_size=world, num_workers=2)) as ld:
            ld.load_state_dict(state)
            per_rank.append(([next(ld)["input_ids"].numpy() for _ in range(steps)], ld.state_dict()))
    assert len({json.dumps(s) for _, s in per_rank}) == 1
    return [np.concatenate([b[t] for b, _ in per_rank]) for t in range(steps)], per_rank[0][1]


def test_loader_skips_ranges_alike_on_any_world_size_and_resumes(plan):
    G, skip = 12, [[30, 41], [47, 50], [200, 260]]
    with MixLoader(plan, LoaderConfig(global_batch=G)) as ld:
        ld.load_state_dict({"plan_hash": plan.plan_hash, "samples_committed": 24})
        ld.add_skip(SkipRanges(skip))
        state = ld.state_dict()
        assert ld.steps_left == (400 - 24 - 14 - 60) // G
        assert ld.step_range(24) == (24, 47)  # 12 served samples: 24..29, 41..46
    assert state["skip"] == skip
    served = _served(skip, 24, 400)
    for world in (1, 3, 4):
        got, end = _global(plan, state, world=world, steps=6)
        for t, batch in enumerate(got):  # exactly the served samples, in order
            assert np.array_equal(batch, plan.read(0, 400)[served[t * G:(t + 1) * G], :-1].astype(np.int64))
        assert {k: end[k] for k in ("plan_hash", "samples_committed", "skip")} == \
               {"plan_hash": plan.plan_hash, "samples_committed": served[6 * G - 1] + 1, "skip": skip}
    # resuming mid-way from the end state continues the same sequence
    later, _ = _global(plan, {**state, "samples_committed": served[3 * G - 1] + 1}, world=2, steps=3)
    assert all(np.array_equal(a, b) for a, b in zip(later, got[3:]))


def test_skip_before_the_cursor_is_refused(plan):
    with MixLoader(plan, LoaderConfig(global_batch=8)) as ld:
        ld.load_state_dict({"plan_hash": plan.plan_hash, "samples_committed": 40, "skip": [[20, 30]]})
        ld.add_skip(SkipRanges([[20, 30], [40, 48]]))  # already recorded / at the cursor: fine
        with pytest.raises(SpecError, match=r"skip range \[32, 44\] starts before this checkpoint's cursor 40"):
            ld.add_skip(SkipRanges([[32, 44]]))


def test_skip_config_is_validated(repo_dir):
    cfg = load_config(repo_dir / "trainer_bridge/configs/sample.yaml", ["skip=[[1200, 1264]]", "resume_from=30"])
    assert cfg.skip == ((1200, 1264),) and cfg.resume_from == 30
    with pytest.raises(SpecError, match=r"skip range \[9, 3\] must be two integers"):
        load_config(repo_dir / "trainer_bridge/configs/sample.yaml", ["skip=[[9, 3]]"])


def test_truncate_metrics_keeps_each_step_once(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = [json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 9)]
    path.write_text("".join(rows) + '{"step": 9, "lo')  # a torn line from a killed run
    assert truncate_metrics(path, 5) == 4
    assert [json.loads(x)["step"] for x in path.read_text().splitlines()] == [1, 2, 3, 4, 5]
    moved = (tmp_path / "metrics.jsonl.after-step-5").read_text().splitlines()
    assert [x[:11] for x in moved] == ['{"step": 6,', '{"step": 7,', '{"step": 8,', '{"step": 9,']
    assert truncate_metrics(path, 5) == 0


def test_spike_watch_names_the_step_and_its_samples():
    watch = _SpikeWatch(3.0, 8)
    losses = [5.0, 4.8, 4.7, 4.5, 4.4, 4.3, 4.2, 14.0, 4.1]
    flagged = []
    for step, loss in enumerate(losses, 1):
        row = {"step": step, "loss": loss, "grad_norm": 1.0, "samples": [(step - 1) * 8, step * 8]}
        jumped = watch.check(row)
        if jumped:
            flagged.append((step, _SpikeWatch.message(row, jumped, None)))
    assert len(flagged) == 1 and flagged[0][0] == 8
    assert "SPIKE at step 8: loss 14 = 3.1x its median 4.5" in flagged[0][1]
    assert "global samples [56, 64)" in flagged[0][1] and "--set skip='[[56, 64]]'" in flagged[0][1]


def test_only_marked_checkpoints_are_resumed_from(tmp_path):
    for step, marked in ((2, True), (4, True), (6, False)):
        (tmp_path / f"step-{step:08d}").mkdir()
        if marked:
            (tmp_path / f"step-{step:08d}" / checkpoint.MARKER).write_text("{}")
    assert checkpoint.complete_steps(tmp_path) == [2, 4]
    assert checkpoint.find(tmp_path, None) == tmp_path / "step-00000004"
    assert checkpoint.find(tmp_path, 2) == tmp_path / "step-00000002"
    with pytest.raises(SpecError, match=r"step-00000006 is not a complete checkpoint .* steps \[2, 4\]"):
        checkpoint.find(tmp_path, 6)
    assert checkpoint.find(tmp_path / "none", None) is None
