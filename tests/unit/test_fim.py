"""Fill-in-the-middle at loader time (trainer_bridge/fim.py) on real code shards: every
transformed document is its own tokens plus three sentinels, the rate and PSM/SPM share
hold, samples depend only on the seed and the sample number (exact resume on any
data-parallel size), and a mix over shards without the sentinels is refused in one line."""

from __future__ import annotations

import json
import sysconfig
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import tiny_tokenizer, write_mix, write_source

from datapipe.errors import SpecError
from trainer_bridge.fim import FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX, FimIds, permute_segment
from trainer_bridge.loader import LoaderConfig, MixLoader
from trainer_bridge.mix import load_mix, resolve_mix

SEQ = 64


def _code_docs(tok, n_files: int = 120, max_chars: int = 600) -> list[list[int]]:
    """The heads of the interpreter's own stdlib modules, tokenised: real code."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[:n_files]
    texts = [f.read_text(encoding="utf-8", errors="replace")[:max_chars] for f in files]
    return [e.ids for e in tok.encode_batch(texts)]


@pytest.fixture(scope="module")
def code(shared_dir, tmp_path_factory):
    """Stdlib code and wiki text as two sources whose tokenizer (the tiny BPE + EOS) also
    records the FIM sentinels in the manifest; and the same code without them."""
    d = tmp_path_factory.mktemp("fim")
    tok, eos, vocab, fp = tiny_tokenizer(shared_dir)
    ids = {FIM_PREFIX: vocab, FIM_MIDDLE: vocab + 1, FIM_SUFFIX: vocab + 2, "<fim_pad>": vocab + 3}
    docs = _code_docs(tok)
    prose = [e.ids for e in tok.encode_batch(
        (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")[:40_000]
        .split(" \n = "))]
    paths = {}
    for name, dd in (("code", docs), ("wiki", prose)):
        m = write_source(d / name, name, dd, eos_id=eos, vocab_size=vocab + 4, shard_tokens=4096, fingerprint=fp)
        raw = json.loads(m.read_text())
        raw["tokenizer"]["special"] = ids
        m.write_text(json.dumps(raw))
        paths[name] = m
    plain = write_source(d / "plain" / "code", "code", docs, eos_id=eos, vocab_size=vocab + 4, shard_tokens=4096,
                         fingerprint=fp)
    return {"dir": d, "manifests": paths, "plain": plain, "eos": eos, "ids": ids}


def _mix(code, name: str, fim: dict | None, *, manifests=None, seed: int = 5) -> Path:
    path = write_mix(code["dir"] / f"{name}.yaml", manifests or code["manifests"], {"code": 0.7, "wiki": 0.3}
                     if manifests is None else {"code": 1.0}, seq_len=SEQ, token_budget=SEQ * 3000, seed=seed)
    if fim is not None:
        doc = yaml.safe_load(path.read_text())
        doc["fim"] = fim
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _segments(row: np.ndarray, eos: int) -> list[np.ndarray]:
    return np.split(row, np.flatnonzero(row == eos) + 1)


def _undo(seg: np.ndarray, ids: dict) -> tuple[np.ndarray, str]:
    """The document a FIM segment was made from, and its order: both orders end
    ``<fim_suffix> suffix <fim_middle> rest`` where the document is ``rest + suffix``;
    PSM has the prefix between <fim_prefix> and <fim_suffix>, SPM nothing there."""
    p, s, m = ids[FIM_PREFIX], ids[FIM_SUFFIX], ids[FIM_MIDDLE]
    assert seg[0] == p and (seg == p).sum() == (seg == s).sum() == (seg == m).sum() == 1
    i_s, i_m = int(np.flatnonzero(seg == s)[0]), int(np.flatnonzero(seg == m)[0])
    pre, suf, rest = seg[1:i_s], seg[i_s + 1:i_m], seg[i_m + 1:]
    return np.concatenate([pre, rest, suf]), ("spm" if i_s == 1 else "psm")


def test_permute_segment_keeps_every_token():
    ids = FimIds(prefix=100, middle=101, suffix=102)
    rng = np.random.default_rng(0)
    for _ in range(300):
        seg = rng.integers(0, 100, rng.integers(0, 30))
        a, b = sorted(rng.integers(0, len(seg) + 1, 2))
        for spm in (False, True):
            out = permute_segment(seg, a, b, spm=spm, ids=ids)
            assert sorted(out.tolist()) == sorted(seg.tolist() + [100, 101, 102])
            assert np.array_equal(_undo(out, {FIM_PREFIX: 100, FIM_MIDDLE: 101, FIM_SUFFIX: 102})[0], seg)


def test_fim_rewrites_documents_losslessly_at_the_configured_rate(code):
    eos, ids = code["eos"], code["ids"]
    plan = resolve_mix(_mix(code, "fim", {"rate": 0.5, "spm_rate": 0.3, "sources": ["code"]}))
    plain = resolve_mix(_mix(code, "nofim", None))
    code_ix = plan.names.index("code")
    G, steps = 32, 60
    seen = {"fim": 0, "plain": 0, "spm_seen": 0, "spm_expected": 0.0, "spm_var": 0.0}
    with MixLoader(plan, LoaderConfig(global_batch=G, prefetch=2)) as ld:
        for t in range(steps):
            b = next(ld)
            src = np.empty(G, dtype=np.int64)
            orig = plain.read(t * G, G, sources=src).astype(np.int64)
            got = np.concatenate([b["input_ids"].numpy(), b["labels"].numpy()[:, -1:]], axis=1)
            assert np.array_equal(b["source"].numpy(), src)
            for k in range(G):
                if src[k] != code_ix:   # fim: applies to the code source only
                    assert np.array_equal(got[k], orig[k])
                    continue
                before, after = _segments(orig[k], eos), _segments(got[k], eos)
                # every document but the last (cut back to the window) comes back whole
                for seg_o, seg_f in zip(before[:len(after) - 1], after[:-1]):
                    body, tail = seg_f[:-1], seg_f[-1:]
                    assert tail.tolist() == [eos] and seg_o[-1] == eos
                    if body.size and body[0] == ids[FIM_PREFIX]:
                        doc, order = _undo(body, ids)
                        assert np.array_equal(doc, seg_o[:-1])
                        seen["fim"] += 1
                        # an SPM rewrite reads <fim_prefix> <fim_suffix>; so does a PSM one whose
                        # prefix is empty (its first cut at 0: 1 - (L / (L + 1))^2 for L tokens)
                        L = seg_o.size - 1
                        p = 0.3 + 0.7 * (1 - (L / (L + 1)) ** 2)
                        seen["spm_seen"] += order == "spm"
                        seen["spm_expected"] += p
                        seen["spm_var"] += p * (1 - p)
                    else:
                        assert np.array_equal(seg_f, seg_o)
                        seen["plain"] += bool(body.size)
                # the last one keeps what fits of its rewrite: none of its tokens is invented
                last_o, last_f = before[len(after) - 1], after[-1]
                body = last_f[~np.isin(last_f, list(ids.values()))]
                assert not (Counter(body.tolist()) - Counter(last_o.tolist()))
                if last_f.size and last_f[0] != eos:
                    seen["fim" if last_f[0] == ids[FIM_PREFIX] else "plain"] += 1
                assert got[k].shape == orig[k].shape   # the window keeps its length
    n = seen["fim"] + seen["plain"]
    assert n > 400
    assert abs(seen["fim"] / n - 0.5) < 0.08, seen
    assert abs(seen["spm_seen"] - seen["spm_expected"]) < 3 * seen["spm_var"] ** 0.5, seen


def test_fim_resumes_bit_exactly_on_any_world_size(code):
    plan = resolve_mix(_mix(code, "fim", {"rate": 0.5}))
    G = 8

    def batches(world, state, steps):
        out = []
        lds = [MixLoader(plan, LoaderConfig(global_batch=G, rank=r, world_size=world, num_workers=2,
                                            with_position_ids=True)) for r in range(world)]
        for ld in lds:
            if state:
                ld.load_state_dict(state)
        for _ in range(steps):
            out.append(np.concatenate([next(ld)["input_ids"].numpy() for ld in lds]))
        for ld in lds:
            ld.close()
        return out

    ref = batches(1, None, 12)
    again = batches(1, None, 12)
    assert all(np.array_equal(a, b) for a, b in zip(ref, again))   # deterministic per sample
    assert any((r == code["ids"][FIM_PREFIX]).any() for r in ref)  # and FIM did happen
    for world, step in ((2, 5), (4, 9)):
        got = batches(world, {"plan_hash": plan.plan_hash, "samples_committed": step * G}, 3)
        for t in range(3):
            assert np.array_equal(got[t], ref[step + t]), (world, step, t)


def test_fim_config_is_checked_against_the_shards(code):
    with pytest.raises(SpecError) as e:
        resolve_mix(_mix(code, "nosentinels", {"rate": 0.5}, manifests={"code": code["plain"]}))
    msg = str(e.value)
    assert "\n" not in msg and "<fim_prefix>" in msg and "--preset code" in msg
    with pytest.raises(SpecError, match=r"fim: sources \['cod'\] are not sources of the mix"):
        resolve_mix(_mix(code, "typo", {"sources": ["cod"]}))
    with pytest.raises(SpecError, match="fim: rate 1.5 must be a number in"):
        load_mix(_mix(code, "rate", {"rate": 1.5}))
    with pytest.raises(SpecError, match="unit 'characters' is not supported"):
        load_mix(_mix(code, "unit", {"unit": "characters"}))
    # FIM changes the samples, so it is in the plan hash, and a checkpoint without it is refused
    on, off = resolve_mix(_mix(code, "fim", {"rate": 0.5})), resolve_mix(_mix(code, "nofim", None))
    assert on.plan_hash != off.plan_hash
    assert "fim: documents of code, wiki rewritten fill-in-the-middle at rate 0.5" in on.report().format()
    assert "fim" not in off.report().to_json()
    state = MixLoader(off, LoaderConfig(global_batch=4, verify=False)).state_dict() | {"samples_committed": 8}
    with pytest.raises(SpecError, match="fim: changed"):
        MixLoader(on, LoaderConfig(global_batch=4, verify=False)).load_state_dict(state)


def test_repository_documents_are_rewritten_file_by_file(shared_dir, tmp_path):
    """StarCoder2's repository documents (``<repo_name>name<file_sep>path\\ncode<file_sep>...``):
    with ``<file_sep>`` in the tokenizer, each file is rewritten on its own, in its repository's
    context; a rewrite never spans two files, and the repository name is never rewritten."""
    tok, eos, vocab, fp = tiny_tokenizer(shared_dir)
    P, M, S, REPO, SEP = vocab, vocab + 1, vocab + 2, vocab + 4, vocab + 5
    ids = {FIM_PREFIX: P, FIM_MIDDLE: M, FIM_SUFFIX: S, "<fim_pad>": vocab + 3, "<repo_name>": REPO,
           "<file_sep>": SEP}
    site = Path(sysconfig.get_paths()["purelib"])
    docs = []
    for pkg in ("click", "attr", "yaml", "jinja2", "dateutil", "pygments"):
        doc = [REPO] + tok.encode(pkg).ids
        for f in sorted((site / pkg).rglob("*.py"))[:60]:   # file heads: several files in a window
            doc += [SEP] + tok.encode(f"{f.relative_to(site)}\n" + f.read_text(encoding="utf-8")[:120]).ids
        docs.append(doc)
    m = write_source(tmp_path / "repos", "repos", docs, eos_id=eos, vocab_size=vocab + 6, shard_tokens=4096,
                     fingerprint=fp)
    plain = write_source(tmp_path / "plain" / "repos", "repos", docs, eos_id=eos, vocab_size=vocab + 6,
                         shard_tokens=4096, fingerprint=fp)
    raw = json.loads(m.read_text())
    raw["tokenizer"]["special"] = ids
    m.write_text(json.dumps(raw))
    mixes = {}
    for name, manifest, fim in (("fim", m, {"rate": 0.5}), ("plain", plain, None)):
        path = write_mix(tmp_path / f"{name}.yaml", {"repos": manifest}, {"repos": 1.0}, seq_len=128,
                         token_budget=128 * 100, seed=2)
        if fim:
            path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "fim": fim}))
        mixes[name] = resolve_mix(path)
    assert "each file of a repository document on its own" in mixes["fim"].report().format()
    got = mixes["fim"].read(0, 100).astype(np.int64)
    for n in range(100):
        got[n] = mixes["fim"].fim.row(got[n], n)
    orig = mixes["plain"].read(0, 100).astype(np.int64)
    rewritten = whole = 0
    for o, g in zip(orig, got):
        cut = lambda r: np.split(r, np.flatnonzero(np.isin(r, [eos, SEP])) + 1)
        before, after = cut(o), cut(g)
        for seg_o, seg_f in zip(before[:len(after) - 1], after[:-1]):   # every piece but the cut-back last
            whole += 1
            body = seg_f[:-1]
            assert seg_f[-1] == seg_o[-1] and seg_o[-1] in (eos, SEP)   # separators stay in place
            if body.size and body[0] == P:
                assert np.array_equal(_undo(body, ids)[0], seg_o[:-1])   # one file's tokens, nothing else
                assert seg_o[0] != REPO
                rewritten += 1
            else:
                assert np.array_equal(seg_f, seg_o)
    assert whole > 100 and 0.4 < rewritten / whole < 0.6, (whole, rewritten)
