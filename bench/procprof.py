"""Where a command's CPU-seconds go, per process kind, and how busy the cores were.

Runs a command, samples every process below it (and Ray's processes that it starts) every
``--every`` seconds from /proc via psutil, and prints CPU-seconds (user+system) per process
kind (the driver, Ray's own processes, Ray Data actors/tasks by their ``ray::`` title, the
datatrove worker pool, ...) plus the machine's busy-core timeline from /proc/stat.

Run: ``python bench/procprof.py [--every 0.5] [--json OUT] -- python bench/peers.py --workloads warc --sizes 3300``

The machine may be shared: a kind's CPU-seconds are its own processes' (not contended
away), the busy-core timeline is the whole machine's (other users included).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path


def kind(p) -> str:
    """A short label for one process."""
    try:
        name = p.name()
        cmd = p.cmdline()
    except Exception:
        return "?"
    title = cmd[0] if cmd else name  # Ray workers set their title in argv, not in comm
    if title.startswith("ray::"):
        return title.split(" ")[0].split(".")[0] if "(" not in title else title.split(")")[0] + ")"  # ray::MapWorker(...), ray::IDLE, ray::_StatsActor, ...
    joined = " ".join(cmd[:4])
    for key in ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py", "runtime_env", "plasma"):
        if key in joined or key in name:
            return f"ray:{key}"
    if "-m datapipe" in " ".join(cmd) or "datapipe run" in " ".join(cmd):
        return "datapipe driver"
    if "--datatrove" in cmd:
        try:
            worker = "--datatrove" in p.parent().cmdline()
        except Exception:
            worker = False
        return "datatrove worker" if worker else "datatrove driver"
    if "multiprocess" in joined:
        return "multiprocess worker (datatrove)"
    if name.startswith("python") and "default_worker.py" in " ".join(cmd):
        return "ray worker (not yet titled)"
    return name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--json")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import _smoke

    a = _smoke.parse(ap, {"every": 0.1})
    import psutil

    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        if not a.smoke:
            ap.error("give the command to profile after --")
        cmd = [sys.executable, "-c", "import time; sum(range(10**6)); time.sleep(0.3)"]
    child = subprocess.Popen(cmd)
    root = psutil.Process(child.pid)
    last: dict[tuple[int, float], tuple[str, float, int | None]] = {}  # (pid, create) -> (kind, cpu, ppid)
    timeline = []
    prev = psutil.cpu_times()
    t0 = tprev = time.time()
    seen_ray: set[int] = set()
    while child.poll() is None:
        procs = []
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
        # ray's processes are re-parented away from the driver in some setups: follow any
        # process whose parent we saw (raylet's workers)
        pids = {p.pid for p in procs}
        for p in psutil.process_iter(["ppid"]):
            if p.info["ppid"] in pids or p.pid in seen_ray:
                if p.pid not in pids:
                    procs.append(p)
                    pids.add(p.pid)
                    seen_ray.add(p.pid)
        for p in procs:
            try:
                ct = p.cpu_times()
                key = (p.pid, p.create_time())
                k = "profiled command" if p.pid == child.pid else last.get(key, (kind(p),))[0]
                if p.pid != child.pid:  # Ray workers retitle themselves; keep the last working title
                    k2 = kind(p)
                    if k2 not in ("?", "ray::IDLE") or k.startswith("ray worker") or k == "?":
                        k = k2
                last[key] = (k, ct.user + ct.system, p.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        now = psutil.cpu_times()
        busy = sum(getattr(now, f) - getattr(prev, f) for f in ("user", "system", "nice", "irq", "softirq"))
        tnow = time.time()
        timeline.append((round(tnow - t0, 1), round(busy / max(tnow - tprev, 1e-3), 2)))
        prev, tprev = now, tnow
        time.sleep(a.every)
    by: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for k, cpu, _pid in last.values():
        by[k][0] += cpu
        by[k][1] += 1
    total = sum(v[0] for v in by.values())
    print(f"\n{'process kind':<60} {'procs':>5} {'cpu s':>8} {'share':>6}")
    for k, (cpu, n) in sorted(by.items(), key=lambda kv: -kv[1][0]):
        print(f"{k[:60]:<60} {n:>5} {cpu:>8.1f} {cpu / max(total, 1e-9):>6.1%}")
    print(f"{'total':<60} {'':>5} {total:>8.1f}")
    cores = psutil.cpu_count()
    idle = [cores - b for _, b in timeline]
    print(f"machine busy cores: mean {sum(b for _, b in timeline) / max(len(timeline), 1):.2f} of {cores}; "
          f"samples with >=1 idle core: {sum(i >= 1 for i in idle)}/{len(idle)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"by_kind": {k: {"procs": n, "cpu_s": round(c, 2)} for k, (c, n) in by.items()},
                       "timeline": timeline}, f)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
