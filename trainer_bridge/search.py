"""``datapipe mix search``: justify a mix's weights with proxy runs (RegMix style).

From a mix's sources, draw K mixes from Dirichlet distributions centred on the natural token
proportions (each source's share of the training tokens), train a small proxy model on each
with the bundled trainer (one subprocess per proxy: ``python -m trainer_bridge.train``), fit
a ridge regression from the weights (and their logs) to the target loss, search the simplex
with many candidates drawn the same way, and average the best ones into the chosen mix. Then
train it fresh beside the natural, the uniform (and the mix's own) weights, with two seeds
each, and write the chosen mix with its justification (proxy table, the fit's leave-one-out
error, the comparison) and a plot.

Every run (a proxy or a final run) is a unit of work in its own folder with a ``result.json``
written atomically once the trainer has exited cleanly, keyed by what determines it (the
proxy mix's plan hash and the trainer settings). A rerun of the same search skips finished
units and reruns the others from scratch: a proxy killed mid-run leaves no result, and its
rerun is the same deterministic run (fp32 on CPU, one thread), so the final files are
identical to those of an uninterrupted search. Units run one at a time by default,
``--parallel N`` at a time as local processes, or as Ray tasks with ``--ray`` (one GPU each
when the cluster has GPUs). See docs/mixes.md, "Justifying a mix".
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml

from datapipe import fs
from datapipe.errors import DatapipeError, SpecError
from trainer_bridge.mix import MixPlan, MixSource, MixSpec, ValidationSpec, load_mix, resolve_mix

log = logging.getLogger(__name__)

SEARCH_VERSION = 1
SCALE_RANGE = (0.3, 3.0)   # Dirichlet concentration: alpha = scale * S * natural, scale log-uniform in this range
WEIGHT_DECIMALS = 4        # weights are written with 4 decimals (exact fractions in the plan)
RIDGE_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


@dataclass(kw_only=True, frozen=True)
class SearchConfig:
    """A search: the mix, the proxies, the fit and the final comparison (``datapipe mix search``)."""

    mix: str
    out: str
    proxies: int = 16
    steps: int = 64                 # optimizer steps per proxy
    target: str = "mean_val"        # mean_val (mean validation loss over sources) | source:NAME
    seed: int = 0                   # draws, candidates and the proxies' model seed
    val_tokens: int | None = None   # held-out tokens per source; None: the mix's validation:
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    global_batch: int = 16
    lr: float = 1e-3
    warmup_steps: int = 6
    min_weight: float = 0.005       # every drawn weight is at least this (a mix weight must be > 0)
    candidates: int = 100_000       # simplex points scored by the fit
    top_k: int = 100                # the chosen mix is the mean of the best top_k candidates (RegMix)
    final_steps: int | None = None  # steps of the fresh runs; None: steps
    final_seeds: int = 2            # fresh runs per compared mix (model seeds seed, seed+1, ...); 0: none
    parallel: int = 1               # units at once as local processes
    ray: bool = False               # units as Ray tasks instead (RAY_ADDRESS or a local Ray)
    cpus_per_unit: int = 1          # trainer threads per unit (and num_cpus of its Ray task)
    device: str = "cpu"             # cpu | cuda | auto (the trainer's device)

    def __post_init__(self) -> None:
        where = "mix search"
        for key, low in (("proxies", 3), ("steps", 1), ("dim", 8), ("n_layers", 1), ("n_heads", 1),
                         ("global_batch", 1), ("candidates", 1), ("top_k", 1), ("parallel", 1),
                         ("cpus_per_unit", 1)):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise SpecError(f"{where}: {key} {v!r} must be an integer >= {low}"
                                + (" (a fit needs at least 3 proxies; RegMix uses hundreds)" if key == "proxies"
                                   else ""))
        if self.final_seeds < 0 or self.final_steps is not None and self.final_steps < 1:
            raise SpecError(f"{where}: final_seeds {self.final_seeds} must be >= 0 and final_steps "
                            f"{self.final_steps} >= 1 (or left out: the proxies' steps)")
        if self.top_k > self.candidates:
            raise SpecError(f"{where}: top_k {self.top_k} exceeds candidates {self.candidates}; lower top_k")
        if self.dim % self.n_heads:
            raise SpecError(f"{where}: dim {self.dim} must be a multiple of n_heads {self.n_heads}")
        if not 0 < self.min_weight < 0.5:
            raise SpecError(f"{where}: min_weight {self.min_weight} must be in (0, 0.5), e.g. 0.005")
        if not self.lr > 0 or self.warmup_steps < 0:
            raise SpecError(f"{where}: lr {self.lr} must be > 0 and warmup_steps {self.warmup_steps} >= 0")
        if self.val_tokens is not None and self.val_tokens < 1:
            raise SpecError(f"{where}: val_tokens {self.val_tokens} must be >= 1 (held-out tokens per source)")
        if self.device not in {"cpu", "cuda", "auto"}:
            raise SpecError(f"{where}: device {self.device!r} must be cpu, cuda or auto")
        if self.target != "mean_val" and not (self.target.startswith("source:") and self.target[7:]):
            raise SpecError(f"{where}: target {self.target!r} must be mean_val or source:NAME "
                            "(the validation loss of one source, e.g. source:wiki)")

    @property
    def fresh_steps(self) -> int:
        return self.final_steps or self.steps


# ------------------------------------------------------------------ the mix's sources and draws


@dataclass(kw_only=True, frozen=True)
class Sources:
    """What the search knows of the mix: names, manifests (absolute), natural proportions,
    training windows per source, and the base spec (seq_len, seed, validation, epochs)."""

    spec: MixSpec
    names: tuple[str, ...]
    manifests: tuple[str, ...]
    natural: np.ndarray
    windows: np.ndarray
    given: np.ndarray | None          # the mix's own weights (None when it has a schedule)
    plan_hash: str


def load_sources(cfg: SearchConfig) -> Sources:
    """Resolve the mix (with ``val_tokens`` as its validation split when given) as a plain mix
    over its sources; a mix without a validation split is an error naming the fix."""
    spec = load_mix(cfg.mix)
    validation = ValidationSpec(tokens=cfg.val_tokens) if cfg.val_tokens else spec.validation
    if validation is None:
        raise SpecError(f"mix search: mix {cfg.mix} has no validation split, and the target is a validation "
                        "loss: add `validation: {tokens: N}` to it (docs/mixes.md), or pass --val-tokens N")
    given = None if spec.schedule else np.array([float(s.weight) for s in spec.sources])
    plain = dataclasses.replace(spec, schedule=(), validation=validation,
                                sources=tuple(MixSource(manifest=s.manifest, weight=1.0) for s in spec.sources))
    plan = resolve_mix(plain, warn=False)
    names = plan.names
    if len(set(names)) != len(names):
        raise SpecError(f"mix search: sources {list(names)} repeat a name; a search weighs sources by name")
    if len(names) < 2:
        raise SpecError(f"mix search: mix {cfg.mix} has one source ({names[0]}); there is nothing to weigh")
    if cfg.target.startswith("source:") and cfg.target[7:] not in names:
        raise SpecError(f"mix search: target {cfg.target!r} names no source of the mix; its sources: "
                        f"{', '.join(names)}")
    train = np.array(plan.train_tokens, dtype=np.float64)
    manifests = tuple(str((spec.base_dir / s.manifest).resolve()) for s in spec.sources)
    return Sources(spec=plain, names=names, manifests=manifests, natural=train / train.sum(),
                   windows=np.array(plan.n_windows, dtype=np.float64),
                   given=None if given is None else given / given.sum(), plan_hash=plan.plan_hash)


def _rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([SEARCH_VERSION, seed, *stream])))


def tidy(w: np.ndarray, min_weight: float) -> np.ndarray:
    """Floor at ``min_weight``, renormalise, round to WEIGHT_DECIMALS (rows of ``w``); the
    result sums to 1 within rounding and is what the proxies' mixes say exactly."""
    w = np.maximum(np.atleast_2d(w), min_weight)
    w = w / w.sum(axis=1, keepdims=True)
    w = np.maximum(np.round(w, WEIGHT_DECIMALS), 10.0 ** -WEIGHT_DECIMALS)
    return w / w.sum(axis=1, keepdims=True)


