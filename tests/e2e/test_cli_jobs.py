"""The CLI end to end against the session's Ray cluster: the sample job, an
interrupted run, and the same job through `ray job submit`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helper import _data_files, _datapipe, _env, _submit

pytestmark = pytest.mark.e2e


def test_sample_job_prints_report_and_commits(sample_output):
    out, stdout = sample_output
    assert "# datapipe run: sample" in stdout and "accounting" in stdout
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"]
    assert report["totals"]["documents"] > 50 and report["totals"]["rejects"] > 0
    assert (out / "_SUCCESS").is_file() and (out / "drops.png").is_file()


def test_killed_run_leaves_nothing_complete_and_rerun_resumes(ray_cluster, repo_dir, tmp_path, sample_output):
    """The driver killed (SIGKILL) once some splits are done: nothing complete-looking is
    left, and the re-run reuses the finished splits and writes the same bytes."""
    reference, _ = sample_output
    out = tmp_path / "out"
    env = _env(ray_cluster)
    proc = subprocess.Popen([sys.executable, "-m", "datapipe", "run", str(repo_dir / "jobs" / "sample.yaml"),
                             "--output", str(out)], env=env, cwd=repo_dir, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    done = []
    while not done and time.time() < deadline and proc.poll() is None:
        done = [p for p in tmp_path.glob("out.staging-*/work/done") if any(p.rglob("*.json"))]
        time.sleep(0.1)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert not out.exists(), "an interrupted run must not leave a complete-looking output"
    rerun = _datapipe(["run", str(repo_dir / "jobs" / "sample.yaml"), "--output", str(out)], env, cwd=repo_dir,
                      timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-5000:]
    assert "resuming the interrupted run" in rerun.stdout
    assert json.loads((out / "report.json").read_text())["splits"]["reused"] >= 1
    assert not list(tmp_path.glob("out.staging*")) and not (tmp_path / "out.lock").exists()
    assert _data_files(out) == _data_files(reference)
    assert (out / "manifest.json").read_text() == (reference / "manifest.json").read_text()


def test_ray_job_submit_runs_the_same_job(ray_cluster, repo_dir, tmp_path, sample_output, shared_dir):
    reference, _ = sample_output
    out = tmp_path / "submitted"
    ray_bin = Path(sys.executable).with_name("ray")
    env = dict(ray_cluster["env"])
    env.pop("RAY_ADDRESS", None)
    # the working dir is copied without .gitignored files (models/, .venv/): point at them
    runtime_env = {"env_vars": {"DATAPIPE_SHARED": str(shared_dir), "DATAPIPE_MODELS": str(repo_dir / "models"),
                                "DATAPIPE_PROGRESS": "0"}}
    cmd = [str(ray_bin), "job", "submit", "--address", ray_cluster["dashboard"], "--working-dir", str(repo_dir),
           "--runtime-env-json", json.dumps(runtime_env),
           "--", "python", "-m", "datapipe", "run", "jobs/sample.yaml", "--output", str(out)]
    proc = _submit(cmd, env, repo_dir, timeout=900)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    assert "succeeded" in (proc.stdout + proc.stderr).lower()
    assert _data_files(out) == _data_files(reference)
    assert (out / "manifest.json").read_text() == (reference / "manifest.json").read_text()


@pytest.mark.dist
def test_trainer_learns_from_the_sample_jobs_shards(sample_output, repo_dir, tmp_path):
    """The product end to end: the sample job's shards -> a mix -> dp=2 x tp=2 on 4 gloo
    processes; the loss falls."""
    out, _ = sample_output
    shards = out / "shards"
    assert _datapipe(["shards", "verify", str(shards)], dict(os.environ)).returncode == 0
    mix = tmp_path / "mix.yaml"
    pairs = [f"{shards / s / 'manifest.json'}={w}" for s, w in (("wiki", 0.4), ("books", 0.3), ("news", 0.3))]
    made = _datapipe(["mix", "new", "-o", str(mix), "--seq-len", "64", "--token-budget", "40960", *pairs],
                     dict(os.environ))
    assert made.returncode == 0, made.stderr
    plan = _datapipe(["mix", "plan", str(mix)], dict(os.environ))
    assert plan.returncode == 0 and "plan hash" in plan.stdout, plan.stderr
    metrics = tmp_path / "metrics.jsonl"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc-per-node", "4",
           "-m", "trainer_bridge.train", "--config", str(repo_dir / "trainer_bridge/configs/sample.yaml"),
           "--set", f"mix={mix}", "--set", "model.max_seq_len=64", "--set", "steps=16", "--set", "ckpt_every=0",
           "--set", f"ckpt_dir={tmp_path / 'ckpt'}", "--set", f"metrics_path={metrics}", "--set", "lr=0.003",
           "--set", "warmup_steps=2", "--set", "log_every=1"]
    proc = subprocess.run(cmd, cwd=repo_dir, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    losses = [json.loads(line)["loss"] for line in metrics.read_text().splitlines()]
    assert len(losses) == 16
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.5, losses


def test_sample_run_is_quiet(sample_output):
    """Without --verbose the console shows the plan, progress and the report, not Ray's
    logs (those go to <output>/logs/ray.log)."""
    out, _ = sample_output
    console = (out.parent / "console.txt").read_text()
    lines = console.splitlines()
    assert len(lines) < 60, "\n".join(lines)
    assert "# datapipe run: sample" in console
    assert "(raylet)" not in console and "core_worker" not in console and "Deprecat" not in console
    assert (out / "logs" / "ray.log").is_file()
