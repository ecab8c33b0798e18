"""Hostile resumes of the bundled trainer (issue #35), each as the user runs it
(``python -m trainer_bridge.train``, one CPU process, real gloo) and sees it: exit code,
console and log lines, the checkpoint folder and the metrics file afterwards.

A checkpoint marked complete whose files are damaged is skipped with one warning naming it
and why, and the run resumes from the previous complete one, bit-exactly; a damaged
checkpoint named by ``resume_from``, or one whose content does not read, is a one-line error.
A token budget or ``steps`` below what a checkpoint already trained is an error naming the
cursor, the budget and the fix (it used to exit 0 having trained nothing). An unwritable
``metrics_path`` is one line before any work (it used to be a traceback).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from shard_helper import write_mix, write_text_sources

SEQ, G, STEPS = 16, 4, 4
DATA = "__0_0.distcp"   # the one DCP data file a single-process checkpoint has


@pytest.fixture(scope="module")
def run(shared_dir, repo_dir, tmp_path_factory) -> dict:
    """A 4-step reference run with complete checkpoints at steps 2 and 4."""
    d = tmp_path_factory.mktemp("hostile-trainer")
    shards = write_text_sources(shared_dir, d / "shards", max_bytes=20_000, shard_tokens=2048,
                                sources=("wiki", "books"))
    mix = write_mix(d / "mix.yaml", shards, {"wiki": 0.5, "books": 0.5}, seq_len=SEQ, token_budget=SEQ * G * 6)
    cfg = d / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 16, "n_layers": 1, "n_heads": 2, "max_seq_len": SEQ},
        "global_batch": G, "micro_batch": None, "steps": STEPS, "lr": 3e-3, "warmup_steps": 1, "device": "cpu",
        "cpu_threads": 1, "ckpt_every": 2, "ckpt_async": False, "hash_cache": str(d / "hashes.json")}))
    ref = _train(repo_dir, cfg, d / "ref.jsonl", d / "ckpt")
    assert ref.returncode == 0, ref.stderr[-3000:]
    assert sorted(p.name for p in (d / "ckpt").iterdir()) == ["step-00000002", "step-00000004"]
    return {"dir": d, "repo": repo_dir, "cfg": cfg, "mix": mix, "ref": _rows(d / "ref.jsonl")}


def _train(repo: Path, cfg: Path, metrics: Path, ckpt: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(repo))
    cmd = [sys.executable, "-m", "trainer_bridge.train", "--config", str(cfg), "--set", f"metrics_path={metrics}",
           "--set", f"ckpt_dir={ckpt}", *extra]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _copy(run: dict, tmp_path: Path) -> tuple[Path, Path]:
    """The reference run's checkpoints and metrics, to damage and resume."""
    shutil.copytree(run["dir"] / "ckpt", tmp_path / "ckpt")
    shutil.copy(run["dir"] / "ref.jsonl", tmp_path / "m.jsonl")
    return tmp_path / "ckpt", tmp_path / "m.jsonl"


def _truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def _losses(rows: list[dict]) -> list[tuple[int, float, float]]:
    return [(r["step"], r["loss"], r["grad_norm"]) for r in rows]


def test_truncated_newest_checkpoint_falls_back_to_the_previous_one(run, tmp_path):
    ckpt, metrics = _copy(run, tmp_path)
    newest = ckpt / "step-00000004"
    _truncate(newest / DATA, 1000)
    res = _train(run["repo"], run["cfg"], metrics, ckpt)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    warned = [line for line in res.stderr.splitlines() if "cannot be loaded" in line]
    assert len(warned) == 1 and "WARNING" in warned[0], res.stderr[-3000:]
    assert f"checkpoint {newest} is marked complete but cannot be loaded: data file {DATA} is truncated " \
           f"(1,000 bytes; the metadata indexes" in warned[0]
    assert f"resumed from {ckpt / 'step-00000002'}" in res.stdout and "steps 2->4" in res.stdout
    # it continued from step 2's state: steps 3 and 4 are the reference's, bit for bit, each once
    assert _losses(_rows(metrics)) == _losses(run["ref"])
    # the damaged checkpoint is set aside with the abandoned branch, not deleted; step 4 is written anew
    assert (ckpt / "abandoned-after-step-00000002" / "step-00000004" / DATA).stat().st_size == 1000
    assert (newest / "_COMPLETE").is_file() and (newest / DATA).stat().st_size > 1000


