"""Stack Exchange answer selection on real dumps (shared corpora/stackexchange/*/Posts.xml):
accepted, top and min_score checked against an independent parse of the same file; the
code-only filter on a real answer's code blocks posted without its explanation."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from datapipe.errors import SpecError
from datapipe.readers import READERS, InputFile
from datapipe.readers.stackexchange import is_code_only

SRC = "se"


def _read(path: Path, **options) -> list[dict]:
    reader = READERS["stackexchange"](source=SRC, options=options)
    files = [InputFile(str(path), path.name, path.stat().st_size)]
    return [row for split in reader.plan(files) for t in reader.read(split) for row in t.to_pylist()]


def _answer_ids(raw: bytes, bodies: dict[str, str]) -> list[str]:
    """Which answers a document holds, in order (matched by their bodies)."""
    page = raw.decode()
    found = [(page.index(f"<h2>Answer</h2><div>{b}</div>"), i) for i, b in bodies.items()
             if f"<h2>Answer</h2><div>{b}</div>" in page]
    return [i for _, i in sorted(found)]


@pytest.fixture(scope="module")
def site(shared_dir):
    path = shared_dir / "corpora" / "stackexchange" / "cstheory.meta.stackexchange" / "Posts.xml"
    posts = [el.attrib for _, el in ET.iterparse(path) if el.tag == "row"]
    q = {p["Id"]: p for p in posts if p["PostTypeId"] == "1"}
    answers = defaultdict(list)
    for p in posts:
        if p["PostTypeId"] == "2" and p["ParentId"] in q:
            answers[p["ParentId"]].append(p)
    return path, q, dict(answers)


def test_accepted_top_and_min_score_match_an_independent_parse(site):
    path, q, answers = site
    seen = [a["Body"] for ans in answers.values() for a in ans]
    bodies = {a["Id"]: a["Body"] for ans in answers.values() for a in ans if seen.count(a["Body"]) == 1}
    rows = {r["source_id"]: r for r in _read(path, answers="accepted") if r["_reject_reason"] != "read:not_a_post"}
    with_acc = {qid for qid, p in q.items() if p.get("AcceptedAnswerId") in {a["Id"] for a in answers.get(qid, [])}}
    assert len(with_acc) > 100
    for qid in q:
        r = rows[qid]
        if qid in with_acc:
            acc = next(a for a in answers[qid] if a["Id"] == q[qid]["AcceptedAnswerId"])
            assert r["_reject_reason"] is None and r["raw"].count(b"<h2>Answer</h2>") == 1
            assert f"<div>{acc['Body']}</div>".encode() in r["raw"]
        else:
            assert r["_reject_reason"] == "read:no_answer"
    top = {r["source_id"]: r for r in _read(path, answers="top", min_score=1) if r["source_id"] in q}
    for qid, ans in answers.items():
        best = max(ans, key=lambda a: (int(a["Score"]), -int(a["Id"])))
        if int(best["Score"]) >= 1:
            assert top[qid]["raw"].count(b"<h2>Answer</h2>") == 1
            assert f"<div>{best['Body']}</div>".encode() in top[qid]["raw"]
        else:
            assert top[qid]["_reject_reason"] == "read:no_answer" and "min_score 1" in top[qid]["_reject_detail"]
    everyone = {r["source_id"]: r for r in _read(path, min_score=0) if r["source_id"] in q}
    for qid, ans in answers.items():
        want = [a["Id"] for a in sorted(ans, key=lambda a: (-int(a["Score"]), int(a["Id"]))) if int(a["Score"]) >= 0]
        if want:
            assert everyone[qid]["raw"].count(b"<h2>Answer</h2>") == len(want)
            assert _answer_ids(everyone[qid]["raw"], bodies) == [i for i in want if i in bodies]
    assert any(int(a["Score"]) < 0 for ans in answers.values() for a in ans)   # the filter had work to do


def test_code_only_answers_are_left_out(site, tmp_path):
    path, q, answers = site
    # a real answer with code, and the same answer's code blocks posted without its prose
    qid, real = next((qid, a) for qid, ans in answers.items() for a in ans
                     if re.search(r"<pre|<code", a["Body"]) and not is_code_only(a["Body"]))
    code = "".join(re.findall(r"(?is)<pre\b.*?</pre>|<code\b.*?</code>", real["Body"]))
    assert is_code_only(code) and not is_code_only(real["Body"])
    text = path.read_text(encoding="utf-8")
    row = (f'  <row Id="999999" PostTypeId="2" ParentId="{qid}" Score="50" '
           f'Body="{code.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(chr(34), "&quot;")}" />\n')
    (tmp_path / "Posts.xml").write_text(text.replace("</posts>", row + "</posts>"), encoding="utf-8")
    plain = next(r for r in _read(tmp_path / "Posts.xml") if r["source_id"] == qid)
    filtered = next(r for r in _read(tmp_path / "Posts.xml", drop_code_only=True) if r["source_id"] == qid)
    assert plain["raw"].count(b"<h2>Answer</h2>") == len(answers[qid]) + 1
    assert filtered["raw"].count(b"<h2>Answer</h2>") == len(answers[qid])
    assert real["Body"].encode() in filtered["raw"]


def test_bad_selection_options_name_the_fix():
    with pytest.raises(SpecError, match="answers.*'accepted'"):
        READERS["stackexchange"](source=SRC, options={"answers": "best"})


def test_accepted_or_top_keeps_the_accepted_answer_else_the_best_scored(site):
    path, q, answers = site
    rows = {r["source_id"]: r for r in _read(path, answers="accepted_or_top") if r["source_id"] in q}
    fell_back = 0
    for qid in q:
        ans = answers.get(qid, [])
        if not ans:
            assert rows[qid]["_reject_reason"] == "read:no_answer"
            continue
        acc = [a for a in ans if a["Id"] == q[qid].get("AcceptedAnswerId")]
        want = acc[0] if acc else max(ans, key=lambda a: (int(a["Score"]), -int(a["Id"])))
        fell_back += not acc
        assert rows[qid]["_reject_reason"] is None and rows[qid]["raw"].count(b"<h2>Answer</h2>") == 1
        assert f"<div>{want['Body']}</div>".encode() in rows[qid]["raw"]
    assert fell_back > 10          # questions without an accepted answer took their best-scored one


def test_site_url_is_taken_per_dump_folder(shared_dir, tmp_path):
    """A glob over two sites' dumps: each document's url is its own site's, from the
    folder its Posts.xml is in (the folder's name when it is the host, as archive.org's
    dumps unpack; else a ``{site}`` template)."""
    root = shared_dir / "corpora" / "stackexchange"
    sites = ["coffee.stackexchange", "cstheory.meta.stackexchange"]
    for s in sites:
        (tmp_path / f"{s}.com").mkdir()
        (tmp_path / f"{s}.com" / "Posts.xml").write_bytes((root / s / "Posts.xml").read_bytes())

    def urls(folder: Path, names: list[str], **options) -> dict[str, set[str | None]]:
        reader = READERS["stackexchange"](source=SRC, options=options)
        files = [InputFile(str(folder / n / "Posts.xml"), f"{n}/Posts.xml", (folder / n / "Posts.xml").stat().st_size,
                           roots=(str(folder),)) for n in names]
        got: dict[str, set[str | None]] = {n: set() for n in names}
        for split in reader.plan(files):
            for t in reader.read(split):
                for r in t.to_pylist():
                    if r["_reject_reason"] is None:
                        n = next(n for n in names if r["origin"].startswith(n + "/"))
                        got[n].add(r["url"] and r["url"].rsplit("/questions/", 1)[0])
        return got

    assert urls(tmp_path, [f"{s}.com" for s in sites]) == {f"{s}.com": {f"https://{s}.com"} for s in sites}
    assert urls(root, sites, site_url="https://{site}.com") == {s: {f"https://{s}.com"} for s in sites}
    assert urls(root, sites) == {s: {None} for s in sites}          # folders not named by host: no guess
    with pytest.raises(SpecError, match=r"only \{site\}"):
        READERS["stackexchange"](source=SRC, options={"site_url": "https://{name}.com"})
