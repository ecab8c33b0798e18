"""A job with ``embed`` and ``classify`` (the packaged all-MiniLM-L6-v2 on CPU actors)
over real Wikipedia paragraphs: the embeddings and scores land in the documents' Parquet
beside the text, low scores are counted rejects, and a run interrupted mid-way resumes
from its finished splits and writes the same bytes as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_stages  # noqa: E402
from minilm import minilm_classifier  # noqa: E402

pytestmark = pytest.mark.ray
HELPER = Path(__file__).parent / "engine_stages.py"
FILES, PER_FILE = 8, 3


@pytest.fixture(scope="module", autouse=True)
def _stages():
    engine_stages.register()   # `slow`: so the run can be interrupted mid-way


def _job(folder: Path, data: Path, minilm: Path, edu: Path, threshold: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: model-stages
        output: out
        execution: {{batch_rows: 4, split_bytes: 4096}}
        sources:
          - {{name: wiki, format: jsonl, paths: ["{data}/*.jsonl"]}}
        stages:
          - embed: {{model: {minilm}, max_length: 128}}
          - classify: {{model: {edu}, prefix: edu, max_length: 128, int_score: [0, 5], min_score: {threshold!r}}}
          - slow: {{seconds: 0.4}}
    """))
    return spec


def _outputs(out: Path) -> dict[str, bytes]:
    skip = {"report.json", "report.md", "drops.png", "_SUCCESS", "ray.log"}   # run records, not data
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name not in skip}


def test_embed_classify_job_writes_columns_resumes_and_is_byte_identical(ray_session, ray_cluster, minilm_dir,
                                                                        shared_dir, tmp_path):
    from datapipe.plan import split_refs
    from datapipe.runner import run_job
    from datapipe.spec import load_job
    from stages.models.classify import Classifier
    from stages.models.embed import encode_texts

    paras = [p.strip() for p in (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
             .split("\n") if len(p.strip()) > 40]
    texts = [paras[i * 11][:1200] for i in range(FILES * PER_FILE)]
    data = tmp_path / "data"
    data.mkdir()
    for f in range(FILES):
        with open(data / f"part{f}.jsonl", "w", encoding="utf-8") as fh:
            for i in range(PER_FILE):
                fh.write(json.dumps({"id": f"p{f}-{i}", "text": texts[f * PER_FILE + i]}) + "\n")
    edu = minilm_classifier(tmp_path / "edu")
    scores = Classifier(edu, device="cpu", max_length=128).logits(texts)[:, 0]
    threshold = float(np.round(np.median(scores), 4))

    ref = _job(tmp_path / "ref", data, minilm_dir, edu, threshold)
    result = run_job(load_job(ref), echo=lambda s: None)
    out = Path(result.output)
    docs = pq.read_table(out / "documents")
    rejects = pq.read_table(out / "rejects")
    assert docs.num_rows + rejects.num_rows == len(texts)
    assert docs.schema.field("embedding").type == pa.list_(pa.float16(), 384)
    assert docs.schema.field("edu_score").type == pa.float32() and "edu_int_score" in docs.column_names
    # the vectors in the output are the library's, cast to float16
    by_text = dict(zip(texts, encode_texts(str(minilm_dir), texts, max_length=128)))
    got = np.asarray(docs.column("embedding").to_pylist(), dtype=np.float32)
    want = np.stack([by_text[t] for t in docs.column("text").to_pylist()])
    np.testing.assert_allclose(got, want, rtol=0, atol=2.5e-4)
    # every document under the threshold is a counted reject with its reason and score
    assert set(rejects.column("reject_reason").to_pylist()) == {"classify:below_min_score"}
    assert all(s >= threshold for s in docs.column("edu_score").to_pylist())
    assert rejects.num_rows == int((scores < threshold).sum()) > 0
    stage = next(st for st in result.report["stages"] if st["stage"] == "classify")
    assert stage["dropped"] == {"classify:below_min_score": rejects.num_rows}

    # interrupted once a split is done, then run again: resumes and writes the same bytes
    cut = _job(tmp_path / "cut", data, minilm_dir, edu, threshold)
    env = dict(ray_cluster["env"], RAY_ADDRESS=ray_cluster["address"], DATAPIPE_PROGRESS="0",
               PYTHONPATH=str(Path(__file__).parents[2]))
    proc = subprocess.Popen([sys.executable, str(HELPER), "run", str(cut)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    total = len(split_refs(load_job(cut)))
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if list(cut.parent.glob("out.staging-*/work/done/p0/**/*.json")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the job finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGTERM)
    said, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, said[-3000:]
    again = run_job(load_job(cut), echo=lambda s: None)
    assert 1 <= again.report["splits"]["reused"] < total
    assert _outputs(Path(again.output)) == _outputs(out)
