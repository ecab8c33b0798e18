"""Mix plan + loader properties: proportions at every prefix, no repeats inside an epoch,
exact resume on any data-parallel size, budget extension, and memory that does not grow
with the number of windows."""

from __future__ import annotations

import dataclasses
import json
import random
import time
import tracemalloc

import numpy as np
import pytest
import torch
from shard_helper import write_mix, write_source, write_sparse_source, write_text_sources

from datapipe.errors import SpecError
from trainer_bridge.loader import LoaderConfig, MixLoader, micro_batches
from trainer_bridge.mix import load_mix, position_ids, resolve_mix
from trainer_bridge.order import Interleave, epoch_keys, permute, rational_weights

SEQ = 32


@pytest.fixture(scope="module")
def real(shared_dir, tmp_path_factory):
    """Real text (wiki, books, news) tokenised into small shards; a mix over them."""
    d = tmp_path_factory.mktemp("real")
    manifests = write_text_sources(shared_dir, d / "shards", max_bytes=30_000, shard_tokens=2048)
    mix = write_mix(d / "mix.yaml", manifests, {"wiki": 0.5, "books": 0.3, "news": 0.2},
                    seq_len=SEQ, token_budget=SEQ * 6000)
    return mix


def _small_plan(tmp_path, sizes=(700, 300, 1000), weights=(0.5, 0.2, 0.3), budget_samples=400, seed=7):
    manifests = {}
    rng = np.random.default_rng(0)
    for i, (size, name) in enumerate(zip(sizes, "abc")):
        docs = [rng.integers(0, 50, rng.integers(1, 20)).tolist() for _ in range(size // 8)]
        manifests[name] = write_source(tmp_path / name, name, docs, eos_id=50, vocab_size=51, shard_tokens=97)
    mix = write_mix(tmp_path / "mix.yaml", manifests, dict(zip("abc", weights)), seq_len=8,
                    token_budget=8 * budget_samples, seed=seed, max_epochs=1000, warn_epochs=1000)
    return resolve_mix(mix)


# ------------------------------------------------------------------ source proportions


@pytest.mark.parametrize("weights", [
    [0.5, 0.3, 0.2], [0.25, 0.1, 0.3, 0.15, 0.1, 0.1], [0.97, 0.01, 0.01, 0.01], [1 / 3, 1 / 3, 1 / 3],
    [random.Random(3).random() ** 3 + 1e-3 for _ in range(24)],
])
def test_mix_proportions_within_two_samples_at_every_prefix(weights):
    w = rational_weights(weights)
    il = Interleave(w)
    n = 30_000
    src, _ = il.run(0, n)
    onehot = np.zeros((n, len(w)))
    onehot[np.arange(n), src] = 1
    counts = np.cumsum(onehot, axis=0)
    target = np.arange(1, n + 1)[:, None] * np.array([float(x) for x in w])[None, :]
    worst = np.abs(counts - target).max()
    assert worst <= 2.0, worst
    # random access agrees with the sequential run, also far out
    for m in [0, 1, 17, 4095, 29_999]:
        s, k = il.at(m)
        assert s == src[m] and k == counts[m, s] - 1
    assert il.counts_at(10**12)[0] + sum(il.counts_at(10**12)[1:]) == 10**12


# ------------------------------------------------------------------ windows inside a source


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 65, 1000, 4097])
def test_window_permutation_is_a_bijection_and_changes_per_epoch(n):
    a = permute(np.arange(n), n, epoch_keys(1, "src", 0))
    b = permute(np.arange(n), n, epoch_keys(1, "src", 1))
    assert sorted(a.tolist()) == list(range(n)) == sorted(b.tolist())
    if n >= 64:
        assert not np.array_equal(a, b) and not np.array_equal(a, np.arange(n))


def test_no_window_repeats_within_an_epoch(tmp_path):
    plan = _small_plan(tmp_path, budget_samples=400)
    src, win = plan.locate(0, 4000)  # several epochs of every source
    for s, name in enumerate(plan.names):
        seen = win[src == s]
        nw = plan.n_windows[s]
        epochs = [seen[i:i + nw] for i in range(0, seen.size - nw + 1, nw)]
        assert len(epochs) >= 2, name
        for ep in epochs:  # each full epoch visits every window exactly once
            assert sorted(ep.tolist()) == list(range(nw)), name
        assert not np.array_equal(epochs[0], epochs[1])


def test_sample_tokens_are_the_right_stream_windows(real):
    plan = resolve_mix(real)
    streams = {name: st.read(0, st.n_tokens) for name, st in zip(plan.names, plan.streams)}
    toks = plan.read(100, 64)
    for i in range(64):
        name, w = plan.sample(100 + i)
        assert np.array_equal(toks[i], streams[name][w * SEQ:w * SEQ + SEQ + 1])


# ------------------------------------------------------------------ loader


def _global_batches(plan, *, world, start_state=None, steps, G=12, workers=1, prefetch=2, micro=None):
    """Global batches as every rank of `world` sees them, concatenated in rank order."""
    per_rank = []
    for r in range(world):
        ld = MixLoader(plan, LoaderConfig(global_batch=G, rank=r, world_size=world, num_workers=workers,
                                          prefetch=prefetch, with_position_ids=True))
        if start_state:
            ld.load_state_dict(start_state)
        with ld:
            got = []
            for _ in range(steps):
                b = next(ld)
                if micro:  # the trainer's split must not change what a step sees
                    b = {k: torch.cat([m[k] for m in micro_batches(b, micro)]) for k in b}
                got.append(b)
            per_rank.append((got, ld.state_dict()))
    states = {str(s) for _, s in per_rank}
    assert len(states) == 1  # every rank agrees on the cursor
    return [np.concatenate([per_rank[r][0][t]["input_ids"].numpy() for r in range(world)])
            for t in range(steps)], per_rank[0][1]