def dirichlet(rng: np.random.Generator, natural: np.ndarray, n: int) -> np.ndarray:
    """``n`` draws around ``natural``: alpha = scale * S * natural, scale log-uniform in SCALE_RANGE
    (small scales reach the corners of the simplex, large ones stay near the natural mix)."""
    lo, hi = np.log(SCALE_RANGE[0]), np.log(SCALE_RANGE[1])
    scale = np.exp(rng.uniform(lo, hi, size=(n, 1)))
    alpha = scale * len(natural) * natural[None, :]
    g = rng.standard_gamma(alpha)
    g = np.maximum(g, 1e-300)
    return g / g.sum(axis=1, keepdims=True)


def epochs(w: np.ndarray, samples: int, windows: np.ndarray) -> np.ndarray:
    """Epochs each source is read at weights ``w`` over ``samples`` samples (rows of ``w``)."""
    return np.atleast_2d(w) * samples / windows[None, :]


def draw_proxy(src: Sources, cfg: SearchConfig, k: int) -> np.ndarray:
    """Proxy ``k``'s weights: a pure function of (seed, k) and the mix, so raising ``--proxies``
    keeps every earlier proxy. Draws reading a source more than ``max_epochs`` in the proxy's
    budget (or in the mix's) are drawn again from the same stream."""
    rng = _rng(cfg.seed, 1, k)
    samples = max(cfg.steps, cfg.fresh_steps) * cfg.global_batch
    for _ in range(10_000):
        w = tidy(dirichlet(rng, src.natural, 1), cfg.min_weight)
        if _fits(w, src, samples)[0]:
            return w[0]
    raise SpecError(f"mix search: no draw in 10,000 keeps every source within max_epochs {src.spec.max_epochs:g}; "
                    "raise the mix's max_epochs, lower --steps or --global-batch, or add data")


