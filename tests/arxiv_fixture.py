"""Builds arXiv bulk-source fixtures from the 11 real LaTeX papers in
``shared/corpora/arxiv/redpajama-arxiv-latex.jsonl`` (already RedPajama-cleaned bodies):
each body gets back what a real submission has around it (a preamble with user macros,
title and abstract, comments, a bibliography, an appendix after the references), and
the papers are packed the way arXiv ships them in bulk: a ``.tar`` of per-paper ``.gz``
members named by id, one of them a gzipped tar of several files joined by
``\\input``/``\\include``, one paper in two versions, plus broken members.

    build(shared_dir, out_dir) -> dict   # paths and what the reader must find
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage{amsmath,amssymb}
%% a preamble comment that must not survive
\newcommand{\R}{\mathbb{R}}
\newcommand{\norm}[1]{\left\|#1\right\|}
\def\eps{\varepsilon}
\title{A paper}
\author{Someone}
\begin{document}
\maketitle
\begin{abstract}
An abstract RedPajama drops with the preamble.
\end{abstract}
"""
MACRO_LINE = "We write $\\R^n$ and $\\norm{x}$ with $\\eps$ small. % an inline comment\n"
TAIL = r"""
\begin{thebibliography}{9}
\bibitem{a} A. Author, \emph{A book}, 1999.
\end{thebibliography}
\appendix
\section{Extra}
Appendix material that follows the references.
\end{document}
"""


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _member_name(arxiv_id: str, version: int) -> str:
    if "/" in arxiv_id:                              # hep-ex/0408102 -> 0408/hep-ex0408102v1.gz
        arch, num = arxiv_id.split("/")
        return f"{num[:4]}/{arch}{num}v{version}.gz"
    return f"{arxiv_id[:4]}/{arxiv_id}v{version}.gz"


def build(shared_dir: Path, out_dir: Path, *, split_versions: bool = False) -> dict:
    """``split_versions``: the second version of the multi-file paper goes to a second
    bulk tar (``arXiv_src_fixture_002.tar``), as when a paper is revised in a later
    month: the reader alone cannot see both versions then (``latest_version`` can)."""
    papers = [json.loads(line) for line in
              (shared_dir / "corpora" / "arxiv" / "redpajama-arxiv-latex.jsonl").read_text(encoding="utf-8").splitlines()]
    members: dict[str, bytes] = {}
    bodies: dict[str, str] = {}
    multi = "1711.10712"
    for p in papers:
        pid, body = p["meta"]["arxiv_id"], p["text"]
        bodies[pid] = body
        if pid == multi:
            cut = body.index("\n\\section", 1) if "\n\\section" in body[1:] else len(body) // 2
            head, rest = body[:cut].split("\n", 1)
            files = {"main.tex": (PREAMBLE + "\\input{sections/intro}\n\\include{results}\n" + TAIL).encode(),
                     "sections/intro.tex": ("% intro file\n" + head + "\n" + MACRO_LINE + rest).encode(),
                     "results.tex": body[cut:].encode(), "fig1.png": b"\x89PNG\r\n\x1a\n\x00binary"}
            members[_member_name(pid, 1)] = _gz(_tar(files))
            files["results.tex"] = (body[cut:] + "\n\nA sentence added in the second version.\n").encode()
            members[_member_name(pid, 2)] = _gz(_tar(files))
        else:
            tex = PREAMBLE + body.split("\n", 1)[0] + "\n" + MACRO_LINE + body.split("\n", 1)[-1] + TAIL
            members[_member_name(pid, 1)] = _gz(tex.encode())
    members["1801/1801.99999v1.gz"] = _gz(b"\\documentclass{article}\\begin{document}\\section{A}x")[:20]   # truncated
    members["1801/1801.99998v1.gz"] = _gz(b"%PDF-1.4\n%binary pdf only\n")
    members["1801/1801.99997v1.gz"] = _gz(b"\\section{No class}\nA fragment with no documentclass.\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    tar = out_dir / "arXiv_src_fixture_001.tar"
    later = out_dir / "arXiv_src_fixture_002.tar"
    if split_versions:
        v2 = _member_name(multi, 2)
        later.write_bytes(_tar({v2: members.pop(v2)}))
    tar.write_bytes(_tar(members))
    meta = out_dir / "arxiv-metadata.jsonl"
    meta.write_text("".join(json.dumps({"id": p["meta"]["arxiv_id"], "categories": c}) + "\n"
                            for p, c in zip(papers, ["cs.LG stat.ML", "gr-qc", "cs.RO"] + ["hep-ex"] * 8)),
                    encoding="utf-8")
    return {"tar": tar, "tars": [tar, later] if split_versions else [tar], "metadata": meta, "bodies": bodies, "multi": multi,
            "broken": {"1801.99999v1": "bad_archive", "1801.99998v1": "no_tex", "1801.99997v1": "no_main_file"}}
