"""Publishing an output folder so that a reader never mistakes a partial one for a
complete one, on local disks and on object stores (which have no rename).

Layout, for ``output = <parent>/<name>`` (a local folder or a URI prefix):

* ``<parent>/<name>.lock``: the lock (:class:`LockInfo` as JSON). One run at a time
  writes an output; a second refuses, naming the holder. The holder rewrites it every
  ``heartbeat_s``; a lock whose heartbeat is older than ``stale_s`` (or, on this host,
  whose process is gone) belongs to a dead run and is taken over.
* ``<parent>/<name>.staging-<key>/``: everything a run writes, before it is complete.
  ``key`` is the run id, or a key the caller gives (a job's run gives its job hash,
  :mod:`datapipe.staging`, so that a restart of the same job finds its staging and
  resumes it). Leftover staging folders of dead runs are deleted when the next run
  takes the lock, except the one it is told to keep.
* ``<output>/manifest.json`` (every file with rows and sha256), then ``<output>/_SUCCESS``
  written **last**; ``_SUCCESS`` holds the manifest's sha256.

A reader trusts an output only when ``_SUCCESS`` exists and the sha256 it records is the
sha256 of ``manifest.json`` (:func:`trusted_status`); ``datapipe shards verify`` then checks
every listed file's hash.

Publishing (:meth:`OutputRun.publish`): locally, the staging folder is renamed onto the
output (the old output is first renamed aside: atomic). On an object store: delete the old
``_SUCCESS`` (from now on the old output is not trusted), write ``_PUBLISHING``, delete the
old objects, copy the staged objects (server-side), write ``_SUCCESS``, delete
``_PUBLISHING`` and the staging prefix. A crash at any point leaves either the old trusted
output or an output without ``_SUCCESS``, never a mix that looks complete.

The lock is best effort on object stores (no conditional PUT through pyarrow): a takeover
writes the lock, waits, and re-reads it to see who won.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from datapipe import fs
from datapipe.errors import ConflictError, JobError

log = logging.getLogger(__name__)

SUCCESS = "_SUCCESS"
MANIFEST = "manifest.json"
PUBLISHING = "_PUBLISHING"
HEARTBEAT_S = 30.0
STALE_S = 120.0


@dataclass(frozen=True)
class LockInfo:
    run_id: str
    host: str
    pid: int
    started: float
    heartbeat: float

    def describe(self) -> str:
        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started))
        return f"run {self.run_id} (host {self.host}, pid {self.pid}, started {start})"


def lock_uri(output: str) -> str:
    return output.rstrip("/") + ".lock"


def staging_uri(output: str, run_id: str) -> str:
    return output.rstrip("/") + f".staging-{run_id}"


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(4)


# -- readers -------------------------------------------------------------------------

def read_status(output: str, storage: fs.StorageOptions | None = None) -> dict[str, Any] | None:
    """The ``_SUCCESS`` record when the output is complete and its manifest agrees with
    it, else None."""
    try:
        return trusted_status(output, storage)
    except JobError:
        return None


def trusted_status(output: str, storage: fs.StorageOptions | None = None) -> dict[str, Any]:
    """The ``_SUCCESS`` record of a complete output; :class:`JobError` saying why not."""
    marker = fs.join(output, SUCCESS)
    try:
        success = json.loads(fs.read_text(marker, storage))
    except FileNotFoundError:
        raise JobError(f"{output}: no {SUCCESS}: not a complete datapipe output (the run that wrote it "
                       "did not finish, or is still running)") from None
    except ValueError as exc:
        raise JobError(f"{marker}: unreadable ({exc})") from None
    want = success.get("manifest_sha256") if isinstance(success, dict) else None
    if want is None:
        raise JobError(f"{marker}: records no manifest_sha256; re-run the job to rewrite the output")
    try:
        have = fs.sha256(fs.join(output, MANIFEST), storage)
    except FileNotFoundError:
        raise JobError(f"{output}: {SUCCESS} exists but {MANIFEST} does not; re-run the job") from None
    if have != want:
        raise JobError(f"{output}: {MANIFEST} (sha256 {have[:12]}) is not the one {SUCCESS} records "
                       f"({want[:12]}); the output was modified after it was committed")
    return success


def is_datapipe_output(output: str, storage: fs.StorageOptions | None = None) -> bool:
    """Whether ``output`` is empty/absent or was written by datapipe (complete or an
    interrupted publish), i.e. may be replaced."""
    names = set(fs.list_dir(output, storage))
    return not names or bool(names & {SUCCESS, PUBLISHING, MANIFEST})


# -- the lock ------------------------------------------------------------------------

def read_lock(output: str, storage: fs.StorageOptions | None = None) -> LockInfo | None:
    try:
        return LockInfo(**json.loads(fs.read_text(lock_uri(output), storage)))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def _is_stale(lock: LockInfo, stale_s: float) -> bool:
    if time.time() - lock.heartbeat > stale_s:
        return True
    if lock.host == socket.gethostname():
        try:
            os.kill(lock.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
    return False


def _held_message(output: str, held: LockInfo, stale_s: float) -> str:
    """Why a run refuses a live-looking lock, and the two ways on when its holder is dead
    (a driver on another host, e.g. on a lost node, cannot be checked by pid)."""
    age = max(0.0, time.time() - held.heartbeat)
    return (f"{output} is being written by {held.describe()}, whose last heartbeat was {age:.0f} s ago; wait "
            f"for it to finish. If that run is dead (its driver killed or its node lost), its lock turns "
            f"stale {max(0.0, stale_s - age):.0f} s from now and a run started then takes it over (the same "
            f"job resumes from its finished splits); to go on at once, remove {lock_uri(output)}")


def _write_lock(output: str, info: LockInfo, storage: fs.StorageOptions | None, *, exclusive: bool) -> bool:
    data = json.dumps(asdict(info), sort_keys=True).encode()
    if exclusive:
        return fs.create_exclusive(lock_uri(output), data, storage)
    fs.write_bytes(lock_uri(output), data, storage)
    return True


class OutputRun:
    """One run's claim on an output: the lock, the staging folder, the publish."""

    def __init__(self, output: str, *, storage: fs.StorageOptions | None, run_id: str,
                 heartbeat_s: float, lock: LockInfo, staging_key: str | None = None) -> None:
        self.output = output
        self.storage = storage
        self.run_id = run_id
        self.staging = staging_uri(output, staging_key or run_id)
        self.resumable = False         # begin(): the kept staging folder already existed
        self.cleaned: list[str] = []   # leftover staging folders of dead runs, removed by begin()
        self._lock = lock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(heartbeat_s,), daemon=True,
                                        name=f"datapipe-lock-{run_id}")
        self._thread.start()

    @classmethod
    def begin(cls, output: str, *, storage: fs.StorageOptions | None = None, heartbeat_s: float = HEARTBEAT_S,
              stale_s: float = STALE_S, staging_key: str | None = None, keep_staging: bool = False) -> "OutputRun":
        """Take the lock on ``output`` (refusing while a live run holds it), delete leftover
        staging folders of dead runs and return the run with its staging folder.

        ``staging_key`` names the staging folder (default: the run id, always new); with
        ``keep_staging`` an existing staging folder of that name is kept (and
        :attr:`resumable` is True) for the caller to resume, every other one is deleted.
        The lock always carries this run's own random id, host and pid."""
        run_id = new_run_id()
        now = time.time()
        info = LockInfo(run_id=run_id, host=socket.gethostname(), pid=os.getpid(), started=now, heartbeat=now)
        if not _write_lock(output, info, storage, exclusive=True):
            held = read_lock(output, storage)
            if held is not None and not _is_stale(held, stale_s):
                raise ConflictError(_held_message(output, held, stale_s))
            log.warning("taking over the stale lock of %s on %s", held.describe() if held else "an unknown run", output)
            fs.write_bytes(lock_uri(output), json.dumps(asdict(info), sort_keys=True).encode(), storage)
        if not fs.is_local(output):
            time.sleep(0.2)  # a racing takeover on an object store: the last writer wins
        if read_lock(output, storage) != info:
            other = read_lock(output, storage)
            raise ConflictError(f"{output} was just claimed by {other.describe() if other else 'another run'}")
        run = cls(output, storage=storage, run_id=run_id, heartbeat_s=heartbeat_s, lock=info, staging_key=staging_key)
        run._clean_leftovers(keep=run.staging if keep_staging else None)
        fs.makedirs(run.staging, storage)
        return run

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            self._lock = LockInfo(**{**asdict(self._lock), "heartbeat": time.time()})
            try:
                fs.write_bytes(lock_uri(self.output), json.dumps(asdict(self._lock), sort_keys=True).encode(),
                               self.storage)
            except OSError as exc:
                log.warning("could not refresh the lock on %s: %s", self.output, exc)

    def _clean_leftovers(self, keep: str | None) -> None:
        """Staging folders of earlier runs (we hold the lock: none of them is live),
        except ``keep``."""
        parent, name = fs.parent(self.output), fs.basename(self.output)
        for entry in fs.list_dir(parent, self.storage):
            if keep is not None and entry == fs.basename(keep):
                self.resumable = fs.is_dir(keep, self.storage)
                continue
            if entry == f"{name}.staging" or entry.startswith(f"{name}.staging-"):
                log.info("removing leftovers of an interrupted run: %s", fs.join(parent, entry))
                fs.delete_tree(fs.join(parent, entry), self.storage)
                self.cleaned.append(fs.join(parent, entry))

    def publish(self, success: dict[str, Any]) -> None:
        """Make the staging folder the output. ``staging/manifest.json`` must exist;
        ``_SUCCESS`` (``success`` + run id + manifest sha256) is written last."""
        manifest_sha = fs.sha256(fs.join(self.staging, MANIFEST), self.storage)
        record = {**success, "run_id": self.run_id, "manifest_sha256": manifest_sha}
        blob = json.dumps(record, sort_keys=True) + "\n"
        if fs.is_local(self.output):
            fs.write_text(fs.join(self.staging, SUCCESS), blob)
            self._swap_local()
        else:
            self._publish_remote(blob)
        self.release()

    def _swap_local(self) -> None:
        fs.replace_dir(self.staging, self.output, aside=f"{self.output.rstrip('/')}.old-{self.run_id}")

    def _publish_remote(self, success_blob: str) -> None:
        st = self.storage
        fs.delete_file(fs.join(self.output, SUCCESS), st)
        fs.write_text(fs.join(self.output, PUBLISHING), self.run_id + "\n", st)
        for old in fs.list_files(self.output, st):
            if fs.basename(old) != PUBLISHING:
                fs.delete_file(old, st)
        for src in fs.list_files(self.staging, st):
            fs.copy_file(src, fs.join(self.output, fs.relative(src, self.staging)), st)
        fs.write_text(fs.join(self.output, SUCCESS), success_blob, st)
        fs.delete_file(fs.join(self.output, PUBLISHING), st)
        fs.delete_tree(self.staging, st)

    def abort(self) -> None:
        """Drop the staging folder and the lock (a failed run commits nothing)."""
        fs.delete_tree(self.staging, self.storage)
        self.release()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        held = read_lock(self.output, self.storage)
        if held is not None and held.run_id == self.run_id:
            fs.delete_file(lock_uri(self.output), self.storage)


