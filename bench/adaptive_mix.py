"""Loss-driven upsampling on the sample mix, beside the static schedule (issue 38).

Trains the bundled trainer (one CPU process, the sample config with a smaller model) on the
same steps three ways: the mix's own weights (static), the ``adaptive:`` policy as the mix
writes it (``exp_gradient``: online data mixing), and ``excess_loss`` (DoReMi) with the static
run as its reference; then reports, per run, the per-source validation loss at the end, the
target loss (the mean of the per-source validation losses), the weights as they moved and
the realised token shares, as a table (``report.md``), JSON and a PNG (matplotlib when it is
installed; else the PNG is left out and the report says so). Also writes ``datapipe mix plot``
of each adaptive run. CPU seconds are the trainer processes' own (getrusage of the children),
not wall clock.

    python bench/adaptive_mix.py                       # needs runs/sample (make sample)
    python bench/adaptive_mix.py --steps 64 --seeds 0 1  # a second trainer seed: the seed-to-seed spread
    python bench/adaptive_mix.py --smoke               # 4 steps on random-token shards: checks it runs
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def synthetic_sources(src: Path, folder: Path, tokens: int = 30_000) -> dict[str, str]:
    """Random-token shards (vocabulary 512, ~300-token documents) through the real shard
    writer, one per source of the mix at ``src`` (named by the manifest's folder): --synthetic."""
    import numpy as np

    from stages.tokenize.identity import TokenizerInfo
    from stages.tokenize.writer import SourceShardWriter

    info = TokenizerInfo(path="bench", fingerprint="blake2b-256:synthetic", vocab_size=512, eos_id=0, eos_token="<e>")
    out = {}
    for i, s in enumerate(yaml.safe_load(src.read_text(encoding="utf-8"))["sources"]):
        name = Path(s["manifest"]).parent.name
        rng = np.random.default_rng(i)
        lengths = rng.geometric(1 / 300, size=tokens // 300 + 1)
        lengths = lengths[np.cumsum(lengths) <= tokens]
        flat = rng.integers(1, 512, int(lengths.sum()), dtype=np.uint16)
        w = SourceShardWriter(folder / name, name, tokenizer_info=info, shard_tokens=8192, seed=i, lineage={})
        w.add(flat, lengths)
        out[s["manifest"]] = str(w.finish())
    return out


def _write_variant(src: Path, out: Path, *, adaptive: dict[str, Any] | None,
                  manifests: dict[str, str] | None = None) -> Path:
    """The mix at ``src`` with its ``adaptive:`` replaced (None: removed), manifests made absolute
    (or replaced by ``manifests``)."""
    doc = yaml.safe_load(src.read_text(encoding="utf-8"))
    for s in doc["sources"]:
        s["manifest"] = (manifests or {}).get(s["manifest"]) or str((src.parent / s["manifest"]).resolve())
    doc.pop("adaptive", None)
    if adaptive is not None:
        doc["adaptive"] = adaptive
    doc["name"] = out.stem
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def train(mix: Path, run_dir: Path, *, steps: int, seed: int, eval_every: int, extra: list[str]) -> dict[str, Any]:
    """One fresh trainer run; returns its metrics rows and the CPU seconds it used."""
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    sets = [f"mix={mix}", "tp=1", f"steps={steps}", f"eval_every={eval_every}", "log_every=8", "model.dim=64",
            "model.n_layers=2", "cpu_threads=1", f"seed={seed}", f"ckpt_dir={run_dir / 'ckpt'}", "ckpt_every=0",
            f"metrics_path={run_dir / 'metrics.jsonl'}", *extra]
    cmd = [sys.executable, "-m", "trainer_bridge.train", "--config", str(REPO / "trainer_bridge/configs/sample.yaml")]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(run_dir / "train.log", "w", encoding="utf-8") as log:
        rc = subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc:
        raise SystemExit(f"training {mix} failed (exit {rc}); see {run_dir / 'train.log'}")
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rows": rows, "cpu_s": cpu, "mix": str(mix)}


def summarise(name: str, run: dict[str, Any], names: list[str], static_w: dict[str, float]) -> dict[str, Any]:
    from trainer_bridge.mix import resolve_mix
    from trainer_bridge.plot import adaptive_history

    rows = run["rows"]
    evals = [(r["step"], r["val_loss"]) for r in rows if r.get("val_loss")]
    final = evals[-1][1]
    history = adaptive_history(rows)
    weights = [(0, dict(static_w))] + [(h["step"], {n: u / h["grid"] for n, u in h["units"].items()}) for h in history]
    plan = resolve_mix(run["mix"], warn=False)
    plan.set_history(history)
    n = rows[-1]["samples"][1]
    counts = plan.counts_at(n)
    return {"name": name, "cpu_s": round(run["cpu_s"], 1), "final_val": final,
            "target": sum(final.values()) / len(final),
            "val_curve": [{"step": s, **v, "mean": sum(v.values()) / len(v)} for s, v in evals],
            "weights": [{"step": s, **w} for s, w in weights],
            "realised_share": {nm: c / n for nm, c in zip(names, counts)}}


def report(results: list[dict[str, Any]], names: list[str], steps: int, seeds: list[int], plot_note: str) -> str:
    head = "| run | seed | " + " | ".join(names) + " | **target (mean)** | CPU s |"
    lines = [f"Validation loss per source after {steps} steps (lower is better); target = mean over sources.", "",
             head, "|" + "---|" * (len(names) + 4)]
    for r in results:
        lines.append(f"| {r['name']} | {r['seed']} | " + " | ".join(f"{r['final_val'][n]:.4f}" for n in names)
                     + f" | **{r['target']:.4f}** | {r['cpu_s']} |")
    lines += ["", "Realised token share over the run (static: the mix's weights):", "",
              "| run | seed | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 2)]
    for r in results:
        lines.append(f"| {r['name']} | {r['seed']} | " + " | ".join(f"{r['realised_share'][n]:.3f}" for n in names)
                     + " |")
    for r in results:
        if len(r["weights"]) > 1:
            lines += ["", f"Weights of {r['name']} (seed {r['seed']}) from the step after each update:", "",
                      "| step | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
            lines += [f"| {w['step']} | " + " | ".join(f"{w[n]:.3f}" for n in names) + " |" for w in r["weights"]]
    if len(seeds) > 1:
        static = [r["target"] for r in results if r["name"] == "static"]
        spread = max(static) - min(static)
        lines += ["", f"Seed-to-seed spread of the static target over seeds {seeds}: {spread:.4f}"]
    lines += ["", plot_note]
    return "\n".join(lines) + "\n"


def plot(results: list[dict[str, Any]], names: list[str], out: Path) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no PNG (pip install matplotlib, or the bench extra)"
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    first = [r for r in results if r["seed"] == results[0]["seed"]]
    fig, axes = plt.subplots(1 + len(first), 1, figsize=(10, 3.2 * (1 + len(first))), sharex=True)
    ax = axes[0]
    static = {r["seed"]: {v["step"]: v["mean"] for v in r["val_curve"]} for r in results if r["name"] == "static"}
    ax.axhline(0, color="#888888", lw=1)
    for k, r in enumerate(results):
        base = static.get(r["seed"], {})
        pts = [(v["step"], v["mean"] - base[v["step"]]) for v in r["val_curve"] if v["step"] in base]
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", ms=3, color=colors[k % len(colors)],
                ls="-" if r["seed"] == results[0]["seed"] else "--",
                label=f"{r['name']} (seed {r['seed']}): final {r['target']:.4f}")
    ax.set_ylabel("minus the static run's")
    ax.set_title("target loss (mean of per-source validation loss), minus the static run's of the same seed")
    ax.legend(fontsize=8)
    steps = max(v["step"] for r in results for v in r["val_curve"])
    for ax, r in zip(axes[1:], first):
        twin = ax.twinx()
        for i, n in enumerate(names):
            c = colors[i % len(colors)]
            xs = [w["step"] for w in r["weights"]] + [steps]
            ys = [w[n] for w in r["weights"]] + [r["weights"][-1][n]]
            ax.step(xs, ys, where="post", color=c, lw=2, label=n)
            twin.plot([v["step"] for v in r["val_curve"]], [v[n] for v in r["val_curve"]], color=c, lw=1, ls=":")
        ax.set_ylabel("weight (solid)")
        ax.set_ylim(0, max(w[n] for w in r["weights"] for n in names) * 1.35)   # room for the legend
        twin.set_ylabel("validation loss (dotted)")
        ax.set_title(f"{r['name']}: weights as they moved, per-source validation loss")
        ax.legend(fontsize=8, ncol=len(names), loc="upper left")
    axes[-1].set_xlabel("step")
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    return f"Plot: {out.name}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mix", default=str(REPO / "mixes/sample-adaptive.yaml"), help="an adaptive mix (its weights: "
                   "the static run; its adaptive: the exp_gradient run)")
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--eval-every", type=int, default=16)
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="trainer seeds (two: the seed-to-seed spread)")
    p.add_argument("--rules", nargs="+", default=["exp_gradient", "excess_loss"], choices=["exp_gradient", "excess_loss"])
    p.add_argument("--out", default=str(REPO / "runs/adaptive-bench"))
    p.add_argument("--set", action="append", default=[], help="more trainer overrides KEY=VALUE")
    p.add_argument("--every", type=int, default=None, help="override adaptive.every (steps)")
    p.add_argument("--synthetic", action="store_true", help="random-token shards in place of the mix's sources "
                   "(no `make sample` needed; the numbers mean nothing)")
    import _smoke

    args = _smoke.parse(p, {"steps": 4, "eval_every": 2, "every": 2, "seeds": [0], "out": "<tmp>",
                            "synthetic": True}, argv)
    from trainer_bridge.mix import resolve_mix
    from trainer_bridge.plot import plot_mix, read_metrics

    src, out = Path(args.mix).resolve(), Path(args.out).resolve()
    base = yaml.safe_load(src.read_text(encoding="utf-8"))
    if not base.get("adaptive"):
        raise SystemExit(f"{src} has no adaptive: block")
    if args.every:
        base["adaptive"]["every"] = args.every
    manifests = synthetic_sources(src, out / "shards") if args.synthetic else None
    missing = [s["manifest"] for s in base["sources"] if not args.synthetic
               and not (src.parent / s["manifest"]).is_file()]
    if missing:
        raise SystemExit(f"source manifest(s) {missing} missing: run `make sample` first (or --synthetic)")
    write_variant = functools.partial(_write_variant, manifests=manifests)
    plan = resolve_mix(write_variant(src, out / "static.yaml", adaptive=None), warn=False)
    names = list(plan.names)
    static_w = {n: float(w) for n, w in zip(names, plan.weights)}
    results = []
    for seed in args.seeds:
        runs = {"static": out / "static.yaml"}
        ref = out / f"static-s{seed}" / "metrics.jsonl"
        for rule in args.rules:
            ad = dict(base["adaptive"], rule=rule)
            if rule == "excess_loss":
                ad["reference"] = str(ref)
            runs[rule] = write_variant(src, out / f"{rule}.yaml", adaptive=ad) if rule != "excess_loss" else None
        for name in ["static", *args.rules]:
            mix = runs[name]
            if mix is None:   # excess_loss: its reference (the static run of this seed) exists now
                ad = dict(base["adaptive"], rule="excess_loss", reference=str(ref))
                mix = write_variant(src, out / f"excess_loss-s{seed}.yaml", adaptive=ad)
            print(f"training {name} (seed {seed}) ...", flush=True)
            run = train(mix, out / f"{name}-s{seed}", steps=args.steps, seed=seed, eval_every=args.eval_every,
                        extra=args.set)
            res = summarise(name, run, names, static_w) | {"seed": seed}
            results.append(res)
            print(f"  target {res['target']:.4f}  cpu {res['cpu_s']} s", flush=True)
            if name != "static":
                plot_mix(resolve_mix(mix, warn=False), out / f"mix-{name}-s{seed}.png",
                         metrics=read_metrics(out / f"{name}-s{seed}" / "metrics.jsonl"))
    note = plot(results, names, out / "adaptive_mix.png")
    text = report(results, names, args.steps, args.seeds, note)
    (out / "report.md").write_text(text, encoding="utf-8")
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(text)
    print(f"wrote {out / 'report.md'}, {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
