"""The bundled trainer under torchrun with real gloo process groups on CPU (4 processes).

One uninterrupted dp=2 x tp=2 run is the reference: its loss must fall; a run killed
(SIGKILL) while an async checkpoint is being written and then resumed must log
bit-identical losses, each step once in its metrics file; a dp=4 x tp=1 run must see the
same global batches (hash per step). Recovery: a rollback that skips a sample range, resumed
again on another dp size, sees exactly the served samples; SIGTERM stops with a complete
checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import write_mix, write_text_sources

from trainer_bridge import checkpoint
from trainer_bridge.mix import resolve_mix

pytestmark = pytest.mark.dist

STEPS, KILL_AT = 10, 5


def _torchrun(repo: Path, cfg: Path, metrics: Path, ckpt: Path, *extra: str, wait: bool = True):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(repo), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
           "-m", "trainer_bridge.train", "--config", str(cfg),
           "--set", f"metrics_path={metrics}", "--set", f"ckpt_dir={ckpt}", *extra]
    if not wait:  # its own session, so a test can signal launcher and workers together
        return subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def _metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def setup(shared_dir, repo_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("dist")
    manifests = write_text_sources(shared_dir, d / "shards", max_bytes=40_000, shard_tokens=8192)
    mix = write_mix(d / "mix.yaml", manifests, {"wiki": 0.5, "books": 0.3, "news": 0.2}, seq_len=64,
                    token_budget=64 * 8 * 200)
    cfg = d / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 64, "n_layers": 2, "n_heads": 4, "max_seq_len": 64},
        "dp": -1, "tp": 2, "global_batch": 8, "micro_batch": 2, "steps": STEPS, "lr": 3e-3, "warmup_steps": 2,
        "position_ids": True, "batch_digest": True, "ckpt_every": KILL_AT, "cpu_threads": 1,
    }))
    # the reference writes synchronous checkpoints; the other runs async ones (the default)
    ref = _torchrun(repo_dir, cfg, d / "ref.jsonl", d / "ckpt_ref", "--set", "ckpt_async=false")
    assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-5000:]
    return {"dir": d, "cfg": cfg, "ref": _metrics(d / "ref.jsonl"), "repo": repo_dir, "mix": mix}


def test_dp2_tp2_loss_falls(setup):
    ref = setup["ref"]
    assert [m["step"] for m in ref] == list(range(1, STEPS + 1))
    first, last = ref[0]["loss"], sum(m["loss"] for m in ref[-2:]) / 2
    assert last < first - 0.8, [m["loss"] for m in ref]
    assert sorted(p.name for p in (setup["dir"] / "ckpt_ref").iterdir()) == ["step-00000005", "step-00000010"]


def test_kill_during_an_async_save_then_resume_is_bit_exact_and_logs_each_step_once(setup):
    """SIGKILL while step 6's async save is in flight (step 4's was written while steps 5-6
    trained): step 6 has no marker, so resume picks step 4 and continues bit-exactly; the
    metrics file ends with each step once, although the killed run had logged 5 and 6."""
    d, ref = setup["dir"], setup["ref"]
    killed = _torchrun(setup["repo"], setup["cfg"], d / "kill.jsonl", d / "ckpt_kill", "--set", "ckpt_every=2",
                       "--kill-in-save", "6")
    assert killed.returncode != 0
    assert [m["step"] for m in _metrics(d / "kill.jsonl")] == list(range(1, 7))
    assert (d / "ckpt_kill" / "step-00000006").is_dir()
    assert not checkpoint.is_complete(d / "ckpt_kill" / "step-00000006")
    assert checkpoint.latest(d / "ckpt_kill") == d / "ckpt_kill" / "step-00000004"
    resumed = _torchrun(setup["repo"], setup["cfg"], d / "kill.jsonl", d / "ckpt_kill", "--set", "ckpt_every=2")
    assert resumed.returncode == 0, resumed.stderr[-5000:]
    assert "resumed from " + str(d / "ckpt_kill" / "step-00000004") in resumed.stdout
    metrics = _metrics(d / "kill.jsonl")
    assert [m["step"] for m in metrics] == list(range(1, STEPS + 1))  # 5 and 6 once, not twice
    for got, want in zip(metrics, ref):
        assert (got["step"], got["loss"], got["grad_norm"], got["batch"]) == \
               (want["step"], want["loss"], want["grad_norm"], want["batch"])
    assert checkpoint.complete_steps(d / "ckpt_kill") == [2, 4, 6, 8, 10]


def test_dp4_tp1_sees_the_same_global_batches(setup):
    d, ref = setup["dir"], setup["ref"]
    run = _torchrun(setup["repo"], setup["cfg"], d / "dp4.jsonl", d / "ckpt_dp4", "--set", "tp=1",
                    "--set", "micro_batch=1", "--set", "ckpt_every=0")
    assert run.returncode == 0, run.stderr[-5000:]
    got = _metrics(d / "dp4.jsonl")
    assert [m["batch"] for m in got] == [m["batch"] for m in ref]
    assert all(m["batch"] for m in got)
    # same data and the same model; only reduction order differs, so losses agree closely
    assert all(abs(a["loss"] - b["loss"]) < 1e-3 for a, b in zip(got, ref))


def _expected_digests(mix: Path, skip: list[list[int]], start: int, steps: int, G: int = 8) -> list[str]:
    """Digests of the global batches a run from cursor ``start`` must see: the next samples
    outside ``skip``, read straight from the plan (the trainer's digest: rows in order, int64)."""
    plan = resolve_mix(mix)
    served = [n for n in range(start, plan.total_samples) if not any(a <= n < b for a, b in skip)]
    out = []
    for t in range(steps):
        rows = np.concatenate([plan.read(n, 1) for n in served[t * G:(t + 1) * G]]).astype(np.int64)
        out.append(hashlib.blake2b(rows.tobytes(), digest_size=16).hexdigest())
    return out


def test_skip_range_resume_then_resume_again_on_another_dp_size(setup):
    """Roll back to step 5 skipping [50, 61) (spans steps 7-8), then resume that run from
    its step-6 checkpoint on dp=4 x tp=1 without naming the range again."""
    d, ref, skip = setup["dir"], setup["ref"], [[50, 61]]
    shutil.copytree(d / "ckpt_ref", d / "ckpt_skip")
    shutil.copy(d / "ref.jsonl", d / "skip.jsonl")
    first = _torchrun(setup["repo"], setup["cfg"], d / "skip.jsonl", d / "ckpt_skip", "--set", "resume_from=5",
                      "--set", f"skip={json.dumps(skip)}", "--set", "ckpt_every=2")
    assert first.returncode == 0, first.stderr[-5000:]
    assert "skipped 11 (704 tokens)" in first.stdout
    a = _metrics(d / "skip.jsonl")
    assert [m["step"] for m in a] == list(range(1, STEPS + 1))  # the abandoned 6..10 moved aside
    assert a[:KILL_AT] == ref[:KILL_AT] and a[KILL_AT]["run"]["skip"] == skip
    want = _expected_digests(setup["mix"], skip, 5 * 8, STEPS - KILL_AT)
    assert [m["batch"] for m in a[KILL_AT:]] == want  # exactly the served samples: none of 50..60
    assert [m["batch"] for m in a[KILL_AT:]] != [m["batch"] for m in ref[KILL_AT:]]
    assert checkpoint.complete_steps(d / "ckpt_skip") == [5, 6, 8, 10]
    assert checkpoint.complete_steps(d / "ckpt_skip" / "abandoned-after-step-00000005") == [10]

    again = _torchrun(setup["repo"], setup["cfg"], d / "skip.jsonl", d / "ckpt_skip", "--set", "resume_from=6",
                      "--set", "tp=1", "--set", "micro_batch=1", "--set", "ckpt_every=0")
    assert again.returncode == 0, again.stderr[-5000:]
    b = _metrics(d / "skip.jsonl")
    assert [m["step"] for m in b] == list(range(1, STEPS + 1))
    assert b[6]["run"]["skip"] == skip  # from the checkpoint
    assert [m["batch"] for m in b[6:]] == [m["batch"] for m in a[6:]] == want[1:]


def test_sigterm_stops_with_a_checkpoint_and_resumes_exactly(setup):
    d, ref = setup["dir"], setup["ref"]
    proc = _torchrun(setup["repo"], setup["cfg"], d / "term.jsonl", d / "ckpt_term", "--set", "ckpt_every=0",
                     wait=False)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (d / "term.jsonl").exists() and len((d / "term.jsonl").read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)  # as a scheduler does: launcher and workers alike
    out, err = proc.communicate(timeout=300)
    stopped = _metrics(d / "term.jsonl")[-1]["step"]
    assert stopped < STEPS, "the run ended before SIGTERM arrived"
    assert f"stopped by SIGTERM after step {stopped}: checkpoint" in out and "To resume, run:" in out, out + err
    assert checkpoint.complete_steps(d / "ckpt_term") == [stopped]
    resumed = _torchrun(setup["repo"], setup["cfg"], d / "term.jsonl", d / "ckpt_term", "--set", "ckpt_every=0")
    assert resumed.returncode == 0, resumed.stderr[-5000:]
    got = _metrics(d / "term.jsonl")
    assert [m["step"] for m in got] == list(range(1, STEPS + 1))
    for g, w in zip(got, ref):
        assert (g["loss"], g["grad_norm"], g["batch"]) == (w["loss"], w["grad_norm"], w["batch"])
