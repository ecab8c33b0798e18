"""Refusals and robustness of the storage layer on local disk: unknown schemes, unsafe
outputs, bad source names, the output lock, symlink loops, odd file names and
compressions. (S3 itself: tests/storage and tests/e2e/test_storage_s3.py.)"""

from __future__ import annotations

import bz2
import json
import lzma
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from datapipe import commit, fs
from datapipe.errors import ConflictError, SpecError
from datapipe.readers import READERS
from datapipe.readers.base import ReadSplit
from datapipe.spec import load_job

REPO = Path(__file__).resolve().parents[2]
DOCS = [{"id": i, "text": f"document {i} about rivers and hills"} for i in range(5)]


def _spec(tmp_path: Path, *, output: str = "out", name: str = "docs", paths: str = "[data/*.jsonl]",
          extra: str = "") -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: t
        output: {output}
        sources:
          - name: {json.dumps(name)}
            format: jsonl
            paths: {paths}
            options: {{id_key: id}}
        stages:
          - normalize: {{}}
    """) + extra)
    return spec


@pytest.mark.parametrize("output,match", [
    ("foo://bucket/out", r"output: no filesystem library serves foo:// .*install the fsspec implementation"),
    ("s3://bucket-only", r"output: 's3://bucket-only' is a whole bucket; name a prefix inside it"),
])
def test_unservable_output_is_a_spec_error(tmp_path, output, match):
    with pytest.raises(SpecError, match=match):
        load_job(_spec(tmp_path, output=output))


def test_unknown_scheme_in_paths_names_the_key(tmp_path):
    with pytest.raises(SpecError, match=r"source 'docs': paths: no filesystem library serves foo://"):
        load_job(_spec(tmp_path, paths="[foo://x/*.jsonl]"))


def test_output_inside_an_input_folder_or_glob_root_is_refused(tmp_path):
    with pytest.raises(SpecError, match=r"lies inside .*data, the folder source 'docs' reads from"):
        load_job(_spec(tmp_path, output="data/out"))
    (tmp_path / "nested" / "deep").mkdir(parents=True)
    (tmp_path / "nested" / "deep" / "b.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(SpecError, match=r"lies inside .*nested, the folder source 'docs' reads from"):
        load_job(_spec(tmp_path, output="nested/runs/out", paths="[nested/**/*.jsonl]"))


def test_output_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "out.txt").write_text("not a folder")
    with pytest.raises(SpecError, match=r"out.txt is an existing file; choose a folder path"):
        load_job(_spec(tmp_path, output="out.txt"))


@pytest.mark.parametrize("name", ["..", ".", "a/b", "web en", "lang=en", ".hidden", "tab\tname"])
def test_source_names_that_cannot_name_a_folder_are_refused(tmp_path, name):
    with pytest.raises(SpecError, match=r"cannot name a folder"):
        load_job(_spec(tmp_path, name=name))


def test_storage_section_refuses_credentials_and_is_not_hashed(tmp_path):
    with pytest.raises(SpecError, match=r"must not hold credentials .*AWS_ACCESS_KEY_ID"):
        load_job(_spec(tmp_path, extra="storage: {s3: {secret_access_key: abc}}\n"))
    plain = load_job(_spec(tmp_path))
    spec = _spec(tmp_path, extra="storage: {s3: {endpoint_url: 'http://127.0.0.1:9', region: eu-west-1}}\n")
    job = load_job(spec)
    assert job.storage.s3.endpoint_url == "http://127.0.0.1:9" and job.spec_hash() == plain.spec_hash()
    kw = fs.s3_settings(job.storage.s3, {"AWS_ENDPOINT_URL": "http://other:1", "AWS_ACCESS_KEY_ID": "k",
                                         "AWS_SECRET_ACCESS_KEY": "s"})
    assert kw["endpoint_override"] == "127.0.0.1:9" and kw["scheme"] == "http" and kw["region"] == "eu-west-1"
    assert "k" not in repr(job.storage) and "AWS" not in json.dumps(job.canonical())


def test_symlink_loop_reads_each_file_once(tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "loop").symlink_to(data, target_is_directory=True)   # data/sub/loop -> data
    (data / "alias.jsonl").symlink_to(data / "a.jsonl")                  # a second name for one file
    job = load_job(_spec(tmp_path, paths="[data/**/*.jsonl]"))
    assert [f.rel for f in job.sources[0].files] == ["a.jsonl"]


def test_non_utf8_file_name_is_read_and_hashed(tmp_path):
    spec = _spec(tmp_path, paths="[data]")
    raw = os.fsencode(str(tmp_path / "data")) + b"/caf\xe9.jsonl"
    with open(raw, "wb") as fh:
        fh.write(b'{"id": "x", "text": "a document in a file with a latin-1 name"}\n')
    job = load_job(spec)
    assert len(job.sources[0].files) == 2 and len(job.job_hash()) == 32
    reader = READERS["jsonl"](source="docs", options=job.sources[0].options)
    f = next(f for f in job.sources[0].files if f.rel != "a.jsonl")
    rows = next(reader.read(ReadSplit((f,)))).to_pylist()
    assert rows[0]["text"] == "a document in a file with a latin-1 name" and rows[0]["_reject_reason"] is None
    assert rows[0]["origin"] == "caf%E9.jsonl@0"   # valid UTF-8, the name's bytes recoverable (issue #29)


@pytest.mark.parametrize("ext,pack", [(".bz2", bz2.compress), (".xz", lzma.compress), ("", bz2.compress)])
def test_bz2_and_xz_are_read(tmp_path, ext, pack):
    body = "".join(json.dumps(d) + "\n" for d in DOCS).encode()
    path = tmp_path / f"d.jsonl{ext}"        # "": bz2 content found by its magic bytes
    path.write_bytes(pack(body))
    reader = READERS["jsonl"](source="s", options={"id_key": "id"})
    from datapipe.readers import InputFile

    rows = [r for t in reader.read(ReadSplit((InputFile(str(path), path.name, path.stat().st_size),)))
            for r in t.to_pylist()]
    assert [r["text"] for r in rows] == [d["text"] for d in DOCS]


def test_unsupported_or_truncated_compression_is_a_per_file_reject(tmp_path):
    from datapipe.readers import InputFile

    lz4 = tmp_path / "d.jsonl.lz4"
    lz4.write_bytes(b"\x04\x22\x4d\x18" + b"\x00" * 40)
    trunc = tmp_path / "t.jsonl.xz"
    trunc.write_bytes(lzma.compress(b'{"text": "hello there"}\n' * 200)[:60])
    reader = READERS["jsonl"](source="s")
    files = tuple(InputFile(str(p), p.name, p.stat().st_size) for p in (lz4, trunc))
    rows = [r for t in reader.read(ReadSplit(files)) for r in t.to_pylist()]
    reasons = {r["origin"]: r["_reject_reason"] for r in rows if r["_reject_reason"]}
    assert reasons == {"d.jsonl.lz4": "read:unsupported_compression", "t.jsonl.xz": "read:truncated_xz"}


def test_second_run_on_a_live_output_refuses_and_a_stale_lock_is_taken_over(tmp_path):
    out = str(tmp_path / "out")
    first = commit.OutputRun.begin(out)
    with pytest.raises(ConflictError, match=rf"being written by run {first.run_id} \(host {socket.gethostname()}, "
                                        rf"pid {os.getpid()}, started "):
        commit.OutputRun.begin(out)
    first.abort()
    assert not os.path.exists(commit.lock_uri(out)) and not os.path.exists(first.staging)
    # a dead run's lock (its process is gone) and its staging folder
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    Path(commit.lock_uri(out)).write_text(json.dumps({"run_id": "old", "host": socket.gethostname(),
                                                      "pid": dead.pid, "started": 1.0, "heartbeat": time.time()}))
    Path(commit.staging_uri(out, "old")).mkdir()
    run = commit.OutputRun.begin(out)
    assert run.cleaned == [commit.staging_uri(out, "old")] and commit.read_lock(out).run_id == run.run_id
    # a lock from another host is stale only once its heartbeat is old
    run.release()
    Path(commit.lock_uri(out)).write_text(json.dumps({"run_id": "far", "host": "elsewhere", "pid": 1,
                                                      "started": 1.0, "heartbeat": time.time()}))
    with pytest.raises(ConflictError, match=r"run far .host elsewhere.*heartbeat was [01] s ago.*turns stale 1(19|20) s from "
                                            rf"now .* remove {commit.lock_uri(out)}$"):
        commit.OutputRun.begin(out)
    assert commit.OutputRun.begin(out, stale_s=0.0).run_id != "far"


def test_keyed_staging_is_kept_for_a_resume_and_other_staging_is_cleaned(tmp_path):
    out = str(tmp_path / "out")
    first = commit.OutputRun.begin(out, staging_key="jobA", keep_staging=True)
    assert first.staging == commit.staging_uri(out, "jobA") and not first.resumable
    fs.write_text(fs.join(first.staging, "work", "done.json"), "{}")
    first.release()                                   # interrupted: staging stays, lock goes
    Path(commit.staging_uri(out, "jobB")).mkdir()     # another job's leftovers
    again = commit.OutputRun.begin(out, staging_key="jobA", keep_staging=True)
    assert again.resumable and again.cleaned == [commit.staging_uri(out, "jobB")]
    assert fs.is_file(fs.join(again.staging, "work", "done.json")) and again.run_id != first.run_id
    again.release()
    forced = commit.OutputRun.begin(out, staging_key="jobA")   # --force: starts clean
    assert not forced.resumable and forced.cleaned == [commit.staging_uri(out, "jobA")]
    assert fs.list_dir(forced.staging) == []
    forced.abort()


def test_local_publish_replaces_and_a_tampered_manifest_is_not_trusted(tmp_path):
    out = str(tmp_path / "out")
    for n in (1, 2):
        run = commit.OutputRun.begin(out)
        fs.write_text(fs.join(run.staging, "manifest.json"), json.dumps({"n": n}))
        run.publish({"job_hash": str(n)})
    assert commit.trusted_status(out)["job_hash"] == "2" and sorted(os.listdir(tmp_path)) == ["out"]
    (tmp_path / "out" / "manifest.json").write_text("{}")
    assert commit.read_status(out) is None


def test_object_store_error_is_one_line_and_exit_2(tmp_path, s3_server):
    spec = _spec(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "datapipe", "run", str(spec), "--output", "s3://no-such-bucket/out"],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **s3_server["env"]},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("datapipe: error: ") and "no-such-bucket" in lines[0], proc.stderr


def test_glob_depth_and_hidden_names(tmp_path):
    for rel in ("a.jsonl", "x/b.jsonl", "x/y/c.jsonl", ".h.jsonl", "x/.h/d.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    names = lambda pat: [os.path.relpath(p, tmp_path) for p in fs.glob(str(tmp_path / pat))]  # noqa: E731
    assert names("*.jsonl") == ["a.jsonl"]
    assert names("*/*.jsonl") == ["x/b.jsonl"]
    assert names("**/*.jsonl") == ["a.jsonl", "x/b.jsonl", "x/y/c.jsonl"]
    assert names("x/**/*.jsonl") == ["x/b.jsonl", "x/y/c.jsonl"]


def test_committed_files_are_readable_by_others_and_a_failed_write_leaves_nothing(tmp_path):
    """#29: manifest.json and _SUCCESS were written 0600 (mkstemp) whatever the umask."""
    old = os.umask(0o022)
    try:
        out = str(tmp_path / "out")
        run = commit.OutputRun.begin(out)
        fs.write_text(fs.join(run.staging, "manifest.json"), "{}")
        run.publish({"job_hash": "1"})
        with pytest.raises(OSError, match="boom"), fs.AtomicFile(str(tmp_path / "part.parquet")) as f:
            f.write(b"half a file")
            raise OSError("boom")
    finally:
        os.umask(old)
    modes = {name: os.stat(tmp_path / "out" / name).st_mode & 0o777 for name in ("manifest.json", "_SUCCESS")}
    assert modes == {"manifest.json": 0o644, "_SUCCESS": 0o644}
    assert sorted(os.listdir(tmp_path)) == ["out"]   # no part.parquet, no .tmp


