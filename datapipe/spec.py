"""The job spec: a YAML file that names sources, the stage chain and the output.

```yaml
name: sample
output: ../runs/sample          # relative to this file
on_error: skip                  # skip: corrupt files become counted rejects; fail: stop
sources:
  - name: news
    format: jsonl               # jsonl | parquet | text | html | warc | mediawiki | stackexchange | code (or a plugin's)
    paths: ["sample_data/news/*.jsonl*"]
    options: {text_key: text, url_key: url}
stages:
  - normalize: {}
  - length: {min_chars: 50}
limits: {file_bytes: 68719476736}   # optional: what one input may cost (docs/readers.md)
```

Everything loads into the dataclasses below; unknown keys, wrong types, unknown stages,
missing files and impossible column chains raise :class:`SpecError` naming the key and
the file, before any data moves. Stage names resolve against the registry
:func:`load_job` is given (default: every installed plugin's stages,
:mod:`datapipe.plugins`); :func:`datapipe.plan.compile_plan` turns the loaded job into
the plan the runner executes.

Placeholders in any string value: ``{spec_dir}`` (this file's folder), ``{stdlib}`` (the
running interpreter's standard library, real code on every machine), ``{shared}``
(``$DATAPIPE_SHARED``, default ``<spec_dir>/../../shared``), ``{models}``
(``$DATAPIPE_MODELS``, default ``<spec_dir>/../models``: models the project trains).

Every relative path in a spec is relative to the spec file's folder, whatever the
working directory: source ``paths``, ``output``, and the stage config values that name a
file or folder (:func:`is_path_key`: ``model``, ``models``, ``tokenizer``, ``cutoffs``,
``eval_sets``, ``index``, ``block_files``, ``allow_files``, ``tag_files`` and keys ending in
``_path``, ``_dir``, ``_in`` or ``_out``). Only ``--output`` on the
command line is relative to where the user is.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping


from datapipe import fs
from datapipe.config import build, load_yaml_mapping, to_plain
from datapipe.errors import SpecError
from datapipe.readers.base import BATCH_ROWS, MAX_DOC_BYTES
from datapipe.stage import Compute, FormatterStage, GlobalStage, RewriteFilterStage, Stage, StageConfig

Registry = Mapping[str, type[Stage]]

TOP_KEYS = {"name", "output", "on_error", "sources", "stages", "execution", "output_options", "shards", "storage",
            "limits"}
# characters that cannot appear in a source name: it names a folder (source=<name>) and a shard file
_BAD_NAME_CHARS = set('/\\=:*?"<>|') | {chr(c) for c in range(32)}
SOURCE_KEYS = {"name", "format", "paths", "options"}


@dataclass(kw_only=True, frozen=True)
class ExecutionSpec:
    """How the job uses Ray. ``num_cpus`` only applies to the embedded local Ray.

    ``actors_per_stage``: actors for a phase whose stages declare actors
    (``Compute(kind="actor")``; default: the stages' ``concurrency``, else every CPU of
    the cluster; read is fused into the actors, so no core is left idle).
    ``max_retries``: times a split's task (or an actor's call) is retried after its
    worker died; ``max_restarts``: times a dead stage actor is restarted. A retried
    split rewrites its own files, so nothing is counted twice. ``split_bytes``: input
    bytes per read split; default (null): an eighth of the job's input, between 4 MiB and
    64 MiB (:func:`datapipe.plan.auto_split_bytes`), so a small job still uses every core
    and a large one gets 64 MiB splits, whatever the cluster (names depend on the inputs
    only)."""

    num_cpus: int | None = None
    split_bytes: int | None = None
    batch_rows: int = BATCH_ROWS
    actors_per_stage: int | None = None
    max_doc_bytes: int = MAX_DOC_BYTES
    max_retries: int = 3
    max_restarts: int = 3

    def __post_init__(self) -> None:
        if self.split_bytes is not None and self.split_bytes < 1024:
            raise SpecError(f"execution.split_bytes must be >= 1024, got {self.split_bytes}")
        if self.batch_rows < 1:
            raise SpecError(f"execution.batch_rows must be >= 1, got {self.batch_rows}")
        if self.num_cpus is not None and self.num_cpus < 1:
            raise SpecError(f"execution.num_cpus must be >= 1, got {self.num_cpus}")
        if self.actors_per_stage is not None and self.actors_per_stage < 1:
            raise SpecError(f"execution.actors_per_stage must be >= 1 (or null for one per CPU), got {self.actors_per_stage}")
        if self.max_doc_bytes < 1:
            raise SpecError(f"execution.max_doc_bytes must be >= 1, got {self.max_doc_bytes}")
        for key in ("max_retries", "max_restarts"):
            if getattr(self, key) < 0:
                raise SpecError(f"execution.{key} must be >= 0 (0: never retry), got {getattr(self, key)}")


@dataclass(kw_only=True, frozen=True)
class OutputSpec:
    """``format``: ``parquet`` (default) or ``jsonl`` (Dolma-style lines: ``id``,
    ``text``, ``source``, ``metadata``). ``compression``: for Parquet, a codec; for
    JSONL, ``zstd``/``gzip`` compress the file (``.jsonl.zst``/``.jsonl.gz``), ``none``
    writes plain ``.jsonl``. One file per read split and kind, named by the split."""

    format: Literal["parquet", "jsonl"] = "parquet"
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"

    def __post_init__(self) -> None:
        if self.format == "jsonl" and self.compression == "snappy":
            raise SpecError("output_options.compression: snappy is for Parquet only; with format jsonl use "
                            "zstd, gzip or none")


@dataclass(kw_only=True, frozen=True)
class SourceSpec:
    name: str
    format: str
    files: tuple[Any, ...]          # datapipe.readers.InputFile
    options: Any                    # the reader's Options dataclass
    root: str
    reader: Any = None              # the reader class registered as ``format`` (datapipe.readers.registry)


@dataclass(kw_only=True, frozen=True)
class StageSpec:
    """One stage instance of the chain. ``name`` is the instance's name (the spec's
    ``name:``, else the stage kind): unique in a job, used in reject reasons, stats and
    reports; ``cls.name`` is the kind."""

    name: str
    cls: type[Stage]
    config: StageConfig
    index: int
    sources: frozenset[str] | None = None   # None: every source

    @property
    def kind(self) -> str:
        return self.cls.name

    def applies_to(self, source: str) -> bool:
        return self.sources is None or source in self.sources

    def make(self) -> Stage:
        return self.cls(self.config, sources=self.sources, name=None if self.name == self.cls.name else self.name)

    @property
    def adds(self) -> Mapping[str, Any]:
        """The columns this instance adds: the class's ``adds``, or the instance's when
        they depend on its config (``classify``'s ``prefix``, ``embed``'s width)."""
        return self.make().adds

    @property
    def compute(self) -> Compute:
        """How this instance runs: the class's ``compute``, or the instance's when it
        depends on its config (the model stages' ``gpus``, ``cpus``, ``actors``)."""
        return self.make().compute


@dataclass(kw_only=True, frozen=True)
class JobSpec:
    name: str
    path: str
    output: str
    on_error: Literal["skip", "fail"]
    sources: tuple[SourceSpec, ...]
    stages: tuple[StageSpec, ...]
    execution: ExecutionSpec = field(default_factory=ExecutionSpec)
    output_options: OutputSpec = field(default_factory=OutputSpec)
    shards: Any = None              # the ``shards:`` options of the stage with a sink (Stage.SinkOptions)
    storage: fs.StorageOptions = fs.DEFAULT   # how URIs are reached; never hashed (may name a profile)
    limits: Any = None              # datapipe.readers.inputs.InputLimits: what one input may cost

    def canonical(self) -> dict[str, Any]:
        """A JSON view that identifies the job's logic and inputs, independent of where
        the repo is checked out (paths relative to each source root) and of mtimes."""
        return {
            "name": self.name,
            "on_error": self.on_error,
            "sources": [
                {
                    "name": s.name,
                    "format": s.format,
                    "options": to_plain(s.options),
                    "inputs": [[f.rel, f.size] for f in s.files],
                }
                for s in self.sources
            ],
            "stages": [{"stage": st.name, "config": _portable(to_plain(st.config), ""),
                        "sources": sorted(st.sources) if st.sources is not None else None,
                        **({"kind": st.kind} if st.kind != st.name else {})} for st in self.stages],
            "output_options": to_plain(self.output_options),
            "max_doc_bytes": self.execution.max_doc_bytes,
            "shards": to_plain(self.shards) if self.shards is not None else None,
            # budgets decide which inputs are rejects; hashed only when set, so a job
            # without a limits: block keeps the hash it always had
            **({"limits": to_plain(self.limits)} if self.limits is not None else {}),
        }

    def spec_hash(self) -> str:
        """Hash of :meth:`canonical`: same logic and same input sizes give the same hash."""
        blob = json.dumps(self.canonical(), sort_keys=True).encode()
        return hashlib.blake2b(blob, digest_size=16).hexdigest()

    def job_hash(self) -> str:
        """:meth:`spec_hash` plus input mtimes: decides whether a finished run can be reused."""
        h = hashlib.blake2b(self.spec_hash().encode(), digest_size=16)
        for s in self.sources:
            for f in s.files:
                try:
                    stamp = fs.stat(f.path, self.storage).mtime_ns
                except OSError:
                    stamp = "missing"
                # file names need not be valid UTF-8: hash their bytes as the OS gave them
                h.update(f"{s.name}/{f.rel}\0{stamp}\0".encode("utf-8", "surrogateescape"))
        return h.hexdigest()


_SECRET_KEYS = frozenset({"key", "secret", "password", "token", "api_key", "access_key", "secret_key", "auth_token"})


def _content_hash(path: str) -> str:
    """blake2b of a file's bytes, or of a folder's relative paths and file bytes."""
    h = hashlib.blake2b(digest_size=16)
    files = [path] if fs.is_file(path) else fs.list_files(path)
    for f in files:
        h.update((fs.relative(f, path) if f != path else ".").encode("utf-8", "surrogateescape") + b"\0")
        for chunk in fs.iter_chunks(f):
            h.update(chunk)
    return h.hexdigest()


def _portable(value: Any, key: str) -> Any:
    """A config value as it should count in the spec hash: files and folders by name and
    content (not by where the checkout is), output paths (``*_out``) by name only, and
    secrets (``key``, ``*secret*``, ...) by a digest so they never reach a manifest."""
    k = key.lower()
    if isinstance(value, str):
        if k in _SECRET_KEYS or k.endswith(("_secret", "_password")):
            return "blake2b:" + hashlib.blake2b(value.encode(), digest_size=8, person=b"dp-secret").hexdigest()
        if os.path.isabs(value) or fs.scheme(value) is not None:
            try:
                if k.endswith("_out") or not fs.exists(value):
                    return fs.basename(value)
                return f"{fs.basename(value)}#{_content_hash(value)}"
            except (OSError, SpecError):
                return fs.basename(value)
        return value
    if isinstance(value, list):
        return [_portable(v, key) for v in value]
    if isinstance(value, dict):
        return {kk: _portable(v, kk) for kk, v in value.items()}
    return value


def _expand(value: Any, subs: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in subs.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [_expand(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, subs) for k, v in value.items()}
    return value


def _common_root(roots: list[str]) -> str:
    if all(fs.is_local(r) for r in roots):
        return os.path.commonpath([os.path.abspath(r) for r in roots])
    if len({fs.scheme(r) for r in roots}) != 1:
        return roots[0]
    parts = [r.rstrip("/").split("/") for r in roots]
    common = []
    for segs in zip(*parts):
        if len(set(segs)) != 1:
            break
        common.append(segs[0])
    return "/".join(common)


def _resolve_files(patterns: list[str], *, base: Path, where: str,
                   storage: fs.StorageOptions = fs.DEFAULT) -> tuple[list[Any], str]:
    """Input files of a source: globs (``**`` at any depth), folders (every file below),
    files; local paths relative to ``base``. A file reached twice (two patterns, or a
    symlink) is read once; a symlink loop is walked once."""
    from datapipe.readers import InputFile

    seen: dict[str, str] = {}
    roots = []
    for pat in patterns:
        if not isinstance(pat, str) or not pat:
            raise SpecError(f"{where}: each entry of 'paths' must be a non-empty string, got {pat!r}")
        fs.check_scheme(pat, where=f"{where}: paths")
        full = fs.absolute(pat, str(base))
        try:
            matches = fs.expand(full, storage, entries=True)
            root = (fs.glob_root(full) if fs.has_magic(full) else
                    full if fs.is_dir(full, storage) else fs.parent(full))
        except OSError as exc:
            raise SpecError(f"{where}: cannot list {full}: {exc}") from None
        if not matches:
            if fs.has_magic(full):
                raise SpecError(f"{where}: path pattern {pat!r} matches no files (looked for {full})")
            raise SpecError(f"{where}: folder {full} is empty" if root == full else
                            f"{where}: input file not found: {full}")
        roots.append(root)
        for m in matches:
            seen.setdefault(fs.real_key(m), m)
    root = _common_root(roots) if roots else str(base)
    if fs.is_local(root) and os.path.isfile(root):
        root = os.path.dirname(root)
    # what the input layer confines this source's reads to: the real path of each
    # pattern's root (a folder named through a link is that folder)
    confine = tuple(dict.fromkeys(fs.real_key(r) for r in roots))
    files = []
    for p in sorted(seen.values()):
        files.append(InputFile(path=p, rel=fs.relative(p, root), size=_entry_size(p, storage), storage=storage,
                               roots=confine))
    return files, root


def _entry_size(path: str, storage: fs.StorageOptions) -> int:
    """A listed input's size; 0 for an entry the input layer will refuse when it is read
    (a dangling link, a link out of the inputs, a FIFO): listing never opens it."""
    if fs.is_local(path) and not os.path.isfile(path):
        return 0
    return fs.stat(path, storage).size


@contextlib.contextmanager
def _shared_hint(entry: Any, subs: Mapping[str, str]):
    """A SpecError raised for a spec entry that uses ``{shared}`` or ``{models}`` says
    what the placeholder became and which variable points it elsewhere (a missing model
    or list is usually a missing folder)."""
    try:
        yield
    except SpecError as exc:
        used = json.dumps(entry, default=str)
        hints = []
        for name, var, default in (("shared", "DATAPIPE_SHARED", "<spec folder>/../../shared"),
                                   ("models", "DATAPIPE_MODELS", "<spec folder>/../models")):
            if "{" + name + "}" not in used:
                continue
            value = subs[name]
            origin = (f"${var}" if var in os.environ
                      else f"the default {default}; set {var} to the folder that holds them")
            missing = "" if os.path.isdir(value) else " (that folder does not exist)"
            hints.append(f"{{{name}}} = {value}{missing}, from {origin}")
        if not hints:
            raise
        raise SpecError(f"{exc} [{'; '.join(hints)}]") from None


_PATH_KEYS = frozenset({"model", "models", "tokenizer", "cutoffs",
                        "eval_sets", "index", "block_files", "allow_files", "tag_files"})
_PATH_SUFFIXES = ("_path", "_dir", "_in", "_out")


def is_path_key(key: str) -> bool:
    """Whether a stage config key names a file or folder (so a relative value is
    resolved against the spec's folder): ``model``, ``models`` (a mapping of paths),
    ``tokenizer``, ``cutoffs``, decontamination's ``eval_sets`` and ``index``, the URL
    filter's ``block_files``/``allow_files``/``tag_files``, and ``*_path``, ``*_dir``,
    ``*_in``, ``*_out``. A
    plugin stage's path options follow the same names."""
    return key in _PATH_KEYS or key.endswith(_PATH_SUFFIXES)


def _resolve_config_paths(cfg: Any, spec_dir: Path) -> Any:
    """``cfg`` (a stage's config mapping) with its relative path values made absolute
    against ``spec_dir``; URIs and absolute paths stay as they are."""
    if not isinstance(cfg, dict):
        return cfg

    def resolve(value: Any) -> Any:
        if isinstance(value, str) and value and not os.path.isabs(value) and fs.scheme(value) is None:
            return str(spec_dir / value)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    return {k: resolve(v) if isinstance(k, str) and is_path_key(k) else v for k, v in cfg.items()}


def _check_source_name(sname: Any, names: set[str], where: str) -> None:
    """A source names a folder (``source=<name>``) and shard files: it must be usable as one."""
    if not isinstance(sname, str) or not sname:
        raise SpecError(f"{where}: 'name' must be a non-empty string, got {sname!r}")
    if sname in names:
        raise SpecError(f"{where}: source name {sname!r} is used twice; names must be unique")
    bad = sorted({c for c in sname if c in _BAD_NAME_CHARS or c.isspace()})
    if sname in (".", "..") or sname.startswith(".") or bad:
        raise SpecError(f"{where}: source name {sname!r} cannot name a folder"
                        + (f" (it contains {''.join(bad)!r})" if bad else " (it starts with '.')")
                        + "; use letters, digits, '_' and '-', e.g. 'web_en'")


def default_shared(spec_dir: Path) -> str:
    return os.environ.get("DATAPIPE_SHARED", str((spec_dir / ".." / ".." / "shared").resolve()))


def load_job(path: str | os.PathLike, *, output: str | None = None, registry: Registry | None = None,
             readers: Mapping[str, type] | None = None) -> JobSpec:
    """Load and check a job spec; ``output`` overrides the spec's output folder.
    ``registry``: stage name -> class (default: every installed plugin's stages,
    :func:`datapipe.plugins.stage_registry`); ``readers``: format -> reader class
    (default: the built-in and plugin readers, :func:`datapipe.readers.reader_registry`)."""
    if registry is None:
        from datapipe.plugins import stage_registry

        registry = stage_registry()
    path = Path(path)
    raw = load_yaml_mapping(path, what="job spec", keys=TOP_KEYS)
    spec_dir = path.resolve().parent
    subs = {
        "spec_dir": str(spec_dir),
        "stdlib": sysconfig.get_paths()["stdlib"],
        "shared": default_shared(spec_dir),
        "models": os.environ.get("DATAPIPE_MODELS", str((spec_dir / ".." / "models").resolve())),
    }
    unexpanded, raw = raw, _expand(raw, subs)
    _check_top_level(raw, path)
    execution = build(ExecutionSpec, raw.get("execution"), where=f"{path}: execution")
    limits = _limits(raw, path)
    output_options = build(OutputSpec, raw.get("output_options"), where=f"{path}: output_options")
    storage = fs.storage_from_mapping(raw.get("storage"), where=str(path)).capture()
    out = _output(raw, output, path, spec_dir)
    sources = _sources(raw, unexpanded, path, spec_dir, subs, storage, readers)
    stages = _stages(raw, unexpanded, path, spec_dir, {s.name for s in sources}, subs, registry)
    shards = _sink_options(raw, stages, path)
    _check_output_is_safe(out, spec_dir, sources, path, storage)
    job = JobSpec(name=raw["name"], path=str(path), output=out, on_error=raw.get("on_error", "skip"),
                  sources=tuple(sources), stages=tuple(stages), execution=execution,
                  output_options=output_options, shards=shards, storage=storage, limits=limits)
    check_chain(job, registry)
    return job


def _limits(raw: dict, path: Path) -> Any:
    """The ``limits:`` block (:class:`~datapipe.readers.inputs.InputLimits`), or None
    when the spec has none (the defaults)."""
    if raw.get("limits") is None:
        return None
    from datapipe.readers.inputs import InputLimits

    return build(InputLimits, raw["limits"], where=f"{path}: limits")


def _check_top_level(raw: dict, path: Path) -> None:
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise SpecError(f"{path}: unknown top-level key(s) {sorted(unknown)}; valid keys: {sorted(TOP_KEYS)}")
    for key in ("name", "output", "sources", "stages"):
        if key not in raw:
            raise SpecError(f"{path}: missing required key {key!r}")
    name = raw["name"]
    if not isinstance(name, str) or not name:
        raise SpecError(f"{path}: 'name' must be a non-empty string")
    on_error = raw.get("on_error", "skip")
    if on_error not in ("skip", "fail"):
        raise SpecError(f"{path}: 'on_error' must be 'skip' or 'fail', got {on_error!r}")


def _output(raw: dict, output: str | None, path: Path, spec_dir: Path) -> str:
    """The output folder or URI: ``output`` (from the command line, relative to where the
    user is) or the spec's (relative to the spec)."""
    if output is not None:
        fs.check_output(output, where="--output")
        return output if not fs.is_local(output) else str(Path(fs.local_path(output)).resolve())
    out = raw["output"]
    if not isinstance(out, str) or not out:
        raise SpecError(f"{path}: 'output' must be a folder path or URI")
    fs.check_output(out, where=f"{path}: output")
    out = fs.absolute(out, str(spec_dir))
    return str(Path(out).resolve()) if fs.is_local(out) else out


def _sources(raw: dict, unexpanded: dict, path: Path, spec_dir: Path, subs: Mapping[str, str],
             storage: fs.StorageOptions, readers: Mapping[str, type] | None) -> list[SourceSpec]:
    from datapipe.readers import reader_class, reader_registry

    readers = readers if readers is not None else reader_registry()

    if not isinstance(raw["sources"], list) or not raw["sources"]:
        raise SpecError(f"{path}: 'sources' must be a non-empty list")
    sources: list[SourceSpec] = []
    names: set[str] = set()
    for i, src in enumerate(raw["sources"]):
        where = f"{path}: sources[{i}]"
        if not isinstance(src, dict):
            raise SpecError(f"{where}: each source is a mapping with keys {sorted(SOURCE_KEYS)}")
        bad = set(src) - SOURCE_KEYS
        if bad:
            raise SpecError(f"{where}: unknown key(s) {sorted(bad)}; valid keys: {sorted(SOURCE_KEYS)}")
        for key in ("name", "format", "paths"):
            if key not in src:
                raise SpecError(f"{where}: missing required key {key!r}")
        sname = src["name"]
        _check_source_name(sname, names, where)
        names.add(sname)
        where = f"{path}: source {sname!r}"
        fmt = src["format"]
        reader = reader_class(readers, fmt, where=where)
        paths = [src["paths"]] if isinstance(src["paths"], str) else src["paths"]
        if not isinstance(paths, list) or not paths:
            raise SpecError(f"{where}: 'paths' must be a path or a non-empty list of paths/globs")
        options = build(reader.Options, src.get("options"), where=f"{where}: options")
        with _shared_hint(unexpanded["sources"][i], subs):
            files, root = _resolve_files(paths, base=spec_dir, where=where, storage=storage)
        sources.append(SourceSpec(name=sname, format=fmt, files=tuple(files), options=options, root=root,
                                  reader=reader))
    return sources


def _stages(raw: dict, unexpanded: dict, path: Path, spec_dir: Path, names: set[str], subs: Mapping[str, str],
            registry: Registry) -> list[StageSpec]:
    from datapipe.plugins import stage_class

    if not isinstance(raw["stages"], list):
        raise SpecError(f"{path}: 'stages' must be a list like [{{normalize: {{}}}}, {{length: {{min_chars: 50}}}}]")
    stages = []
    for i, entry in enumerate(raw["stages"]):
        if isinstance(entry, str):
            entry = {entry: {}}
        only = None
        instance = None
        if isinstance(entry, dict) and "stage" in entry:
            # long form: {stage: kind, name: instance, sources: [..], config: {..}}
            only, instance = _long_form(entry, path, i, names)
            entry = {entry["stage"]: entry.get("config")}
        if not isinstance(entry, dict) or len(entry) != 1:
            raise SpecError(f"{path}: stages[{i}] must be a one-key mapping '<stage>: {{config}}' or "
                            f"'{{stage: <name>, sources: [..], config: {{..}}}}', got {entry!r}")
        (sname, cfg), = entry.items()
        if isinstance(sname, str) and sname not in registry:
            close = difflib.get_close_matches(sname, list(registry), n=1)
            if close:
                raise SpecError(f"{path}: stages[{i}]: unknown stage {sname!r}; did you mean {close[0]!r}? "
                                f"valid stages: {', '.join(sorted(registry))}")
        cls = stage_class(registry, sname, where=f"{path}: stages[{i}]")
        with _shared_hint(unexpanded["stages"][i], subs):
            config = build(cls.Config, _resolve_config_paths(cfg, spec_dir), where=f"{path}: stages[{i}] ({sname})")
        stages.append(StageSpec(name=instance or sname, cls=cls, config=config, index=i,
                                sources=frozenset(only) if only is not None else None))
    if len({s.name for s in stages}) != len(stages):
        dup = sorted({s.name for s in stages if sum(t.name == s.name for t in stages) > 1})
        raise SpecError(f"{path}: stage name(s) {dup} appear more than once; to run a stage kind twice give each "
                        "entry its own name: '- {stage: quality, name: quality_web, sources: [web], config: {..}}'")
    _check_global_groups(stages, path)
    return stages


def _check_global_groups(stages: list[StageSpec], path: Path) -> None:
    """Instances of one global stage kind with ``sources:`` (per-domain groups, e.g. a
    ``dedup`` for code and one for prose) must not share a source: a document in two
    groups would be decided on twice with two configs, the later group seeing only what
    the earlier one kept. A pass over every group is an instance without ``sources:``."""
    seen: dict[tuple[str, str], StageSpec] = {}
    for st in stages:
        if st.sources is None or not issubclass(st.cls, GlobalStage):
            continue
        for src in sorted(st.sources):
            other = seen.setdefault((st.kind, src), st)
            if other is not st:
                raise SpecError(
                    f"{path}: stages[{other.index}] ({other.name}) and stages[{st.index}] ({st.name}) are both "
                    f"{st.kind!r} stages over source {src!r}; a source belongs to one {st.kind} group. Remove "
                    f"{src!r} from one of their 'sources' lists; for a pass across groups add a {st.kind} "
                    "without 'sources' (it runs over every source)")


def _sink_options(raw: dict, stages: list[StageSpec], path: Path) -> Any:
    """The ``shards:`` options, built into the ``SinkOptions`` of the stage that writes
    them (``tokenize``); None when no stage has a sink."""
    sinking = [st for st in stages if st.cls.SinkOptions is not None]
    for st in sinking:
        if st.sources is not None:
            raise SpecError(f"{path}: stages[{st.index}] ({st.name}) must run on every source: token shards are "
                            "written for every source's kept documents; remove its 'sources' list")
    if len(sinking) > 1:
        raise SpecError(f"{path}: stages {[st.name for st in sinking]} each write shards; keep one of them")
    if "shards" in raw and not sinking:
        raise SpecError(f"{path}: 'shards' is set but no stage produces tokens; add a 'tokenize' stage or remove 'shards'")
    if not sinking:
        return None
    return build(sinking[0].cls.SinkOptions, raw.get("shards"), where=f"{path}: shards")


_INSTANCE_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _long_form(entry: dict, path: Path, i: int, names: set[str]) -> tuple[list[str] | None, str | None]:
    """Check a long-form stage entry; its ``sources`` list (None: every source) and
    instance ``name`` (None: the kind's name)."""
    bad = set(entry) - {"stage", "name", "sources", "config"}
    if bad:
        raise SpecError(f"{path}: stages[{i}]: unknown key(s) {sorted(bad)}; the long form takes "
                        "'stage', 'name', 'sources' and 'config'")
    if not isinstance(entry["stage"], str):
        raise SpecError(f"{path}: stages[{i}]: 'stage' must be a stage name, got {entry['stage']!r}")
    only = entry.get("sources")
    if only is not None or "name" not in entry:
        if not isinstance(only, list) or not only or not all(isinstance(x, str) for x in only):
            raise SpecError(f"{path}: stages[{i}]: 'sources' must be a non-empty list of source names")
        unknown = sorted(set(only) - names)
        if unknown:
            raise SpecError(f"{path}: stages[{i}]: unknown source(s) {unknown}; sources are {sorted(names)}")
    instance = entry.get("name")
    if instance is not None and not (isinstance(instance, str) and _INSTANCE_NAME.fullmatch(instance)):
        raise SpecError(f"{path}: stages[{i}]: 'name' must be lower-case letters, digits and '_' "
                        f"(it prefixes reject reasons, e.g. quality_web:low_score), got {instance!r}")
    return only, instance


def _check_output_is_safe(out: str, spec_dir: Path, sources: list[SourceSpec], path: Path,
                          storage: fs.StorageOptions) -> None:
    """The output folder is replaced wholesale on --force: it must not hold the spec or
    any input, nor lie inside a source's folder or glob root (the job would read its own
    previous output), nor be an existing file."""
    where = f"{path}: output {out}"
    try:
        if fs.is_file(out, storage):
            raise SpecError(f"{where} is an existing file; choose a folder path (it will hold documents/, "
                            "rejects/, shards/ and manifest.json)")
    except OSError as exc:
        raise SpecError(f"{where}: cannot reach it: {exc}") from None
    for p in [str(spec_dir)] + [s.root for s in sources]:
        if fs.is_inside(p, out):
            raise SpecError(f"{where} contains {p} (the spec or a source's files); choose a separate output folder")
    for s in sources:
        if fs.is_inside(out, s.root):
            raise SpecError(f"{where} lies inside {s.root}, the folder source {s.name!r} reads from; a re-run "
                            "would read its own output. Choose an output outside every input folder")


def reader_for_source(job: JobSpec, src: SourceSpec):
    from datapipe.readers import reader_for

    cls = src.reader if src.reader is not None else reader_for(src.format)
    return cls(source=src.name, options=src.options, on_error=job.on_error,
               batch_rows=job.execution.batch_rows, max_doc_bytes=job.execution.max_doc_bytes, limits=job.limits)


def check_chain(job: JobSpec, registry: Registry) -> None:
    """Walk every source through the stages; a stage reading a column its source does
    not have at that point is an error naming the stage, the column and the fix (the
    stages of ``registry`` that add it). A stage that rewrites text after the stage
    that writes token shards is refused (:func:`_check_sink_is_last_rewrite`)."""
    _check_sink_is_last_rewrite(job)
    adders: dict[str, list[str]] = {}
    for n, cls in registry.items():
        for col in cls.adds:
            adders.setdefault(col, []).append(n)
    for src in job.sources:
        available = frozenset(reader_for_source(job, src).provides())
        for st in job.stages:
            if not st.applies_to(src.name):
                continue
            # a stage whose columns depend on its config (filter_expr) says so in config.reads
            reads = tuple(st.cls.reads) + tuple(getattr(st.config, "reads", ()))
            missing = [c for c in reads if c not in available]
            if missing:
                col = missing[0]
                fix = adders.get(col)
                how = (f"add a {' or '.join(repr(a) for a in fix)} stage before it" if fix
                       else "no registered stage adds it")
                raise SpecError(
                    f"{job.path}: stages[{st.index}] ({st.name}) reads column {col!r}, which source "
                    f"{src.name!r} (format {src.format}) does not have at that point; {how}"
                )
            available = available | frozenset(st.adds)


def rewrites_text(cls: type[Stage]) -> bool:
    """Whether a stage kind rewrites ``text`` (formatters such as ``pii`` and
    ``normalize``; rewrite+filter stages such as ``extract`` and ``c4``; global stages
    whose decisions edit documents, such as ``line_dedup``)."""
    return issubclass(cls, (FormatterStage, RewriteFilterStage)) or bool(getattr(cls, "edits_text", False))


def _check_sink_is_last_rewrite(job: JobSpec) -> None:
    """Token shards are written from the tokens the sink stage (``tokenize``) computed
    when it ran: a stage that rewrites text after it would leave the shards out of step
    with the documents (a PII address scrubbed in ``documents/`` but still in the
    shards). Such an order is an error naming both stages and the fix."""
    sink = next((st for st in job.stages if st.cls.SinkOptions is not None), None)
    if sink is None:
        return
    later = [st for st in job.stages if st.index > sink.index and rewrites_text(st.cls)]
    if later:
        names = ", ".join(f"stages[{st.index}] ({st.name})" for st in later)
        raise SpecError(
            f"{job.path}: {names} {'rewrites' if len(later) == 1 else 'rewrite'} text after stages[{sink.index}] ({sink.name}), which writes the "
            f"token shards: the shards would hold the text before {later[0].name!r} changed it. Move "
            f"'{sink.name}' after every stage that rewrites text (put it last, after '{later[-1].name}')")