def _fits(w: np.ndarray, src: Sources, samples: int) -> np.ndarray:
    total = max(samples, src.spec.token_budget // src.spec.seq_len)
    return (epochs(w, total, src.windows) <= src.spec.max_epochs).all(axis=1)


# ------------------------------------------------------------------ the fit


def _log(w: np.ndarray, min_weight: float) -> np.ndarray:
    return np.log(np.maximum(w, min_weight))


# Feature sets the fit chooses from by leave-one-out error (each with an intercept): the log
# terms bend as a source nears zero (loss falling as a power of the source's share), the
# squares give an interior optimum for a smooth bowl; which one describes the proxies better
# is measured, not assumed.
FEATURES = {
    "w, log w": lambda w, mw: np.concatenate([w, _log(w, mw)], axis=1),
    "w, w^2": lambda w, mw: np.concatenate([w, w * w], axis=1),
    "log w": lambda w, mw: _log(w, mw),
}


def features(w: np.ndarray, min_weight: float, kind: str = "w, log w") -> np.ndarray:
    return FEATURES[kind](np.atleast_2d(w), min_weight)


@dataclass(kw_only=True, frozen=True)
class Fit:
    """Ridge regression from features of the weights to the target, standardised; the
    feature set and the ridge alpha are those of the smallest leave-one-out error (closed
    form: residual / (1 - leverage))."""

    kind: str
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    alpha: float
    loo_pred: np.ndarray
    loo_rmse: float
    loo_mae: float
    loo_spearman: float
    target_std: float
    min_weight: float

    def predict(self, w: np.ndarray) -> np.ndarray:
        x = (features(w, self.min_weight, self.kind) - self.mean) / self.scale
        return x @ self.coef + self.intercept


def _ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float, np.ndarray]:
    """Coefficients, intercept and leave-one-out predictions of ridge on centred ``x``."""
    n, p = x.shape
    ym = y.mean()
    a = x.T @ x + alpha * np.eye(p)
    coef = np.linalg.solve(a, x.T @ (y - ym))
    # hat matrix of the model with an (unpenalised) intercept: H = 11'/n + X (X'X + aI)^-1 X'
    h = np.full(n, 1.0 / n) + np.einsum("ij,ji->i", x, np.linalg.solve(a, x.T))
    resid = y - (x @ coef + ym)
    loo = y - resid / np.maximum(1.0 - h, 1e-9)
    return coef, float(ym), loo