def test_module_functions_reach_files_through_the_layer(tmp_path):
    """The one storage API: ``(uri, storage)`` into the module functions. What pyarrow
    writes into an AtomicFile reads back through resolve(); delete() takes a file or a
    folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    storage = fs.StorageOptions(s3=fs.S3Options(region="eu-west-1"))
    root = str(tmp_path / "work")
    with fs.AtomicFile(fs.join(root, "a", "t.parquet"), storage) as f:
        pq.write_table(pa.table({"x": [1, 2]}), f)
    fs.write_bytes(fs.join(root, "a", "b.txt"), b"hi", storage)
    assert [f for f in fs.list_files(root, storage) if f.endswith(".parquet")] == [str(tmp_path / "work" / "a" / "t.parquet")]
    assert fs.glob(fs.join(root, "*/*.txt"), storage) == [str(tmp_path / "work" / "a" / "b.txt")]
    fsys, path = fs.resolve(fs.join(root, "a", "t.parquet"), storage)
    assert pq.read_table(path, filesystem=fsys).column("x").to_pylist() == [1, 2]
    assert fs.read_bytes(fs.join(root, "a", "b.txt"), storage) == b"hi"
    fs.delete(fs.join(root, "a", "b.txt"), storage)
    assert fs.list_files(root, storage) == [str(tmp_path / "work" / "a" / "t.parquet")]
    fs.delete(fs.join(root, "a"), storage)
    fs.delete(fs.join(root, "a"), storage)   # absent is fine
    assert not fs.exists(fs.join(root, "a"), storage) and fs.list_files(root, storage) == []


def test_atomic_file_can_be_read_back_before_it_is_committed_or_dropped(tmp_path):
    """The shard writer's use: verify the temporary file by path, then name it, or keep
    what a re-run already wrote there."""
    target = tmp_path / "s" / "shard.bin"
    out = fs.AtomicFile(str(target))
    out.write(b"tokens")
    out.flush()
    assert Path(out.tmp).read_bytes() == b"tokens" and not target.exists()
    out.commit()
    assert target.read_bytes() == b"tokens" and os.listdir(target.parent) == ["shard.bin"]
    again = fs.AtomicFile(str(target))
    again.write(b"other")
    again.abort()
    assert target.read_bytes() == b"tokens" and os.listdir(target.parent) == ["shard.bin"]


def test_a_file_a_library_wrote_moves_into_place_whole(tmp_path):
    src = tmp_path / "models" / ".model.bin.tmp123"
    src.parent.mkdir()
    src.write_bytes(b"weights")
    fs.move_into_place(str(src), str(tmp_path / "models" / "model.bin"))
    assert os.listdir(tmp_path / "models") == ["model.bin"]
    assert (tmp_path / "models" / "model.bin").read_bytes() == b"weights"


def test_streamed_files_append_and_lock_serialises(tmp_path):
    log = str(tmp_path / "logs" / "metrics.jsonl")
    with fs.open_stream(log) as f:
        f.write("1\n")
    with fs.open_stream(log) as f:
        f.write("2\n")
    assert Path(log).read_text() == "1\n2\n"
    with fs.open_stream(log, append=False, encoding=None) as f:
        f.write(b"3\n")
    assert Path(log).read_text() == "3\n"
    with pytest.raises(ValueError, match="s3://b/log.jsonl.*local path"):
        fs.open_stream("s3://b/log.jsonl")
    # a second process cannot take the lock while this one holds it
    lock = str(tmp_path / "cache.lock")
    probe = ("import fcntl, sys\nf = open(sys.argv[1], 'a')\ntry:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "except BlockingIOError:\n    sys.exit(3)\n")
    with fs.lock(lock):
        assert subprocess.run([sys.executable, "-c", probe, lock]).returncode == 3
    assert subprocess.run([sys.executable, "-c", probe, lock]).returncode == 0