def test_no_loadable_checkpoint_starts_fresh_and_says_so(run, tmp_path):
    ckpt, metrics = _copy(run, tmp_path)
    _truncate(ckpt / "step-00000004" / ".metadata", 100)
    (ckpt / "step-00000002" / DATA).unlink()
    res = _train(run["repo"], run["cfg"], metrics, ckpt)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    warned = [line for line in res.stderr.splitlines() if "cannot be loaded" in line]
    assert len(warned) == 2
    assert f"{ckpt / 'step-00000004'} is marked complete but cannot be loaded: its metadata file .metadata " \
           "does not read (UnpicklingError" in warned[0]
    assert f"{ckpt / 'step-00000002'} is marked complete but cannot be loaded: data file {DATA} is missing" in warned[1]
    assert f"none of the 2 complete checkpoints in {ckpt} can be loaded: starting fresh at step 0" in res.stderr
    assert "steps 0->4" in res.stdout and "resumed from" not in res.stdout
    assert _losses(_rows(metrics)) == _losses(run["ref"])   # the same seed: the same run
    assert sorted(p.name for p in (ckpt / "abandoned-after-step-00000000").iterdir()) == \
           ["step-00000002", "step-00000004"]


def test_a_damaged_resume_from_is_a_one_line_error_that_moves_nothing(run, tmp_path):
    ckpt, metrics = _copy(run, tmp_path)
    _truncate(ckpt / "step-00000004" / DATA, 1000)
    res = _train(run["repo"], run["cfg"], metrics, ckpt, "--set", "resume_from=4")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == (
        f"error: resume_from: checkpoint {ckpt / 'step-00000004'} cannot be loaded: data file {DATA} is truncated "
        f"(1,000 bytes; the metadata indexes {(run['dir'] / 'ckpt/step-00000004' / DATA).stat().st_size:,}). "
        f"Resume from another one (complete checkpoints in {ckpt}: steps [2]), or restore its files")
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-00000002", "step-00000004"]
    assert _rows(metrics) == run["ref"]


def test_content_that_does_not_read_is_a_one_line_error(run, tmp_path):
    """Damage that keeps the file sizes shows only when the content is read: by then the live
    state may be half loaded, so the run stops with the way out rather than guessing."""
    ckpt, metrics = _copy(run, tmp_path)
    with open(ckpt / "step-00000004" / DATA, "r+b") as f:
        f.write(b"\0" * 4096)
    res = _train(run["repo"], run["cfg"], metrics, ckpt)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    last = res.stderr.splitlines()[-1]
    assert last.startswith(f"error: checkpoint {ckpt / 'step-00000004'} failed to load (UnpicklingError: ")
    assert "resume from an earlier checkpoint (--set resume_from=<step>; complete: steps [2, 4])" in last
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-00000002", "step-00000004"]