def _rank(v: np.ndarray) -> np.ndarray:
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(len(v))
    return r


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = _rank(a), _rank(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def fit(w: np.ndarray, y: np.ndarray, min_weight: float) -> Fit:
    """The feature set and ridge alpha with the smallest leave-one-out RMSE (ties: the first)."""
    best = None
    for kind in FEATURES:
        f = features(w, min_weight, kind)
        mean, scale = f.mean(axis=0), f.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        x = (f - mean) / scale
        for alpha in RIDGE_ALPHAS:
            coef, ym, loo = _ridge(x, y, alpha)
            rmse = float(np.sqrt(np.mean((loo - y) ** 2)))
            if best is None or rmse < best[0] - 1e-12:
                best = (rmse, kind, mean, scale, alpha, coef, ym, loo)
    rmse, kind, mean, scale, alpha, coef, ym, loo = best
    return Fit(kind=kind, mean=mean, scale=scale, coef=coef, intercept=ym, alpha=alpha, loo_pred=loo,
               loo_rmse=rmse, loo_mae=float(np.mean(np.abs(loo - y))), loo_spearman=spearman(loo, y),
               target_std=float(y.std()), min_weight=min_weight)


def choose(src: Sources, cfg: SearchConfig, model: Fit, proxies: np.ndarray) -> np.ndarray:
    """Score ``candidates`` draws (same distribution as the proxies) and return the mean of
    the ``top_k`` best, tidied (RegMix averages the top candidates: the argmin of a fit on few
    points is noisy). A candidate must keep every source within max_epochs and inside the
    range of weights the proxies tried (per source, their smallest to their largest): a fit on
    a few proxies is not trusted where it extrapolates (on the sample corpus, a quadratic fit
    put 0.78 on the smallest source, predicted 0.9 below every proxy, and measured worse)."""
    rng = _rng(cfg.seed, 2)
    samples = max(cfg.steps, cfg.fresh_steps) * cfg.global_batch
    cand = tidy(dirichlet(rng, src.natural, cfg.candidates), cfg.min_weight)
    lo, hi = proxies.min(axis=0), proxies.max(axis=0)
    cand = cand[_fits(cand, src, samples) & ((cand >= lo) & (cand <= hi)).all(axis=1)]
    if len(cand) < cfg.top_k:
        raise SpecError(f"mix search: only {len(cand)} of {cfg.candidates:,} candidates keep every source within "
                        f"max_epochs {src.spec.max_epochs:g} and inside the proxies' range of weights; raise "
                        "--candidates or --proxies, or lower --top-k")
    pred = model.predict(cand)
    best = np.argsort(pred, kind="stable")[:cfg.top_k]
    return tidy(cand[best].mean(axis=0), cfg.min_weight)[0]


# ------------------------------------------------------------------ units of work


@dataclass(kw_only=True, frozen=True)
class Unit:
    """One training run: a mix over the sources at ``weights`` and the trainer settings."""

    name: str          # p00, ..., final/chosen-s0
    folder: Path
    weights: np.ndarray
    steps: int
    model_seed: int
    mix_seed: int      # the data order's seed (the mix's seed, + s for fresh seed s)
    stale_ok: bool = False   # a result of other weights is rerun, not refused (the chosen mix moves with K)


def _weights_doc(names: Sequence[str], w: np.ndarray) -> dict[str, float]:
    return {n: round(float(x), WEIGHT_DECIMALS + 2) for n, x in zip(names, w)}


def _mix_doc(src: Sources, w: np.ndarray, *, name: str, folder: Path, budget: int, seed: int) -> dict:
    spec = src.spec
    return {"name": name, "seq_len": spec.seq_len, "token_budget": budget, "seed": seed,
            "max_epochs": spec.max_epochs, "warn_epochs": spec.max_epochs,
            "sources": [{"manifest": os.path.relpath(m, folder), "weight": float(f"{x:.{WEIGHT_DECIMALS + 2}f}")}
                        for m, x in zip(src.manifests, w)],
            "validation": {"tokens": spec.validation.tokens}}


def _train_doc(cfg: SearchConfig, unit: Unit, mix: Path, seq_len: int) -> dict:
    return {"mix": str(mix), "model": {"dim": cfg.dim, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
                                       "max_seq_len": seq_len},
            "tp": 1, "dp": 1, "global_batch": cfg.global_batch, "micro_batch": None, "steps": unit.steps,
            "lr": cfg.lr, "warmup_steps": min(cfg.warmup_steps, max(0, unit.steps - 1)), "seed": unit.model_seed,
            "device": cfg.device, "cpu_threads": cfg.cpus_per_unit, "position_ids": True,
            "log_every": max(1, unit.steps // 4), "eval_every": unit.steps, "spike_factor": None,
            "straggler_factor": None, "metrics_path": str(unit.folder / "metrics.jsonl")}


def prepare(src: Sources, cfg: SearchConfig, unit: Unit) -> tuple[dict, str]:
    """Write the unit's mix and trainer config (idempotent); returns (trainer config, key)."""
    unit.folder.mkdir(parents=True, exist_ok=True)
    budget = unit.steps * cfg.global_batch * src.spec.seq_len
    mix_doc = _mix_doc(src, unit.weights, name=f"{src.spec.name}-{unit.name.replace('/', '-')}",
                       folder=unit.folder, budget=budget, seed=unit.mix_seed)
    mix_path = unit.folder / "mix.yaml"
    _write_if_changed(mix_path, yaml.safe_dump(mix_doc, sort_keys=False))
    train_doc = _train_doc(cfg, unit, mix_path.resolve(), src.spec.seq_len)
    _write_if_changed(unit.folder / "train.yaml", yaml.safe_dump(train_doc, sort_keys=False))
    plan_hash = resolve_mix(mix_path, warn=False).plan_hash
    settings = {k: v for k, v in train_doc.items() if k not in {"mix", "metrics_path"}}
    key = hashlib.blake2b(json.dumps({"v": SEARCH_VERSION, "plan": plan_hash, "train": settings,
                                      "target": cfg.target}, sort_keys=True).encode(), digest_size=16).hexdigest()
    return train_doc, key


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        fs.write_bytes(str(path), text.encode("utf-8"))


def read_result(unit: Unit, key: str) -> dict | None:
    """The unit's finished result, or None; a result of another search is refused."""
    path = unit.folder / "result.json"
    if not path.is_file():
        return None
    got = json.loads(path.read_text(encoding="utf-8"))
    if got.get("key") != key and unit.stale_ok:
        return None
    if got.get("key") != key:
        raise SpecError(f"mix search: {path} holds the result of a search with other settings (the mix, its "
                        "shards, the model or the steps changed); use another --out, or delete that folder")
    return got


def run_unit(folder: str, key: str, names: Sequence[str], target: str, threads: int) -> dict:
    """Train one unit from scratch in a subprocess and write its ``result.json`` atomically.
    Runs in this process's thread or in a Ray worker; everything it needs is in ``folder``."""
    folder_p = Path(folder)
    metrics = folder_p / "metrics.jsonl"
    for stale in folder_p.glob("metrics.jsonl*"):   # a killed earlier attempt: start over
        stale.unlink()
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    t0 = time.monotonic()
    with fs.open_stream(str(folder_p / "train.log"), append=False, encoding=None) as logf:
        rc = subprocess.run([sys.executable, "-m", "trainer_bridge.train", "--config", str(folder_p / "train.yaml")],
                            cwd=folder, env=env, stdout=logf, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        tail = (folder_p / "train.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise DatapipeError(f"mix search: the trainer failed on {folder} (exit {rc}); last lines of its train.log:\n"
                            + "\n".join(tail))
    steps = yaml.safe_load((folder_p / "train.yaml").read_text(encoding="utf-8"))["steps"]
    rows = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines()
            if line.strip()] if metrics.is_file() else []
    last = rows[-1] if rows else {}
    if last.get("step") != steps or not last.get("val_loss"):   # stopped early (SIGTERM / Ctrl-C): no result
        raise DatapipeError(f"mix search: the trainer in {folder} stopped at step {last.get('step', 0)} of {steps} "
                            "(interrupted?); run the same search again: finished runs are kept, this one reruns")
    val = {n: float(last["val_loss"][n]) for n in names}
    result = {"key": key, "steps": int(last["step"]), "train_loss": float(last["loss"]), "val_loss": val,
              "target": target_value(val, target)}
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    fs.write_bytes(str(folder_p / "result.json"), text.encode())
    result = json.loads(text)   # exactly what a later run reads back (key order, float round trip)
    result["seconds"] = time.monotonic() - t0
    return result


def target_value(val: dict[str, float], target: str) -> float:
    return float(np.mean(list(val.values()))) if target == "mean_val" else float(val[target[7:]])


def run_units(src: Sources, cfg: SearchConfig, units: Sequence[Unit], *, echo: Any = print) -> list[dict]:
    """Results of ``units`` in order: finished ones read back, the rest trained (one at a
    time, ``parallel`` at a time, or as Ray tasks)."""
    results: list[dict | None] = []
    todo = []
    for u in units:
        _, key = prepare(src, cfg, u)
        got = read_result(u, key)
        results.append(got)
        if got is None:
            todo.append((len(results) - 1, u, key))
        else:
            echo(f"{u.name}: done earlier, {cfg.target} {got['target']:.4f} (skipped)")
    if not todo:
        return results   # type: ignore[return-value]
    args = [(str(u.folder), key, src.names, cfg.target, cfg.cpus_per_unit) for _, u, key in todo]
    if cfg.ray:
        outs = _run_ray(cfg, args)
        for (_, u, _), r in zip(todo, outs):
            echo(f"{u.name}: {cfg.target} {r['target']:.4f} ({r['seconds']:.0f} s, a Ray task)")
    else:
        with ThreadPoolExecutor(max_workers=cfg.parallel) as pool:
            futures = [pool.submit(run_unit, *a) for a in args]
            outs = []
            for (_, u, _), fut in zip(todo, futures):
                r = fut.result()
                echo(f"{u.name}: {cfg.target} {r['target']:.4f} ({r['seconds']:.0f} s)")
                outs.append(r)
    for (i, _, _), r in zip(todo, outs):
        r.pop("seconds", None)
        results[i] = r
    return results   # type: ignore[return-value]


def _run_ray(cfg: SearchConfig, args: list[tuple]) -> list[dict]:
    import ray

    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, log_to_driver=False)
    gpus = 1 if cfg.device != "cpu" and ray.cluster_resources().get("GPU", 0) >= 1 else 0
    task = ray.remote(num_cpus=cfg.cpus_per_unit, num_gpus=gpus, max_retries=0)(run_unit)
    return ray.get([task.remote(*a) for a in args])


# ------------------------------------------------------------------ the search


def _fmt_w(names: Sequence[str], w: np.ndarray) -> str:
    return " ".join(f"{n} {x:.3f}" for n, x in zip(names, w))


def search(cfg: SearchConfig, *, echo: Any = print) -> dict:
    """Run (or resume) the search; writes everything under ``cfg.out`` and returns the summary."""
    src = load_sources(cfg)
    out = Path(cfg.out).resolve()
    names, S = src.names, len(src.names)
    echo(f"mix search: {S} sources ({', '.join(names)}), natural {_fmt_w(names, src.natural)}; "
         f"{cfg.proxies} proxies of {cfg.steps} steps x {cfg.global_batch} x {src.spec.seq_len} tokens, "
         f"model dim {cfg.dim} x {cfg.n_layers} layers; target {cfg.target}")
    weights = np.stack([draw_proxy(src, cfg, k) for k in range(cfg.proxies)])
    proxies = [Unit(name=f"p{k:02d}", folder=out / "proxies" / f"p{k:02d}", weights=weights[k], steps=cfg.steps,
                    model_seed=cfg.seed, mix_seed=src.spec.seed) for k in range(cfg.proxies)]
    res = run_units(src, cfg, proxies, echo=echo)
    y = np.array([r["target"] for r in res])
    model = fit(weights, y, cfg.min_weight)
    echo(f"fit: ridge on {model.kind}, alpha {model.alpha:g}, leave-one-out RMSE {model.loo_rmse:.4f} (MAE {model.loo_mae:.4f}, "
         f"Spearman {model.loo_spearman:.2f}) against a spread of {model.target_std:.4f} across proxies")
    chosen = choose(src, cfg, model, weights)
    mixes = {"chosen": chosen, "natural": tidy(src.natural, cfg.min_weight)[0],
             "uniform": np.full(S, 1.0 / S)}
    if src.given is not None:
        mixes["given"] = tidy(src.given, cfg.min_weight)[0]
    echo(f"chosen: {_fmt_w(names, chosen)}")
    finals = [Unit(name=f"final/{m}-s{s}", folder=out / "final" / f"{m}-s{s}", weights=w, steps=cfg.fresh_steps,
                   model_seed=cfg.seed + s, mix_seed=src.spec.seed + s, stale_ok=m == "chosen")
              for m, w in mixes.items() for s in range(cfg.final_seeds)]
    fres = run_units(src, cfg, finals, echo=echo)
    compare = []
    for m, w in mixes.items():
        measured = [r["target"] for u, r in zip(finals, fres) if u.name.startswith(f"final/{m}-")]
        compare.append({"mix": m, "weights": _weights_doc(names, w), "predicted": float(model.predict(w)[0]),
                        "measured": measured, "mean": float(np.mean(measured)) if measured else None,
                        "spread": float(max(measured) - min(measured)) if measured else None})
    summary = {
        "version": SEARCH_VERSION, "mix": str(cfg.mix), "plan_hash": src.plan_hash, "target": cfg.target,
        "settings": {k: v for k, v in dataclasses.asdict(cfg).items()
                     if k not in {"mix", "out", "parallel", "ray"}},
        "natural": _weights_doc(names, src.natural),
        "proxies": [{"proxy": u.name, "weights": _weights_doc(names, u.weights), "val_loss": r["val_loss"],
                     "target": r["target"], "loo_predicted": float(p)}
                    for u, r, p in zip(proxies, res, model.loo_pred)],
        "fit": {"model": f"ridge on {model.kind} (standardised)", "alpha": model.alpha,
                "loo_rmse": model.loo_rmse, "loo_mae": model.loo_mae, "loo_spearman": model.loo_spearman,
                "target_std_across_proxies": model.target_std},
        "compare": compare, "verdict": verdict(compare),
    }
    echo(summary["verdict"])
    fs.write_bytes(str(out / "search.json"), (json.dumps(summary, indent=1) + "\n").encode())
    chosen_path = write_chosen(src, cfg, chosen, summary, out)
    (out / "chosen.md").parent.mkdir(parents=True, exist_ok=True)
    fs.write_bytes(str(out / "chosen.md"), justification(summary, names).encode("utf-8"))
    plot_search(summary, out / "search.png")
    echo(f"wrote {chosen_path}, {out / 'chosen.md'}, {out / 'search.json'}, {out / 'search.png'}")
    return summary


def verdict(compare: list[dict]) -> str:
    by = {c["mix"]: c for c in compare}
    ch = by["chosen"]
    if ch["mean"] is None:
        return "no fresh runs (final_seeds 0): the chosen mix is the fit's prediction only"
    spread = max(c["spread"] for c in compare)
    parts, wins = [], True
    for other in ("natural", "uniform"):
        gap = by[other]["mean"] - ch["mean"]
        ok = gap > spread
        wins &= ok
        parts.append(f"{gap:+.4f} vs {other}")
    n = len(ch["measured"])
    if n < 2:
        return (f"verdict: one fresh seed per mix ({', '.join(parts)}): no seed-to-seed spread to compare with; "
                "run with --final-seeds 2 or more")
    what = "beats" if wins else "does not beat"
    return (f"verdict: the chosen mix {what} both the natural and the uniform mix by more than the seed-to-seed "
            f"spread ({', '.join(parts)}; the largest spread over {n} seeds of any compared mix: {spread:.4f})")


def write_chosen(src: Sources, cfg: SearchConfig, w: np.ndarray, summary: dict, out: Path) -> Path:
    """``chosen.yaml``: the mix's settings (budget, seed, validation) with the chosen weights,
    resolved before it is written; the header says where its justification is."""
    path = out / "chosen.yaml"
    doc = _mix_doc(src, w, name=f"{src.spec.name}-searched", folder=out, budget=src.spec.token_budget,
                   seed=src.spec.seed)
    doc["warn_epochs"] = src.spec.warn_epochs
    fit_ = summary["fit"]
    head = (f"# written by `datapipe mix search` from {cfg.mix} ({cfg.proxies} proxies of {cfg.steps} steps, "
            f"target {cfg.target});\n# fit: leave-one-out RMSE {fit_['loo_rmse']:.4f}, Spearman "
            f"{fit_['loo_spearman']:.2f}; {summary['verdict'][9:]}\n"
            "# justification: chosen.md (proxy table, fit error, comparison), search.json, search.png\n")
    text = head + yaml.safe_dump(doc, sort_keys=False)
    tmp = out / ".chosen.check.yaml"
    fs.write_text(str(tmp), text)
    try:
        resolve_mix(tmp, warn=False)   # a chosen mix that would not plan is never written
    finally:
        fs.delete_file(str(tmp))
    _write_if_changed(path, text)
    return path


def justification(summary: dict, names: Sequence[str]) -> str:
    f = summary["fit"]
    lines = [f"# Mix search: {summary['mix']}", "",
             f"Target: `{summary['target']}` (validation loss at the last step). Plan of the sources: "
             f"`{summary['plan_hash']}`. Settings: `{json.dumps(summary['settings'], sort_keys=True)}`.", "",
             "## Proxies", "",
             "| proxy | " + " | ".join(names) + " | target | leave-one-out prediction |",
             "| --- | " + " | ".join("---:" for _ in names) + " | ---: | ---: |"]
    for p in summary["proxies"]:
        lines.append(f"| {p['proxy']} | " + " | ".join(f"{p['weights'][n]:.3f}" for n in names)
                     + f" | {p['target']:.4f} | {p['loo_predicted']:.4f} |")
    lines += ["", "## Fit", "",
              f"{f['model']}, alpha {f['alpha']:g} (feature set and alpha chosen by leave-one-out error among "
              f"{'; '.join(f'`{k}`' for k in FEATURES)}). Leave-one-out RMSE "
              f"{f['loo_rmse']:.4f}, MAE {f['loo_mae']:.4f}, Spearman {f['loo_spearman']:.2f}; the target's "
              f"standard deviation across proxies is {f['target_std_across_proxies']:.4f}.", "",
              "## Comparison (trained fresh)", "",
              "| mix | " + " | ".join(names) + " | predicted | measured (per seed) | mean | spread |",
              "| --- | " + " | ".join("---:" for _ in names) + " | ---: | --- | ---: | ---: |"]
    for c in summary["compare"]:
        meas = ", ".join(f"{v:.4f}" for v in c["measured"]) or "-"
        lines.append(f"| {c['mix']} | " + " | ".join(f"{c['weights'][n]:.3f}" for n in names)
                     + f" | {c['predicted']:.4f} | {meas} | "
                     + (f"{c['mean']:.4f} | {c['spread']:.4f} |" if c["mean"] is not None else "- | - |"))
    lines += ["", summary["verdict"], ""]
    return "\n".join(lines)


def plot_search(summary: dict, out: Path) -> Path:
    """PNG (Pillow, as ``mix plot``): top, each proxy's measured target against its leave-one-out
    prediction; bottom, the compared mixes' measured targets per seed and the fit's prediction."""
    from PIL import Image, ImageDraw, ImageFont

    from trainer_bridge.plot import PANEL_H, W, _Panel

    font = ImageFont.load_default(size=13)
    img = Image.new("RGB", (W, 2 * PANEL_H + 10), "white")
    d = ImageDraw.Draw(img)
    ys = [p["target"] for p in summary["proxies"]]
    ps = [p["loo_predicted"] for p in summary["proxies"]]
    comp = summary["compare"]
    allv = ys + ps + [c["predicted"] for c in comp] + [v for c in comp for v in c["measured"]]
    lo, hi = min(allv), max(allv)
    pad = (hi - lo) * 0.08 or 0.05
    rng_ = (lo - pad, hi + pad)
    top = _Panel(d, font, 0, rng_, rng_, f"proxies: measured {summary['target']} (x) vs leave-one-out prediction "
                 f"(y); RMSE {summary['fit']['loo_rmse']:.4f}", "measured", "predicted")
    top.line([(rng_[0], rng_[0]), (rng_[1], rng_[1])], "#bbbbbb", width=1)
    top.dots(list(zip(ys, ps)), "#1f77b4", r=4)
    bottom = _Panel(d, font, PANEL_H, (-0.5, len(comp) - 0.5), rng_,
                    "trained fresh: measured per seed (dots), predicted (ring)", "", summary["target"])
    d.rectangle([bottom.x0 - 20, bottom.y1 + 2, bottom.x1 + 20, bottom.y1 + 20], fill="white")  # no numeric x ticks
    colors = ["#d62728", "#2ca02c", "#ff7f0e", "#9467bd"]
    for i, c in enumerate(comp):
        bottom.dots([(i, v) for v in c["measured"]], colors[i % len(colors)], r=4)
        cx, cy = bottom.px(i), bottom.py(c["predicted"])
        d.ellipse([cx - 7, cy - 7, cx + 7, cy + 7], outline="black", width=2)
        d.text((cx, bottom.y1 + 8), c["mix"], fill="black", font=font, anchor="mt")
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out, optimize=True)
    return out