def test_resume_at_random_points_on_any_world_size(real):
    plan = resolve_mix(real)
    G = 12
    ref, _ = _global_batches(plan, world=1, steps=40, G=G)
    rng = random.Random(0)
    for world in (1, 2, 3, 4):
        for _ in range(2):
            step = rng.randrange(0, 35)
            state = {"plan_hash": plan.plan_hash, "samples_committed": step * G}
            got, end = _global_batches(plan, world=world, start_state=state, steps=5, G=G,
                                       workers=rng.choice([1, 2, 3]), prefetch=rng.choice([1, 3]),
                                       micro=rng.choice([None, 1]))
            for t in range(5):
                assert np.array_equal(got[t], ref[step + t]), (world, step, t)
            assert end == {"plan_hash": plan.plan_hash, "samples_committed": (step + 5) * G, "skip": [],
                           "plan_key": json.dumps(plan.prefix_key(), sort_keys=True), "mix_changes": "[]"}


def test_batch_tensors_labels_and_positions(real):
    plan = resolve_mix(real)
    with MixLoader(plan, LoaderConfig(global_batch=4, with_position_ids=True)) as ld:
        b = next(ld)
    windows = plan.read(0, 4).astype(np.int64)
    assert b["input_ids"].dtype == b["labels"].dtype == torch.int64
    assert np.array_equal(b["input_ids"].numpy(), windows[:, :-1])
    assert np.array_equal(b["labels"].numpy(), windows[:, 1:])
    pos = b["position_ids"].numpy()
    x = windows[:, :-1]
    for row in range(4):
        for t in range(1, SEQ):
            want = 0 if x[row, t - 1] == plan.eos_id else pos[row, t - 1] + 1
            assert pos[row, t] == want
    assert position_ids(np.array([[5, 9, 1, 2, 9, 9, 3]]), 9).tolist() == [[0, 1, 0, 1, 2, 0, 0]]


def test_state_from_another_plan_is_refused(real, tmp_path):
    plan = resolve_mix(real)
    other = resolve_mix(dataclasses.replace(load_mix(real), seed=99))
    assert other.plan_hash != plan.plan_hash
    ld = MixLoader(plan, LoaderConfig(global_batch=4))
    with pytest.raises(SpecError, match="saved for mix plan .* seed"):
        ld.load_state_dict(MixLoader(other, LoaderConfig(global_batch=4)).state_dict())


def test_raising_the_budget_keeps_earlier_samples(real):
    spec = load_mix(real)
    small = resolve_mix(spec)
    big = resolve_mix(dataclasses.replace(spec, token_budget=spec.token_budget * 3))
    assert big.plan_hash == small.plan_hash and big.total_samples == 3 * small.total_samples
    n = small.total_samples
    assert np.array_equal(small.read(n - 500, 500), big.read(n - 500, 500))
    assert np.array_equal(np.stack(small.locate(0, n)), np.stack(big.locate(0, n)))
    with MixLoader(small, LoaderConfig(global_batch=1000)) as ld:
        assert sum(1 for _ in ld) == n // 1000  # the run ends at the budget


# ------------------------------------------------------------------ O(1) in the corpus size


def _footprint(tmp_path, windows: int) -> tuple[int, float]:
    seq = 64
    tokens = windows * seq + 1
    m = write_sparse_source(tmp_path / f"big{windows}", "big", tokens, shard_tokens=tokens // 4 + 1)
    m2 = write_sparse_source(tmp_path / f"small{windows}", "small", tokens // 2, shard_tokens=tokens // 8 + 1)
    mix = write_mix(tmp_path / f"mix{windows}.yaml", {"big": m, "small": m2}, {"big": 0.6, "small": 0.4},
                    seq_len=seq, token_budget=seq * windows, max_epochs=10, warn_epochs=10)
    tracemalloc.start()
    t0 = time.perf_counter()
    plan = resolve_mix(mix)  # start-up: open, verify sizes, build the plan
    plan.locate(plan.total_samples - 64, 64)  # and find samples at the far end of the run
    startup = time.perf_counter() - t0
    ld = MixLoader(plan, LoaderConfig(global_batch=64, verify=False))  # sparse shards carry no hashes
    ld.load_state_dict({"plan_hash": plan.plan_hash, "samples_committed": plan.total_samples - 64 * 3})
    for _ in ld:  # read a few steps there (first-touch page faults are the OS's, not ours)
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ld.close()
    return peak, startup


def test_memory_and_startup_do_not_grow_with_windows(tmp_path):
    _footprint(tmp_path, 5_000)  # warm-up: one-time imports and caches are not per-corpus cost
    small_peak, small_t = _footprint(tmp_path, 20_000)
    big_peak, big_t = _footprint(tmp_path, 2_000_000)  # 100x the windows
    print(f"peak bytes: {small_peak:,} vs {big_peak:,}; start-up: {small_t * 1e3:.1f} ms vs {big_t * 1e3:.1f} ms")
    assert big_peak <= small_peak * 1.25 + 32_768, (small_peak, big_peak)


@pytest.mark.parametrize("weights", [[0.5, 0.3, 0.2], [1 / 999_983, 1 / 999_979, 1 / 999_961, 0.9]])
def test_vectorised_interleave_equals_the_heap_merge(weights):
    """The fast path of `run_counts` (int64 keys, one sort) is the exact heap merge; weights
    with huge coprime denominators overflow int64 keys and take the heap path."""
    il = Interleave(rational_weights(weights))
    for n0, count in [(0, 5000), (123_457, 4096), (10**12, 777), (9, 0)]:
        fast, slow = il.run_counts(n0, count), il._run_heap(n0, count)
        assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
        assert fast[2:] == slow[2:]
