"""``group: repository`` documents: files ordered by their imports (Python, JS/TS, Go),
cycles kept together in path order, StarCoder2's ``<repo_name>``/``<file_sep>`` format;
and fork dedup (``repo_dedup``) keeping one repository of a cluster of near-copies."""

from __future__ import annotations

import json
import re
import shutil
import sysconfig
from pathlib import Path

import pytest

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers import READERS, InputFile
from datapipe.readers.code_deps import dependency_order

STDLIB = Path(sysconfig.get_paths()["stdlib"])

# a small service beside the standard library's json package: a Python import cycle
# (models <-> validators), a TypeScript client, and a Go module with two packages
EXTRA = {
    "service/__init__.py": '"""A small service."""\nfrom .api import app\n',
    "service/api.py": "import json\nfrom service.models import Order\nfrom . import validators\n\n"
                      "app = {'orders': Order}\n",
    "service/models.py": "from dataclasses import dataclass\nfrom .validators import check\n\n\n@dataclass\n"
                         "class Order:\n    qty: int\n\n    def __post_init__(self):\n        check(self)\n",
    "service/validators.py": "def check(order):\n    from service.models import Order  # a cycle, as real code has\n"
                             "    assert isinstance(order, Order) and order.qty > 0\n",
    "web/src/client.ts": "import { Order } from './types';\nimport fetch from 'node-fetch';\n"
                         "const util = require('../lib/util.js');\nexport async function get(): Promise<Order> {\n"
                         "  return util.parse(await fetch('/orders'));\n}\n",
    "web/src/types.ts": "export interface Order { qty: number }\n",
    "web/lib/util.js": "module.exports = { parse: (r) => r.json() };\n",
    "go.mod": "module github.com/acme/service\n\ngo 1.21\n",
    "cmd/server/main.go": 'package main\n\nimport (\n\t"fmt"\n\n\t"github.com/acme/service/store"\n)\n\n'
                          'func main() { fmt.Println(store.Open()) }\n',
    "store/store.go": 'package store\n\nimport "github.com/acme/service/store/codec"\n\n'
                      'func Open() string { return codec.Name }\n',
    "store/memory.go": "package store\n\nvar mem = map[string]string{}\n",
    "store/codec/codec.go": 'package codec\n\nconst Name = "json"\n',
    "README.md": "# service\n",
}
#: (importer, imported) edges of the fixture; the json ones are the standard library's own
EDGES = [
    ("json/__init__.py", "json/decoder.py"), ("json/__init__.py", "json/encoder.py"),
    ("json/decoder.py", "json/scanner.py"), ("json/tool.py", "json/__init__.py"),
    ("service/__init__.py", "service/api.py"), ("service/api.py", "service/models.py"),
    ("service/api.py", "service/validators.py"), ("service/api.py", "json/__init__.py"),
    ("web/src/client.ts", "web/src/types.ts"), ("web/src/client.ts", "web/lib/util.js"),
    ("cmd/server/main.go", "store/store.go"), ("store/store.go", "store/codec/codec.go"),
]
CYCLE = ["service/models.py", "service/validators.py"]


