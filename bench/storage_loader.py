"""Loader over shards on S3 (a real S3 API server: moto on loopback) versus local disk.

    python bench/storage_loader.py [--tokens 4000000] [--sources 3]

The loader memory-maps shards, so shards on an object store are read through a local
cache keyed by content (``datapipe.fs.local_tree``): the first open downloads each
source's folder once, later opens (other ranks on the node, restarts) reuse it. The
table prints, from one run: local disk (the baseline), S3 cold (download + read),
S3 warm (cache hit), and the alternative we did not choose, one ranged GET per sample
window, so the choice is visible in numbers. Timings on a shared, loaded machine are
noisy; compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loader import synth_source  # noqa: E402

from datapipe import fs  # noqa: E402
from trainer_bridge.loader import LoaderConfig, MixLoader  # noqa: E402
from trainer_bridge.mix import MixSource, MixSpec, resolve_mix  # noqa: E402

SEQ = 2048


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_all(manifests: list[str], tokens: int, base: Path) -> tuple[float, float, int, np.ndarray]:
    """(seconds to open the mix, seconds to read every batch, tokens read, first batch)."""
    t0 = time.perf_counter()
    spec = MixSpec(name="bench", seq_len=SEQ, token_budget=tokens, seed=1, max_epochs=10.0, warn_epochs=10.0,
                   sources=tuple(MixSource(manifest=m, weight=1.0) for m in manifests), base_dir=base)
    plan = resolve_mix(spec)
    opened = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = 0
    first = None
    with MixLoader(plan, LoaderConfig(global_batch=16)) as ld:
        for b in ld:
            n += b["input_ids"].numel()
            first = b["input_ids"].numpy() if first is None else first
    return opened, time.perf_counter() - t0, n, first


def _ranged(uri_manifests: list[str], windows: int) -> tuple[float, int]:
    """One ranged GET per window of SEQ+1 tokens at random offsets (the alternative)."""
    import json

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    n = 0
    for m in uri_manifests:
        man = json.loads(fs.read_text(m))
        shard = man["shards"][0]
        pafs, path = fs.resolve(fs.join(fs.parent(m), shard["bin"]))
        with pafs.open_input_file(path) as fh:
            for _ in range(windows // len(uri_manifests)):
                off = int(rng.integers(0, shard["tokens"] - SEQ - 1)) * 2
                n += len(fh.read_at((SEQ + 1) * 2, off)) // 2
    return time.perf_counter() - t0, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=4_000_000, help="tokens per source")
    ap.add_argument("--sources", type=int, default=3)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"tokens": 100_000, "sources": 2})
    tmp = Path(tempfile.mkdtemp(prefix="bench-storage-"))
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
                       "DATAPIPE_CACHE": str(tmp / "cache")})
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
        import boto3

        boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"]).create_bucket(Bucket="bench")
        local, remote = [], []
        for i in range(args.sources):
            name = f"src{i}"
            m = synth_source(tmp / "shards" / name, name, args.tokens, 1 << 20, seed=i)
            fs.upload_tree(str(m.parent), f"s3://bench/shards/{name}")
            local.append(str(m))
            remote.append(f"s3://bench/shards/{name}/manifest.json")
        budget = args.tokens * args.sources // 2
        rows = []
        _read_all(local, budget, tmp)   # warm-up: imports, threads, page cache
        o, t, n, ref = _read_all(local, budget, tmp)
        rows.append(("local disk (baseline)", o, t, n))
        o, t, n, cold = _read_all(remote, budget, tmp)
        rows.append(("S3 via cache, cold (download on open)", o, t, n))
        o, t, n, warm = _read_all(remote, budget, tmp)
        rows.append(("S3 via cache, warm (cache hit)", o, t, n))
        assert np.array_equal(ref, cold) and np.array_equal(ref, warm), "S3 batches differ from local"
        windows = 400
        t, n = _ranged(remote, windows)
        rows.append((f"S3 ranged GET per window ({windows} windows)", 0.0, t, n))
        base = rows[0][3] / rows[0][2]
        print(f"{'how':<40} {'open s':>7} {'read s':>7} {'tokens':>11} {'read tok/s':>12} {'vs local':>9}")
        for how, o, t, n in rows:
            print(f"{how:<40} {o:>7.2f} {t:>7.2f} {n:>11,} {n / t:>12,.0f} {n / t / base:>8.2f}x")
        print(f"data: {args.sources} sources x {args.tokens:,} tokens (uint16), {SEQ}-token windows")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