def check_trusted(uri: str, storage: fs.StorageOptions | None = None, *, levels: int = 3) -> None:
    """Refuse to read below a datapipe output that is not complete: the nearest of ``uri``
    and its ``levels`` parents holding ``_SUCCESS`` or ``_PUBLISHING`` must be trusted
    (:func:`trusted_status`). A folder below no datapipe output (loose shards) passes."""
    here = uri
    for _ in range(levels + 1):
        names = set(fs.list_dir(here, storage)) if fs.is_dir(here, storage) else set()
        if PUBLISHING in names:
            raise JobError(f"{here}: a run is publishing (or died publishing) this output; it is not complete")
        if SUCCESS in names:
            trusted_status(here, storage)
            return
        up = fs.parent(here)
        if not up or up == here or (not fs.is_local(up) and "/" not in up.split("://", 1)[1]):
            return
        here = up


def local_for_reading(uri: str, storage: fs.StorageOptions | None = None) -> str:
    """A local path with ``uri``'s content, after :func:`check_trusted`: a local path as it
    is; a remote file's folder, or a remote folder, downloaded once into the content cache
    (libraries that memory-map or need real files: the shard loader, verify, fastText)."""
    check_trusted(fs.parent(uri) if fs.is_file(uri, storage) else uri, storage)
    if fs.is_local(uri):
        return uri
    if fs.is_file(uri, storage):
        return os.path.join(fs.local_tree(fs.parent(uri), storage), fs.basename(uri))
    return fs.local_tree(uri, storage)
