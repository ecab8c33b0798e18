"""Code filters, licenses and secrets: decision quality on labelled real package files
and throughput beside the raw library calls, in one run.

Decisions (labels from bench/data/build_code_labels.py: npm tarballs' ``X.min.js``
beside ``X.js``, the venv's ``*_pb2.py`` stubs against their packages' other modules,
``*.dist-info`` license files against METADATA):

* **minified**, **generated**: precision and recall of ``code_filter`` dropping a file
  for that reason, as deployed (file names visible) and on content alone (every file
  renamed ``f<i>.<ext>``: what the name rules cannot help with);
* **license**: exact SPDX id of each license text, and precision/recall of the
  permissive allow-list decision (positive: allowed).

Throughput (CPU time of this process, ``time.process_time``: per core; best of
``--repeat``) on real code: the standard library's ``.py`` files plus the npm files:

* ``code_filter`` stage vs **bigcode-ref**: the same three StarCoder line/character
  rules written the way BigCode's preprocessing does them (``splitlines``, ``len``,
  ``str.isalnum`` per character), per file in Python;
* ``license`` stage vs **license-expression**: the library's ``validate`` of one
  expression per file (the raw call under the metadata path);
* ``pii`` restricted to the secret types vs **detect-secrets** (``scan_file`` with its
  default plugins), on a subset for detect-secrets (it is slow).

Secrets quality: recall on bench/data/build_secret_set.py (provider-format keys in real
file shapes) for the full detector, the shape-only detector (without
``stages/pii/secrets.py``) and detect-secrets; false positives on the standard library
(real code with no real secrets): files with any detection, detections per MB.

    python bench/code_filters.py [--repeat 3] [--cache ~/.cache/datapipe/code_labels]
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sysconfig  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402

from datapipe import schema as S  # noqa: E402
from stages.code import CodeFilter, CodeFilterConfig, LicenseFilter  # noqa: E402
from stages.code.license import PERMISSIVE, allowed, license_of_text  # noqa: E402
from stages.pii import PiiStage  # noqa: E402
from stages.pii.detect import Detector  # noqa: E402
from stages.pii.stage import PiiConfig  # noqa: E402

SECRET_TYPES = ("api_key", "private_key", "jwt", "password")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, Path(_HERE) / "data" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def code_batch(paths, texts, languages, repos=None) -> pa.Table:
    n = len(texts)
    b = S.make_batch(source="code", ids=[f"c/{i}" for i in range(n)], texts=list(texts))
    for col, vals in (("repo", repos or ["r"] * n), ("path", list(paths)), ("language", list(languages)),
                      ("license", [None] * n)):
        b = b.append_column(col, pa.array(vals, pa.string()))
    return b


def reasons(stage, batch) -> list[str | None]:
    out, _ = stage.process(batch)
    return [r.split(":", 1)[1] if r else None for r in out.column(S.REJECT_REASON).to_pylist()]


def pr(pred: list[bool], gold: list[bool]) -> tuple[float, float, int, int, int]:
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    fn = sum(g and not p for p, g in zip(pred, gold))
    return tp / max(tp + fp, 1), tp / max(tp + fn, 1), tp, fp, fn


def best_cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return max(best, 1e-9)


def bigcode_ref(texts: list[str]) -> list[bool]:
    """BigCode-style per-file Python: max line 1000, mean line 100, alnum 0.25."""
    keep = []
    for t in texts:
        lines = t.splitlines()
        lens = [len(x) for x in lines] or [0]
        alnum = sum(c.isalnum() for c in t) / max(len(t), 1)
        keep.append(max(lens) <= 1000 and sum(lens) / len(lens) <= 100 and alnum >= 0.25)
    return keep


def decisions(labels) -> None:
    print("\n## decisions on labelled real package files\n")
    print(f"{'decision':26s} {'files':>6s} {'precision':>9s} {'recall':>7s} {'tp':>5s} {'fp':>4s} {'fn':>4s}")
    no_paths = CodeFilter(CodeFilterConfig(vendored_dirs=()))  # npm builds live in dist/: judge the rule itself
    for name, items, positive, rule in (("minified", labels.minified_set(ARGS.cache), "minified", "minified"),
                                        ("generated", labels.generated_set(SITE), "generated", "generated")):
        gold = [x.label == positive for x in items]
        for mode in ("names", "content only"):
            paths = [x.path if mode == "names" else f"f{i}.{x.path.rsplit('.', 1)[-1]}" for i, x in enumerate(items)]
            got = reasons(no_paths, code_batch(paths, [x.text for x in items], [x.language for x in items]))
            p, r, tp, fp, fn = pr([g == rule for g in got], gold)
            print(f"{name + ' (' + mode + ')':26s} {len(items):6d} {p:9.3f} {r:7.3f} {tp:5d} {fp:4d} {fn:4d}")
            if mode == "content only" and ARGS.verbose:
                for x, g, gl in zip(items, got, gold):
                    if (g == rule) != gl:
                        print(f"    {'FP' if gl is False else 'FN'} {x.package} {x.path}")
    lic = labels.license_set(SITE)
    got = [license_of_text(x.text) for x in lic]
    exact = sum(g == x.label for g, x in zip(got, lic))
    allow = frozenset(PERMISSIVE)
    p, r, tp, fp, fn = pr([bool(g) and allowed(g, allow) for g in got], [x.label in allow for x in lic])
    print(f"{'license id (exact SPDX)':26s} {len(lic):6d} {'':>9s} {exact / max(len(lic), 1):7.3f}  "
          f"({exact}/{len(lic)} right; {sum(g is None for g in got)} unknown)")
    print(f"{'license allowed (default)':26s} {len(lic):6d} {p:9.3f} {r:7.3f} {tp:5d} {fp:4d} {fn:4d}")
    if ARGS.verbose:
        for g, x in zip(got, lic):
            if g != x.label:
                print(f"    {x.package}: label {x.label}, got {g}")


def throughput(corpus: list[tuple[str, str, str]], repeat: int) -> None:
    print("\n## throughput (CPU seconds of this process: per core; measured on a shared machine)\n")
    paths, texts, langs = zip(*corpus)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    n = len(texts)
    batches = [code_batch(paths[i:i + 1000], texts[i:i + 1000], langs[i:i + 1000]) for i in range(0, n, 1000)]
    stage = CodeFilter()
    stage.ensure_setup()
    lic = LicenseFilter()
    lic.ensure_setup()
    from license_expression import get_spdx_licensing

    licensing = get_spdx_licensing()
    metas = [("MIT", "Apache-2.0", "bsd-3-clause", "GPL-2.0+", "MIT OR Apache-2.0")[i % 5] for i in range(n)]
    rows = [
        ("code_filter stage", lambda: [stage.process(b) for b in batches]),
        ("bigcode-ref (3 rules)", lambda: bigcode_ref(list(texts))),
        ("license stage", lambda: [lic.process(b) for b in batches]),
        ("license-expression validate", lambda: [licensing.validate(m) for m in metas]),
    ]
    print(f"{'what':30s} {'files':>7s} {'MB':>6s} {'files/s':>9s} {'MB/s':>7s}")
    for name, fn in rows:
        s = best_cpu(fn, repeat)
        print(f"{name:30s} {n:7d} {mb:6.1f} {n / s:9.0f} {mb / s:7.1f}")
    pii = PiiStage(PiiConfig(types=SECRET_TYPES))
    pii.ensure_setup()
    pbatches = [S.make_batch(source="c", ids=[f"{i}" for i in range(len(b))], texts=b.column("text").to_pylist())
                for b in batches]
    s = best_cpu(lambda: [pii.process(b) for b in pbatches], repeat)
    print(f"{'pii (secret types) stage':30s} {n:7d} {mb:6.1f} {n / s:9.0f} {mb / s:7.1f}")
    sub = [t for t in texts if t][: ARGS.ds_files]
    ds = detect_secrets_scan(sub)
    if ds is not None:
        sub_mb = sum(len(t.encode()) for t in sub) / 1e6
        print(f"{'detect-secrets scan_file':30s} {len(sub):7d} {sub_mb:6.1f} {len(sub) / ds[0]:9.0f} "
              f"{sub_mb / ds[0]:7.1f}")


def detect_secrets_scan(texts: list[str]):
    """(CPU seconds, [[(line, value), ...] per text]) with detect-secrets' defaults, or
    None when it is not installed."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        print("detect-secrets not installed: pip install detect-secrets==1.5.0 to compare")
        return None
    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, t in enumerate(texts):
            p = Path(d) / f"f{i}.txt"
            p.write_text(t, encoding="utf-8")
            files.append(str(p))
        found = []
        t0 = time.process_time()
        with default_settings():
            for f in files:
                sc = SecretsCollection()
                sc.scan_file(f)
                found.append([(s.line_number, s.secret_value) for _, s in sc])
        return time.process_time() - t0, found