# ------------------------------------------------------------------ CLI


def _cmd_search(args: argparse.Namespace) -> int:
    target = args.target
    try:
        cfg = SearchConfig(mix=args.mix, out=args.out, proxies=args.proxies, steps=args.steps, target=target,
                           seed=args.seed, val_tokens=args.val_tokens, dim=args.dim, n_layers=args.layers,
                           n_heads=args.heads, global_batch=args.global_batch, lr=args.lr,
                           candidates=args.candidates, top_k=args.top_k, final_steps=args.final_steps,
                           final_seeds=args.final_seeds, parallel=args.parallel, ray=args.ray,
                           cpus_per_unit=args.cpus_per_proxy, device=args.device)
        search(cfg, echo=lambda s: print(s, flush=True))
    except KeyboardInterrupt:
        print(f"interrupted: finished runs are kept under {args.out}; run the same command again to go on",
              file=sys.stderr)
        return 130
    except DatapipeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def add_cli(sub: "argparse._SubParsersAction") -> argparse.ArgumentParser:
    """``mix search`` under an existing ``mix`` subparser set."""
    s = sub.add_parser("search", help="justify a mix: proxy runs on drawn mixes, a fit, the predicted best, "
                                      "checked by fresh runs (docs/mixes.md, Justifying a mix)")
    s.add_argument("mix", help="mix manifest YAML (its sources are searched over)")
    s.add_argument("--proxies", type=int, default=16, help="proxy runs K (default 16)")
    s.add_argument("--steps", type=int, default=64, help="optimizer steps per proxy (default 64)")
    s.add_argument("--target", default="mean_val", help="mean_val (default) or source:NAME")
    s.add_argument("--out", required=True, help="folder for the proxies, the fit and the chosen mix")
    s.add_argument("--seed", type=int, default=0, help="seed of the draws, candidates and models (default 0)")
    s.add_argument("--val-tokens", type=int, default=None,
                   help="held-out tokens per source (default: the mix's validation:)")
    s.add_argument("--dim", type=int, default=64)
    s.add_argument("--layers", type=int, default=2)
    s.add_argument("--heads", type=int, default=4)
    s.add_argument("--global-batch", type=int, default=16)
    s.add_argument("--lr", type=float, default=1e-3)
    s.add_argument("--candidates", type=int, default=100_000, help="simplex points scored by the fit")
    s.add_argument("--top-k", type=int, default=100, help="the chosen mix averages the best top-k candidates")
    s.add_argument("--final-steps", type=int, default=None, help="steps of the fresh runs (default: --steps)")
    s.add_argument("--final-seeds", type=int, default=2, help="fresh runs per compared mix (default 2; 0: none)")
    s.add_argument("--parallel", type=int, default=1, help="runs at once as local processes (default 1)")
    s.add_argument("--ray", action="store_true", help="run proxies as Ray tasks (RAY_ADDRESS or a local Ray)")
    s.add_argument("--cpus-per-proxy", type=int, default=1, help="trainer threads (and Ray num_cpus) per run")
    s.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    s.set_defaults(func=_cmd_search)
    return s


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m trainer_bridge.search MIX ...`` (the same as ``datapipe mix search``)."""
    parser = argparse.ArgumentParser(prog="python -m trainer_bridge.search")
    sub = parser.add_subparsers(dest="command", required=True)
    add_cli(sub)
    args = parser.parse_args(["search", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    raise SystemExit(main())