def _mix_with_budget(run: dict, path: Path, tokens: int) -> Path:
    doc = yaml.safe_load(run["mix"].read_text())
    doc["token_budget"] = tokens
    doc["sources"] = [{**s, "manifest": str(run["mix"].parent / s["manifest"])} for s in doc["sources"]]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_token_budget_below_the_cursor_is_an_error_naming_cursor_budget_and_fix(run, tmp_path):
    """Resuming step 4 (cursor 16 samples = 256 tokens) under a budget of 8 samples used to
    exit 0 having trained nothing; now it says why and what to change, and moves nothing."""
    ckpt, metrics = _copy(run, tmp_path)
    small = _mix_with_budget(run, tmp_path / "small.yaml", 8 * SEQ)
    res = _train(run["repo"], run["cfg"], metrics, ckpt, "--set", f"mix={small}")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == (
        f"error: mix {small}: token_budget 128 tokens (8 samples of {SEQ}) is below the cursor of checkpoint "
        f"{ckpt / 'step-00000004'}: 16 samples (256 tokens) already trained, so nothing is left to train. To train "
        f"further, raise token_budget in {small} above 256 tokens; to end the run within this budget, resume from "
        "an earlier checkpoint (--set resume_from=<step>) whose cursor is within it")
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-00000002", "step-00000004"]
    assert _rows(metrics) == run["ref"]
    # the fix it names works: a budget above the cursor trains on from step 4
    more = _mix_with_budget(run, tmp_path / "more.yaml", 24 * SEQ)
    ok = _train(run["repo"], run["cfg"], metrics, ckpt, "--set", f"mix={more}", "--set", "steps=6")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert [r["step"] for r in _rows(metrics)] == [1, 2, 3, 4, 5, 6]


def test_steps_below_the_checkpoint_is_an_error_and_a_finished_run_says_so(run, tmp_path):
    ckpt, metrics = _copy(run, tmp_path)
    res = _train(run["repo"], run["cfg"], metrics, ckpt, "--set", "steps=3")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == (
        f"error: train: steps 3 is below the step of checkpoint {ckpt / 'step-00000004'} (4): those steps are "
        "already trained, so nothing is left to train. Raise steps above 4 to train further, or resume from an "
        "earlier checkpoint (--set resume_from=<step <= 3>)")
    # the same command as the finished run: nothing to do, exit 0, and it says so
    again = _train(run["repo"], run["cfg"], metrics, ckpt)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (f"nothing to train: the run is complete at step 4 (checkpoint {ckpt / 'step-00000004'}): steps: 4 "
            "reached; raise steps or the mix's token_budget to train further") in again.stdout
    assert _rows(metrics) == run["ref"]


def test_a_token_budget_below_one_global_batch_is_an_error(run, tmp_path):
    tiny = _mix_with_budget(run, tmp_path / "tiny.yaml", 3 * SEQ)
    res = _train(run["repo"], run["cfg"], tmp_path / "m.jsonl", tmp_path / "ckpt", "--set", f"mix={tiny}")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == (
        f"error: mix {tiny}: token_budget 48 tokens (3 samples of {SEQ}) is less than one global batch ({G} "
        f"samples), so no step can run; raise token_budget in {tiny} to at least {G * SEQ} tokens")
    assert not (tmp_path / "m.jsonl").exists()


@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_an_unwritable_metrics_path_is_one_line_before_any_work(run, tmp_path, where):
    """It used to be a traceback from the metrics writer, after the mix was resolved, the
    model built and the checkpoints rolled back."""
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    (tmp_path / "out").mkdir()
    metrics = tmp_path / "notes.txt" / "m.jsonl" if where == "under a file" else tmp_path / "out"
    why = f"{tmp_path / 'notes.txt'} is a file, not a folder" if where == "under a file" else "it is a folder"
    ckpt, _ = _copy(run, tmp_path)
    res = _train(run["repo"], run["cfg"], metrics, ckpt)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"error: train: metrics_path {metrics} cannot be written: {why}; give a file path in a writable folder, "
        "or leave metrics_path out"]
    assert "run:" not in res.stdout                     # nothing started: no checkpoint loaded or moved
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-00000002", "step-00000004"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt", "m.jsonl", "notes.txt", "out"]
    assert not list((tmp_path / "out").iterdir())


def test_a_metrics_path_in_a_new_folder_is_still_created(run, tmp_path):
    ckpt, _ = _copy(run, tmp_path)
    metrics = tmp_path / "new" / "deeper" / "m.jsonl"
    res = _train(run["repo"], run["cfg"], metrics, ckpt, "--set", "steps=5")
    assert res.returncode == 0, res.stderr[-3000:]
    assert [r["step"] for r in _rows(metrics)] == [5]
    assert sorted(p.name for p in metrics.parent.iterdir()) == ["m.jsonl"]   # the probe left nothing behind
