"""The sample job's code documents are the source files, byte for byte, and its token
shards decode to them (issue #36, item 1). The code comes from this interpreter's
standard library (``{stdlib}`` in jobs/sample.yaml); the only rewrite a code document may
get on the way is the ``pii`` stage's replacement of the spans it found, and that is
replayed here on the source file with the job's own ``pii`` config."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tokenizers import Tokenizer

import datapipe
from datapipe.megatron import read_idx

pytestmark = pytest.mark.e2e

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _job_code_files(repo_dir: Path) -> tuple[list[str], dict]:
    spec = yaml.safe_load((repo_dir / "jobs" / "sample.yaml").read_text())
    code = next(s for s in spec["sources"] if s["name"] == "code")
    files = sorted({str(p.relative_to(STDLIB)) for pat in code["paths"]
                    for p in STDLIB.glob(pat.replace("{stdlib}/", ""))})
    pii = next(st["pii"] for st in spec["stages"] if "pii" in st)
    return files, pii


def _shard_texts(shards: Path) -> list[str]:
    manifest = json.loads((shards / "manifest.json").read_text())
    tok = Tokenizer.from_file(str(shards / "tokenizer.json"))
    eos, texts = manifest["tokenizer"]["eos_id"], []
    for sh in manifest["shards"]:
        tokens = np.fromfile(shards / sh["bin"], dtype=manifest["dtype"])
        idx = read_idx(shards / sh["idx"])
        for ptr, n in zip(idx.pointers, idx.lengths):
            seq = tokens[ptr // tokens.itemsize: ptr // tokens.itemsize + n]
            assert seq[-1] == eos
            texts.append(tok.decode(seq[:-1].tolist(), skip_special_tokens=False))
    return texts


def test_sample_code_documents_are_the_source_files_and_shards_decode_to_them(sample_output, repo_dir):
    out, _ = sample_output
    files, pii_config = _job_code_files(repo_dir)
    docs = pa.concat_tables(pq.read_table(f) for f in sorted((out / "documents" / "code").glob("*.parquet")))
    rows = {r["path"]: r for r in docs.to_pylist()}
    assert sorted(rows) == files and len(files) == 8          # every file kept, none twice

    scrub = datapipe.stage("pii", **pii_config)
    untouched = 0
    for path, row in rows.items():
        src = (STDLIB / path).read_bytes().decode("utf-8")
        if not any(row["pii_counts"].values()):
            assert row["text"] == src, path
            untouched += 1
        else:   # the pii stage's replacements, applied to the file itself: nothing else changed
            kept, _ = scrub(pa.table({"id": [row["id"]], "text": [src]}))
            assert row["text"] == kept.column("text")[0].as_py(), path
        assert row["language"] == "Python" and row["license"] == "PSF-2.0"
    assert untouched >= 6
    indented = sum(line.startswith("    ") for r in rows.values() for line in r["text"].splitlines())
    assert indented > 1500                                  # 0 before issue #36

    assert sorted(_shard_texts(out / "shards" / "code")) == sorted(r["text"] for r in rows.values())