def _repository(root: Path) -> Path:
    """The fixture repository: the real ``json`` package of this Python plus EXTRA."""
    repo = root / "acme-service"
    shutil.copytree(STDLIB / "json", repo / "json", ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in EXTRA.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def _read(root: Path, files: list[InputFile] | None = None, **options) -> list[dict]:
    reader = READERS["code"](source="code", options={"repos": "folders", "group": "repository", **options})
    files = files if files is not None else [
        InputFile(p, str(Path(p).relative_to(root)), Path(p).stat().st_size) for p in fs.expand(str(root))]
    return [r for sp in reader.plan(files, split_bytes=1 << 20) for t in reader.read(sp) for r in t.to_pylist()]


def _files(text: str) -> list[tuple[str, str]]:
    """A StarCoder2 document's ``(path, content)`` pairs."""
    return [tuple(part.split("\n", 1)) for part in text.split("<file_sep>")[1:]]


def test_files_follow_their_imports_and_a_cycle_stays_together(tmp_path):
    repo = _repository(tmp_path)
    [doc] = _read(tmp_path, format="starcoder2")
    assert doc["_reject_reason"] is None and doc["repo"] == "acme-service" and doc["path"] is None
    text = doc["text"]
    assert text.startswith("<repo_name>acme-service<file_sep>")
    files = _files(text)
    order = [p for p, _ in files]
    # every file once, byte for byte, and nothing else in the document
    on_disk = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file())
    assert sorted(order) == on_disk
    assert all((repo / p).read_text() == content for p, content in files)
    assert text == "<repo_name>acme-service" + "".join(f"<file_sep>{p}\n{c}" for p, c in files)
    # each file after the files it imports (outside its cycle)
    at = {p: i for i, p in enumerate(order)}
    for importer, imported in EDGES:
        assert at[imported] < at[importer], (importer, imported, order)
    # the cycle: together, in path order; a Go package's files together, in path order
    assert order[at[CYCLE[0]]: at[CYCLE[0]] + 2] == CYCLE
    assert order[at["store/memory.go"] + 1] == "store/store.go"
    # ties in path order: the first file is the smallest path with no imports in the repo
    assert order[0] == "README.md"
    # the same document whatever order the files were listed in
    listed = [InputFile(p, str(Path(p).relative_to(tmp_path)), Path(p).stat().st_size)
              for p in reversed(fs.expand(str(tmp_path)))]
    assert _read(tmp_path, listed, format="starcoder2")[0]["text"] == text
    # order: path and the header format keep the previous document
    [by_path] = _read(tmp_path, order="path", header="### file: {path}\n")
    assert re.findall(r"^### file: (\S+)$", by_path["text"], re.M) == on_disk


def test_ordering_is_linear_and_never_recursive_on_a_deep_chain():
    """5,000 modules, each importing the next: the order is the chain reversed (a
    recursive depth-first search would pass Python's recursion limit)."""
    n = 5000
    paths = [f"pkg/m{i:05d}.py" for i in range(n)]
    texts = [f"from pkg.m{i + 1:05d} import f\n" if i + 1 < n else "def f(): pass\n" for i in range(n)]
    assert dependency_order(paths, texts) == list(range(n - 1, -1, -1))
    # one big cycle: path order
    texts[-1] = "from pkg.m00000 import f\n"
    assert dependency_order(paths, texts) == list(range(n))


def test_hostile_import_lines_are_scanned_in_linear_time():
    """A megabyte of open import lists with no close, or of bare keywords, in each
    language: the scan stays linear (a bounded regex per line took a minute on Go's)."""
    import time

    for path, text in (("a.go", "import (\n" * 110_000), ("a.py", "from a import (\n" * 65_000),
                       ("a.js", "import " * 150_000), ("a.ts", "export a " * 100_000)):
        t0 = time.process_time()
        assert dependency_order([path, "z.txt"], [text, "z"]) == [0, 1]
        assert time.process_time() - t0 < 2.0, path


def test_starcoder2_takes_no_header_or_separator():
    with pytest.raises(SpecError, match="starcoder2.*header"):
        READERS["code"](source="code", options={"group": "repository", "format": "starcoder2", "header": "# {path}\n"})
    with pytest.raises(SpecError, match="format must be one of"):
        READERS["code"](source="code", options={"format": "starcoder"})


# ------------------------------------------------------------------ forks

def _stack_rows(repo: str, files: dict[str, str], stars: int | None) -> list[dict]:
    return [{"content": text, "max_stars_repo_name": repo, "max_stars_repo_path": path, "max_stars_count": stars}
            for path, text in files.items()]


def _fork_decisions(docs: list[dict]) -> dict[str, str]:
    """``repo_dedup`` on repository documents: its side rows (as each split's task writes
    them, ``_split``/``_row`` appended) through its decisions pass -> {dropped repo: detail}."""
    import pyarrow as pa

    from stages import REGISTRY

    stage = REGISTRY["repo_dedup"]()
    side = stage.side(pa.Table.from_pylist(docs))
    side = side.append_column("_split", pa.array(["s0"] * len(docs))).append_column(
        "_row", pa.array(range(len(docs)), pa.int64()))
    [p] = stage.passes(None)
    out = p.fn(side, **p.params).to_pylist()
    assert {r["reason"] for r in out} <= {"fork"}
    return {docs[r["_row"]]["repo"]: r["detail"] for r in out}


