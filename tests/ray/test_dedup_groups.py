"""Dedup per domain (docs/dedup.md "Dedup per group of sources"): one job runs a
``dedup`` over its code sources with token shingles and case and punctuation kept, one
over its prose sources with word shingles and the default normalisation, and a last
``dedup`` without ``sources:`` over everything. Each group's duplicates are found by
its own config only (no single config finds both kinds); a group's stage neither
indexes nor counts the other group's documents; a copy across groups is left to the
last pass, which keeps the copy of the source listed first in its ``source_priority``."""

from __future__ import annotations

import json
import sysconfig
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datapipe.runner import run_job
from datapipe.spec import load_job
from stages.dedup.minhash import Normalisation, Shingling, shingles

pytestmark = pytest.mark.ray

CODE = {"shingle": "token", "lowercase": False, "punctuation": False, "digits": False}   # docs/code.md
CODE_FILES = ("json/encoder.py", "json/decoder.py", "json/scanner.py", "textwrap.py", "heapq.py")


def _jaccard(x: str, y: str, cfg: dict) -> float:
    norm = Normalisation(**{k: cfg.get(k, True) for k in ("lowercase", "punctuation", "digits")})
    sh = Shingling(kind=cfg.get("shingle", "word"), n=5)
    a, b = set(shingles(x, norm=norm, shingling=sh)), set(shingles(y, norm=norm, shingling=sh))
    return len(a & b) / len(a | b)


@pytest.fixture(scope="module")
def corpus(shared_dir: Path) -> dict[str, list[tuple[str, str]]]:
    """{source: [(id, text)]}: real standard-library modules and WikiText-2 paragraphs,
    with one planted duplicate per group and one across the groups."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    code = [(f"code/{i}", (lib / f).read_text(encoding="utf-8")) for i, f in enumerate(CODE_FILES)]
    enc = code[0][1]
    respaced = enc.replace(" = ", "=").replace(", ", ",").replace(" == ", "==").replace("(self,", "( self ,")
    raw = (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    paras = [p.strip() for p in raw.split("\n") if 120 <= len(p.split()) <= 300][:12]
    assert len(paras) == 12
    return {
        "code": code,
        # a fork re-spaced encoder.py (a formatter's doing), kept bisect.py as it was, and
        # ships a README that is a copy of a wiki paragraph: the copy across groups
        "forks": [("forks/encoder", respaced), ("forks/bisect", (lib / "bisect.py").read_text(encoding="utf-8")),
                  ("forks/readme", paras[3])],
        "wiki": [(f"wiki/{i}", p) for i, p in enumerate(paras[:8])],
        # a shouting copy of wiki/1 (same words in capitals, full stops as '!')
        "web": [(f"web/{i}", p) for i, p in enumerate(paras[8:])] + [("web/shout", paras[1].upper().replace(".", " !"))],
    }


def _spec(tmp_path: Path, corpus: dict[str, list[tuple[str, str]]]) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for src, docs in corpus.items():
        (data / f"{src}.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    sources = "".join(f"""
          - name: {src}
            format: jsonl
            paths: [data/{src}.jsonl]
            options: {{id_key: id}}""" for src in corpus)
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: dedup-groups
        output: out
        sources:{sources}
        stages:
          - stage: dedup
            name: dedup_code
            sources: [code, forks]
            config: {{shingle: token, lowercase: false, punctuation: false, digits: false,
                      source_priority: [code, forks]}}
          - stage: dedup
            name: dedup_prose
            sources: [wiki, web]
            config: {{source_priority: [wiki, web]}}
          - dedup: {{source_priority: [wiki, web, code, forks]}}
        """))
    return spec


def test_each_group_dedups_with_its_own_config_and_the_last_pass_across_groups(ray_session, tmp_path, corpus):
    code, fork = corpus["code"][0][1], corpus["forks"][0][1]
    wiki, shout = corpus["wiki"][1][1], corpus["web"][-1][1]
    # the planted pairs: each is a duplicate (>= 0.8) under its own group's config only
    assert _jaccard(code, fork, CODE) == 1.0 and _jaccard(code, fork, {}) < 0.8
    assert _jaccard(wiki, shout, {}) == 1.0 and _jaccard(wiki, shout, CODE) < 0.1

    result = run_job(load_job(_spec(tmp_path, corpus)), echo=lambda s: None)
    report = result.report
    assert report["accounting_ok"], report["problems"]
    out = Path(result.output)
    docs = pq.read_table(out / "documents").to_pylist()
    native = {d["id"]: d["source_id"] for d in docs}   # the detail names the survivor's id
    rejects = {r["source_id"]: (r["reject_stage"], r["reject_reason"], native[r["reject_detail"]])
               for r in pq.read_table(out / "rejects").to_pylist()}
    assert rejects == {
        # token shingles see through the re-spacing (it normalises to the same text)
        "forks/encoder": ("dedup_code", "dedup_code:exact", "code/0"),
        "web/shout": ("dedup_prose", "dedup_prose:exact", "wiki/1"),
        # identical text in two groups: neither group's stage saw the other's copy
        "forks/readme": ("dedup", "dedup:exact", "wiki/3"),
    }
    assert len(docs) == sum(len(d) for d in corpus.values()) - 3

    # each group's stage counted and reported its own sources only
    stages = {st["stage"]: st for st in report["stages"]}
    assert {s for s, v in stages["dedup_code"]["per_source"].items() if v["docs_in"]} == {"code", "forks"}
    assert {s for s, v in stages["dedup_prose"]["per_source"].items() if v["docs_in"]} == {"wiki", "web"}
    assert stages["dedup_code"]["docs_in"] == len(corpus["code"]) + len(corpus["forks"])
    assert stages["dedup"]["docs_in"] == len(docs) + 1
    assert list(report["stage_reports"]["dedup_code"]["removed_per_source"]) == ["code", "forks"]
    assert report["stage_reports"]["dedup_code"]["params"]["shingle"] == "token"
    assert list(report["stage_reports"]["dedup_prose"]["removed_per_source"]) == ["wiki", "web"]
    assert list(report["stage_reports"]["dedup"]["removed_per_source"]) == ["code", "forks", "wiki", "web"]