def secrets_quality() -> None:
    print("\n## secrets: recall on realistic keys in realistic files, false positives on real code\n")
    ss = _load("build_secret_set").build(seed=0, copies=3)
    gold = [(f, a, b, k) for f in ss for a, b, k in f.gold]
    full, shape = Detector(), Detector()
    shape.families = tuple(f for f in shape.families if f != "secret_assign")
    print(f"{'detector':34s} {'recall':>7s} {'found':>6s} {'of':>4s}")
    for name, det in (("datapipe (shapes + assignments)", full), ("datapipe shapes only (no secrets.py)", shape)):
        spans = {id(f): [s for s in det.find(f.text, det.families) if s.type in SECRET_TYPES] for f in ss}
        hit = sum(any(s.start <= a and s.end >= b for s in spans[id(f)]) for f, a, b, _ in gold)
        print(f"{name:34s} {hit / len(gold):7.3f} {hit:6d} {len(gold):4d}")
    ds = detect_secrets_scan([f.text for f in ss])
    if ds is not None:
        hit = 0
        for f, a, b, _ in gold:
            line = f.text.count("\n", 0, a) + 1
            value = f.text[a:b]
            found = ds[1][ss.index(f)]
            hit += any(ln == line and (v and (v in value or value in v)) for ln, v in found)
        print(f"{'detect-secrets 1.5 (defaults)':34s} {hit / len(gold):7.3f} {hit:6d} {len(gold):4d}")
    clean = [t for _, t, _ in stdlib_corpus()]
    mb = sum(len(t.encode()) for t in clean) / 1e6
    spans = [[s for s in full.find(t) if s.type in SECRET_TYPES] for t in clean]
    files = sum(bool(s) for s in spans)
    print(f"\nfalse positives on the standard library ({len(clean)} files, {mb:.1f} MB, no real secrets):")
    print(f"  datapipe:        {files} files with a detection ({files / len(clean):.2%}), "
          f"{sum(map(len, spans)) / mb:.2f} detections/MB")
    if ARGS.verbose:
        for t, sp in zip(clean, spans):
            for s in sp:
                print(f"    {s.type}: {t[s.start:s.end][:60]!r}")
    sub = clean[: ARGS.ds_files]
    ds = detect_secrets_scan(sub)
    if ds is not None:
        smb = sum(len(t.encode()) for t in sub) / 1e6
        ours = sum(bool(s) for s in spans[: len(sub)])
        print(f"  detect-secrets:  {sum(bool(x) for x in ds[1])} files with a detection of {len(sub)} "
              f"(datapipe on the same files: {ours}), {sum(map(len, ds[1])) / smb:.2f} detections/MB")