def test_forks_are_one_repository_kept_by_stars_then_name(tmp_path):
    """Planted forks of the standard library's json package: an exact mirror with as
    many stars (the name decides), a fork without a star count, a fork that edited a
    module and added one; a repository that is mostly the html package under other
    paths is html's fork; one that kept two json modules beside urllib is no fork."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def package(name: str) -> dict[str, str]:
        return {str(p.relative_to(STDLIB)): p.read_text() for p in sorted((STDLIB / name).glob("*.py"))}

    upstream = package("json")
    edited = dict(upstream)
    edited["json/encoder.py"] = edited["json/encoder.py"].replace("indent", "indentation")
    edited["json/compat.py"] = "from json import dumps\n\n\ndef to_text(obj):\n    return dumps(obj, sort_keys=True)\n"
    rewritten = {k: v for k, v in upstream.items() if k in ("json/__init__.py", "json/tool.py")}
    rewritten.update({f"json/{k}": v for k, v in package("html").items()})
    mixed = {k: v for k, v in upstream.items() if k in ("json/__init__.py", "json/tool.py")}
    mixed.update(package("urllib"))
    rows = (_stack_rows("python/json", upstream, 120) + _stack_rows("zed/json-mirror", upstream, 120)
            + _stack_rows("bob/json", upstream, None) + _stack_rows("alice/json", edited, 3)
            + _stack_rows("carol/json-html", rewritten, 1) + _stack_rows("python/http", package("http"), 50)
            + _stack_rows("python/html", package("html"), 40) + _stack_rows("dave/json-urllib", mixed, 2))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "repos.parquet")
    files = [InputFile(str(tmp_path / "repos.parquet"), "repos.parquet", (tmp_path / "repos.parquet").stat().st_size)]
    docs = [r for r in _read(tmp_path, files, format="starcoder2") if r["_reject_reason"] is None]
    assert len(docs) == 8
    dropped = _fork_decisions(docs)
    kept = {d["repo"]: f"{d['repo']} ({d['id']})" for d in docs}
    assert dropped == {"zed/json-mirror": kept["python/json"], "bob/json": kept["python/json"],
                       "alice/json": kept["python/json"], "carol/json-html": kept["python/html"]}
    # the same decisions whatever order the repositories come in
    assert _fork_decisions(docs[::-1]) == dropped
    # files (group: file) take no part
    file_docs = [r for r in _read(tmp_path, files, group="file") if r["_reject_reason"] is None]
    assert _fork_decisions(file_docs) == {}


def test_decontaminate_cut_leaves_the_rest_of_the_code_as_written(tmp_path):
    """A benchmark function cut out of a repository document (``mode: cut``): the other
    files keep their indentation (the cut collapsed every run of spaces in the document)."""
    import datapipe
    import pyarrow as pa

    repo = _repository(tmp_path)
    [doc] = _read(tmp_path, format="starcoder2")
    source = (repo / "json" / "encoder.py").read_text()
    start = source.index("def py_encode_basestring(")
    item = source[start: source.index("\n\n\n", start)]
    (tmp_path / "eval.jsonl").write_text(json.dumps({"prompt": item}) + "\n")
    stage = datapipe.stage("decontaminate", eval_sets={"humaneval": [str(tmp_path / "eval.jsonl")]},
                           text_fields=["prompt"], mode="cut")
    out = stage.mark(pa.table({"id": [doc["id"]], "source": ["code"], "text": [doc["text"]]})).to_pylist()[0]
    assert out["reject_reason"] is None
    files = dict(_files(out["text"]))
    assert "def py_encode_basestring(" not in files["json/encoder.py"]
    for path, content in _files(doc["text"]):
        if path != "json/encoder.py":
            assert files[path] == content, path
    assert "    def default(self, o):\n" in files["json/encoder.py"]


SENTINELS = ["<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>", "<repo_name>", "<file_sep>"]


def code_tokenizer(shared_dir: Path, out: Path) -> Path:
    """GPT-NeoX's real tokenizer with StarCoder2's sentinels added as special tokens."""
    from tokenizers import AddedToken, Tokenizer

    tok = Tokenizer.from_file(str(shared_dir / "tokenizers" / "gpt-neox-20b.tokenizer.json"))
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SENTINELS])
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    return out / "tokenizer.json"


def test_separators_are_one_special_token_each_and_a_file_holding_one_is_a_reject(tmp_path, shared_dir):
    import pyarrow as pa

    from stages.tokenize.stage import Tokenize, TokenizeConfig

    repo = _repository(tmp_path / "in")
    (repo / "service" / "prompts.py").write_text('SEP = "<file_sep>"  # StarCoder2\'s file separator\n')
    rows = _read(tmp_path / "in", format="starcoder2")
    [doc] = [r for r in rows if r["_reject_reason"] is None]
    [bad] = [r for r in rows if r["_reject_reason"] is not None]
    assert bad["_reject_reason"] == "read:separator" and bad["path"] == "service/prompts.py"
    assert "holds <file_sep> at character 7" in bad["_reject_detail"]
    n_files = len(_files(doc["text"]))
    path = code_tokenizer(shared_dir, tmp_path / "tok")
    stage = Tokenize(TokenizeConfig(tokenizer=str(path), structure={"code": ["<repo_name>", "<file_sep>"]}))
    stage.setup()
    text = "A post quoting <file_sep> and <repo_name> as text."
    out = stage.annotate(pa.table({"source": ["code", "web"], "text": [doc["text"], text]}))
    ids, web = out["tokens"].to_pylist()
    sep, name = stage._tok.token_to_id("<file_sep>"), stage._tok.token_to_id("<repo_name>")
    assert ids[0] == name and ids.count(name) == 1 and ids.count(sep) == n_files
    assert stage._tok.decode(ids, skip_special_tokens=False) == doc["text"]
    assert sep not in web and name not in web and stage._tok.decode(web) == text
    # a tokenizer without the separators is refused in one line naming the fix
    with pytest.raises(SpecError, match="not special tokens.*--preset code"):
        Tokenize(TokenizeConfig(tokenizer=str(shared_dir / "tokenizers" / "gpt-neox-20b.tokenizer.json"),
                                structure={"code": ["<file_sep>"]})).setup()


def test_repo_files_takes_failing_files_out_of_a_repository_document(tmp_path):
    """code_filter's file rules per file of a starcoder2 document: the generated stub,
    the vendored copy and the minified bundle go, the other files stay byte for byte in
    their order; a repository with nothing left is one reject; a file row is judged whole."""
    import pyarrow as pa

    from stages import REGISTRY

    repo = _repository(tmp_path / "in")
    planted = {
        "service/orders_pb2.py": "# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n"
                                 "# source: orders.proto\nfrom google.protobuf import descriptor as _descriptor\n",
        "web/node_modules/left-pad/index.js": "module.exports = function leftPad(s, n) { return s.padStart(n); };\n",
        "web/dist/app.min.js": "var a=function(b,c){return b+c};" * 400 + "\n",
    }
    for name, text in planted.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    only_generated = tmp_path / "in" / "stubs"
    only_generated.mkdir()
    (only_generated / "a_pb2.py").write_text(planted["service/orders_pb2.py"])
    rows = [r for r in _read(tmp_path / "in", format="starcoder2") if r["_reject_reason"] is None]
    file_row = _read(tmp_path / "in", group="file", repos="folders")
    file_row = [r for r in file_row if r["path"] == "service/orders_pb2.py"]
    # what code_filter decides on the same files read one document each (group: file)
    each = [r for r in _read(tmp_path / "in", group="file", repos="folders")
            if r["_reject_reason"] is None and r["repo"] == "acme-service"]
    code_filter = REGISTRY["code_filter"]()
    code_filter.setup()
    passes = {r["path"] for r, ok in zip(each, code_filter.keep(pa.Table.from_pylist(each))[0]) if ok}
    assert not passes & set(planted) and len(passes) == len(each) - 4   # the planted three and README.md
    stage = REGISTRY["repo_files"]()
    stage.setup()
    out = stage.rewrite(pa.Table.from_pylist(rows + file_row))
    by_repo = {r["repo"]: i for i, r in enumerate(rows)}
    i = by_repo["acme-service"]
    before = _files(rows[i]["text"])
    after = _files(out.texts[i].as_py())
    assert out.keep[i] and after == [(p, c) for p, c in before if p in passes]
    assert out.changes["files_removed"][i] == 4
    assert {k: int(v[i]) for k, v in out.changes.items() if k.startswith("files_removed:")} == {
        "files_removed:generated": 1, "files_removed:vendored": 2, "files_removed:trivial": 1}   # dist/: a build folder
    j = by_repo["stubs"]
    assert not out.keep[j] and out.reasons[j].startswith("no_files|1 file(s), all removed; first a_pb2.py: generated")
    assert not out.keep[-1] and out.reasons[-1].startswith("generated")
