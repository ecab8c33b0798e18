"""The arxiv reader on a bulk tar built from the 11 real papers of the shared RedPajama
arXiv sample (tests/arxiv_fixture.py): preamble, comments, macros, bibliography and
appendix handled; \\input/\\include followed; newest version kept; broken members named."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from datapipe.readers import READERS, InputFile
from datapipe.readers.arxiv import strip_comments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arxiv_fixture import build  # noqa: E402


def _read(path: Path, **options) -> list[dict]:
    reader = READERS["arxiv"](source="arxiv", options=options)
    files = [InputFile(str(path), path.name, path.stat().st_size)]
    return [row for split in reader.plan(files) for t in reader.read(split) for row in t.to_pylist()]


@pytest.fixture(scope="module")
def fixture(shared_dir, tmp_path_factory):
    return build(shared_dir, tmp_path_factory.mktemp("arxiv"))


def test_bulk_tar_papers_are_cleaned_like_redpajama(fixture):
    rows = _read(fixture["tar"], metadata_file=str(fixture["metadata"]))
    docs = {r["source_id"]: r for r in rows if r["_reject_reason"] is None}
    assert len(docs) == len(fixture["bodies"])
    for pid, body in fixture["bodies"].items():
        key = f"{pid}v2" if pid == fixture["multi"] else f"{pid}v1"
        text = docs[key]["text"]
        meta = json.loads(docs[key]["metadata"])
        assert meta["arxiv_id"] == pid and meta["version"] == int(key[-1]) and meta["categories"]
        assert docs[key]["url"] == f"https://arxiv.org/abs/{pid}"
        for gone in ("\\documentclass", "\\usepackage", "An abstract RedPajama drops", "inline comment", "preamble comment", "intro file",
                     "thebibliography", "Appendix material", "\\newcommand", "\\end{document}"):
            assert gone not in text, (pid, gone)
        assert text.startswith(body.split("\n", 1)[0].strip())               # from the first \section
        assert "$\\mathbb{R}^n$ and $\\left\\|x\\right\\|$ with $\\varepsilon$ small." in text   # macros
        if "\\input" not in body:                                          # the body is all there
            want = re.sub(r"\\bibliographystyle\{[^{}]*\}", "", strip_comments(body.split("\n", 1)[-1]))  # typesets nothing
            assert " ".join(want.replace("\\end{document}", "").split()[-40:]) in " ".join(text.split()), pid
    multi = docs[f"{fixture['multi']}v2"]["text"]
    assert "A sentence added in the second version." in multi and "\\input" not in multi
    real_inputs = json.loads(docs["1801.00216v1"]["metadata"])["missing_inputs"]
    assert "introduction2.inc" in real_inputs                                 # the real paper's own \input
    old = [r for r in rows if r["_reject_reason"] == "read:old_version"]
    assert [r["source_id"] for r in old] == [f"{fixture['multi']}v1"] and "v2" in old[0]["_reject_detail"]
    for key, reason in fixture["broken"].items():
        r = next(r for r in rows if r["source_id"] == key)
        assert r["_reject_reason"] == f"read:{reason}" and r["_reject_detail"].startswith(key)
    assert "hep-ex/0408102v1" in docs


def test_versions_all_keeps_both_and_ids_stay_distinct(fixture):
    rows = _read(fixture["tar"], versions="all")
    kept = [r for r in rows if r["_reject_reason"] is None]
    keys = [r["source_id"] for r in kept]
    assert f"{fixture['multi']}v1" in keys and f"{fixture['multi']}v2" in keys
    assert len({r["id"] for r in rows}) == len(rows)
    assert _read(fixture["tar"], versions="all") == rows                      # deterministic


def test_a_flag_macro_tested_by_ifdefined_and_bibliographystyle_leave_nothing_behind(shared_dir):
    """The stable-nalu paper's sources (public on GitHub) do both: ``\\def\\nonanonymous{}``
    tested by ``\\ifdefined\\nonanonymous`` around the acknowledgements (expanding the
    empty macro left a dangling ``\\ifdefined``), and ``\\bibliographystyle{...}`` on the
    line before ``\\bibliography{...}`` (the cut started at the second). A real body from
    the shared RedPajama sample stands in for the paper's text."""
    from datapipe.readers.arxiv import clean_paper

    line = (shared_dir / "corpora" / "arxiv" / "redpajama-arxiv-latex.jsonl").read_text(encoding="utf-8").splitlines()[0]
    body = json.loads(line)["text"]
    tail = " ".join(strip_comments(body).replace("\\end{document}", "").split()[-30:])
    main = ("\\documentclass{article}\n% COMMENT for anonymous submission\n\\def\\nonanonymous{}\n"
            "\\ifdefined\\nonanonymous\n\\iclrfinalcopy\n\\fi\n\\begin{document}\n\\maketitle\n"
            + body + "\n\\clearpage\n\\ifdefined\\nonanonymous\n\\subsubsection*{Acknowledgments}\n"
            "We thank the reviewers.\n\\else\nAcknowledgements withheld for review.\n\\fi\n"
            "\\ifx\\nonanonymous\\undefined Code withheld.\\else Code: \\url{https://example.org}.\\fi\n"
            "\\ifdefined\\chapter\\relax\\fi\n"                  # a package's macro: TeX decides, left as written
            "\n\\bibliographystyle{iclr2020_conference}\n\\bibliography{bibliography}\n"
            "\\appendix\n\\section{Appendix}\nAfter the references.\n\\end{document}\n")
    text, missing = clean_paper({"main.tex": main}, "main.tex")
    assert missing == []
    assert "\\ifdefined\\chapter\\relax\\fi" in text
    rest = text.replace("\\ifdefined\\chapter\\relax\\fi", "")
    for gone in ("\\ifdefined", "\\ifx", "\\else", "\\fi\n", "withheld", "\\bibliographystyle", "iclr2020",
                 "After the references", "\\iclrfinalcopy"):
        assert gone not in rest, gone
    assert " ".join(text.split()).endswith("\\subsubsection*{Acknowledgments} We thank the reviewers. "
                                           "Code: \\url{https://example.org}. \\ifdefined\\chapter\\relax\\fi")
    assert tail in " ".join(text.split())
