"""The filesystem layer and the commit protocol against a real S3 API server."""

from __future__ import annotations

import json

import pytest

from datapipe import commit, fs
from datapipe.errors import ConflictError, JobError


def test_fs_roundtrip_glob_and_delete(bucket):
    for rel in ("a/x.jsonl", "a/b/y.jsonl", "a/b/c/z.txt", "a/.hidden.jsonl"):
        fs.write_bytes(fs.join(bucket, "in", rel), rel.encode())
    root = fs.join(bucket, "in")
    assert fs.is_dir(root) and fs.is_file(fs.join(root, "a/x.jsonl")) and not fs.exists(fs.join(root, "nope"))
    assert fs.glob(f"{root}/a/**/*.jsonl") == [f"{root}/a/b/y.jsonl", f"{root}/a/x.jsonl"]
    assert fs.glob(f"{root}/a/*.jsonl") == [f"{root}/a/x.jsonl"]
    assert fs.read_bytes(f"{root}/a/b/c/z.txt") == b"a/b/c/z.txt"
    assert fs.stat(f"{root}/a/x.jsonl").size == len("a/x.jsonl")
    with fs.open_input(f"{root}/a/b/y.jsonl") as fh:   # ranged read
        fh.seek(2)
        assert fh.read(3) == b"b/y"
    fs.delete_tree(fs.join(root, "a/b"))
    assert fs.list_files(root) == [f"{root}/a/.hidden.jsonl", f"{root}/a/x.jsonl"]


def test_atomic_writes_and_moves_on_s3(bucket, tmp_path):
    """The one atomic-write path on a store: AtomicFile uploads whole or leaves nothing,
    a file a library wrote locally moves up as one object, delete() takes a file or a
    prefix."""
    with pytest.raises(OSError, match="boom"), fs.AtomicFile(f"{bucket}/w/part.bin") as out:
        out.write(b"half")
        raise OSError("boom")
    assert not fs.exists(f"{bucket}/w/part.bin")
    src = tmp_path / ".model.bin.tmp"
    src.write_bytes(b"weights")
    fs.move_into_place(str(src), f"{bucket}/w/model.bin")
    assert fs.read_bytes(f"{bucket}/w/model.bin") == b"weights" and not src.exists()
    fs.delete(f"{bucket}/w/model.bin")
    fs.write_bytes(f"{bucket}/w/sub/a", b"a")
    fs.delete(f"{bucket}/w")
    assert fs.list_files(f"{bucket}/w") == []


@pytest.mark.parametrize("prefix", ["runs/one", "top"])   # "top": lock and staging at the bucket root
def test_commit_on_s3_publishes_and_replaces(bucket, prefix):
    out = fs.join(bucket, prefix)
    for content in (b"old", b"new"):
        run = commit.OutputRun.begin(out)
        with pytest.raises(ConflictError, match=r"being written by run .*host .*pid"):
            commit.OutputRun.begin(out)
        fs.write_bytes(fs.join(run.staging, "documents/part-0.parquet"), content)
        if content == b"old":
            fs.write_bytes(fs.join(run.staging, "old-only.txt"), b"x")
        fs.write_text(fs.join(run.staging, "manifest.json"), json.dumps({"files": [content.decode()]}))
        assert commit.read_status(out) is None or content == b"new"
        run.publish({"job_hash": content.decode()})
        assert commit.trusted_status(out)["job_hash"] == content.decode()
    assert fs.read_bytes(fs.join(out, "documents/part-0.parquet")) == b"new"
    assert sorted(fs.list_dir(out)) == ["_SUCCESS", "documents", "manifest.json"]   # old-only.txt is gone
    assert not fs.exists(commit.lock_uri(out))
    assert [e for e in fs.list_dir(fs.parent(out)) if "staging" in e] == []
    # a manifest changed after the commit is not trusted
    fs.write_text(fs.join(out, "manifest.json"), "{}")
    with pytest.raises(JobError, match="modified after it was committed"):
        commit.trusted_status(out)


def test_fasttext_model_on_s3_is_cached_by_content(bucket, shared_dir, tmp_path, monkeypatch):
    from stages.models import fasttext as fasttext_compat

    monkeypatch.setenv("DATAPIPE_CACHE", str(tmp_path / "cache"))
    local = shared_dir / "models" / "lid.176.ftz"
    uri = f"{bucket}/models/lid.176.ftz"
    fs.write_bytes(uri, local.read_bytes())
    texts = ["the weather is fine today", "das Wetter ist heute schön"]
    want = fasttext_compat.predict(fasttext_compat.load(str(local)), texts)[0]
    assert fasttext_compat.predict(fasttext_compat.load(uri), texts)[0] == want == [["en"], ["de"]]
    cached = fs.local_copy(uri)
    assert cached.startswith(str(tmp_path / "cache")) and open(cached, "rb").read() == local.read_bytes()