def stdlib_corpus() -> list[tuple[str, str, str]]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for p in sorted(lib.rglob("*.py")):
        if "site-packages" in p.parts or "dist-packages" in p.parts:
            continue
        try:
            out.append((str(p.relative_to(lib)), p.read_text(encoding="utf-8"), "Python"))
        except (UnicodeDecodeError, OSError):
            continue
    return out


def main() -> None:
    global ARGS, SITE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "datapipe" / "code_labels",
                    help="npm tarball cache of bench/data/build_code_labels.py")
    ap.add_argument("--ds-files", type=int, default=300, help="files detect-secrets scans (it is slow)")
    ap.add_argument("--verbose", action="store_true", help="list every wrong decision")
    from bench import _smoke  # the repository is on sys.path (above)

    ARGS = _smoke.parse(ap, {"repeat": 1, "ds_files": 5})
    SITE = Path(next(p for p in sys.path if p.endswith("site-packages")))
    labels = _load("build_code_labels")
    decisions(labels)
    corpus = stdlib_corpus() + [(x.path, x.text, x.language) for x in labels.minified_set(ARGS.cache)]
    throughput(corpus, ARGS.repeat)
    secrets_quality()


ARGS: argparse.Namespace
SITE: Path

if __name__ == "__main__":
    main()
