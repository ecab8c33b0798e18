"""The Python API: a registered stage on a pandas DataFrame / pyarrow Table, the
public registry, and config errors as in a job spec."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

import datapipe
from datapipe.errors import SpecError


def _c4_docs(shared_dir) -> pd.DataFrame:
    path = shared_dir / "corpora" / "redpajama" / "redpajama-c4-refined.jsonl"
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    junk = ["buy now buy now", "click here " * 3, "a b c d e f g h i j k l m n o p q r s t u v w x y z " * 4]
    return pd.DataFrame({"text": [r["text"] for r in recs] + junk,
                         "my_key": list(range(len(recs) + len(junk)))})


def test_registry_is_public():
    names = datapipe.stages()
    assert {"gopher_quality", "langid", "extract", "dedup"} <= set(names) and names == sorted(names)
    with pytest.raises(SpecError, match="valid stages"):
        datapipe.stage("gopher_qualty")


def test_stage_on_a_dataframe_returns_kept_and_rejects(shared_dir):
    df = _c4_docs(shared_dir)
    kept, rejects = datapipe.stage("gopher_quality")(df)
    assert isinstance(kept, pd.DataFrame) and isinstance(rejects, pd.DataFrame)
    assert len(kept) + len(rejects) == len(df)
    assert sorted(kept["my_key"].tolist() + rejects["my_key"].tolist()) == df["my_key"].tolist()  # user columns kept
    assert list(kept.columns) == ["text", "my_key"]
    junk = set(df["my_key"].tail(3))
    assert junk <= set(rejects["my_key"])
    assert rejects["reject_reason"].str.startswith("gopher_quality:").all()
    assert rejects["reject_stage"].eq("gopher_quality").all()
    # the same verdicts as the stage's own per-document rule, with the failing value as detail
    short = rejects[rejects["reject_reason"] == "gopher_quality:word_count"]
    assert all(int(d) < 50 for d in short["reject_detail"])
    # config is checked like a job spec's
    with pytest.raises(SpecError):
        datapipe.stage("gopher_quality", min_words=-1)
    with pytest.raises(SpecError):
        datapipe.stage("gopher_quality", no_such_option=1)


def test_stage_on_a_table_with_annotations_and_sources(shared_dir):
    table = pa.table({"text": ["This is plainly an English sentence about the weather today.",
                               "Das ist ganz sicher ein deutscher Satz über das Wetter heute.",
                               "Das ist ganz sicher ein deutscher Satz über das Wetter heute."],
                      "source": ["web", "web", "books"]})
    kept, rejects = datapipe.stage("langid", languages=["en"], sources=["web"])(table)
    assert isinstance(kept, pa.Table)
    assert kept.column("source").to_pylist() == ["web", "books"]          # books: not this stage's source
    assert kept.column("language").to_pylist() == ["en", None]
    assert rejects.column("reject_reason").to_pylist() == ["langid:language"]
    assert rejects.column("reject_detail").to_pylist() == ["de"]
    marked = datapipe.stage("langid", languages=["en"]).mark(table)
    assert marked.column("reject_reason").to_pylist() == [None, "langid:language", "langid:language"]
    with pytest.raises(SpecError, match="global stage"):
        datapipe.stage("dedup")


def test_extract_on_raw_pages_returns_their_text(shared_dir):
    """A table with only ``raw`` (as this page documents) gets the extracted ``text`` and
    ``title`` back; a DataFrame whose ``text`` is all None (Arrow's null type) works the
    same, and ``raw`` given as ``str`` is its UTF-8 bytes."""
    import gzip

    pages = sorted((shared_dir / "corpora" / "web" / "html").glob("*.html.gz"))[:4]
    raws = [gzip.decompress(p.read_bytes()) for p in pages]
    ex = datapipe.stage("extract")
    want = [ex.stage.extract_page(r, None)[0] for r in raws]
    assert all(want)
    kept, rejects = ex(pa.table({"raw": raws}))
    assert rejects.num_rows == 0
    assert kept.column_names == ["raw", "text", "title"] and kept.column("text").to_pylist() == want
    kept, rejects = ex(pd.DataFrame({"raw": raws, "text": [None] * len(raws), "page": range(len(raws))}))
    assert len(rejects) == 0 and kept["text"].tolist() == want and kept["page"].tolist() == [0, 1, 2, 3]
    marked = ex.mark(pd.DataFrame({"raw": [raws[0].decode("utf-8", "replace"), None], "text": [None, None]}))
    assert marked["text"].tolist()[0] == want[0]
    assert marked["reject_reason"].isna().tolist() == [True, False]
    assert marked["reject_reason"].tolist()[1] == "extract:empty"


def test_every_registered_stage_is_documented(repo_dir):
    """docs/stages.md has one table row per registered stage and none for a stage that is
    not registered; docs/python.md's sample of ``datapipe.stages()`` is the real output's
    ends. Registering a stage without documenting it fails here, not in a user's hands."""
    import re

    from datapipe.plugins import stage_registry

    # the bundled stages (the Ray tests add helper stages of their own to the registry in-process)
    names = sorted(n for n, cls in stage_registry().items()
                   if cls.__module__.split(".")[0] in {"stages", "datapipe", "trainer_bridge"})
    table = (repo_dir / "docs" / "stages.md").read_text(encoding="utf-8").split("| stage | kind |", 1)[1]
    rows = re.findall(r"^\| `([a-z_0-9]+)` \|", table.split("\n\n", 1)[0], flags=re.M)
    assert sorted(set(rows) - set(names)) == [], "docs/stages.md lists stages that are not registered"
    assert sorted(set(names) - set(rows)) == [], "registered stages without a row in docs/stages.md's table"
    assert len(rows) == len(set(rows)), "a stage has two rows in docs/stages.md"
    python_md = (repo_dir / "docs" / "python.md").read_text(encoding="utf-8")
    shown = re.search(r"datapipe\.stages\(\)\n# \[(.*?)\]", python_md).group(1)
    head, _, tail = shown.partition("...")
    head = re.findall(r"'([a-z_0-9]+)'", head)
    tail = re.findall(r"'([a-z_0-9]+)'", tail)
    assert head == names[: len(head)] and tail == names[len(names) - len(tail):]
