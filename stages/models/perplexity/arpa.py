"""Writing ARPA files (and a KenLM binary when ``build_binary`` is installed).

ARPA is the interchange format every n-gram toolkit reads: a ``\\data\\`` header with
the number of n-grams per order, then per order one line per n-gram,
``log10 p <TAB> w1 .. wn [<TAB> log10 backoff]``. Lines are built column-wise with
Arrow string kernels (take + join) and written straight from the Arrow buffers, so
writing tens of millions of n-grams costs seconds, not a Python loop over them.
Probabilities are written as float32 (what KenLM stores), shortest round-trip form.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import fs
from stages.arrow_strings import utf8_buffers
from stages.models.perplexity.kneser_ney import NgramModel

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


def _floats(x: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(x.astype(np.float32)), pa.large_string())


def _write_strings(f: BinaryIO, arr: pa.Array) -> None:
    """Write the concatenated values of a (large_)string array without copying them to Python."""
    f.write(utf8_buffers(arr)[1])


def write_arpa(model: NgramModel, path: str | os.PathLike) -> int:
    """Write ``model`` as ARPA to ``path`` (via a temporary name, renamed when complete).
    Returns the file size in bytes."""
    path = os.fspath(path)
    vocab = pa.array(model.vocab, pa.large_string())
    empty = pa.scalar("", pa.large_string())
    tab, space, nl = (pa.scalar(c, pa.large_string()) for c in ("\t", " ", "\n"))
    with fs.AtomicFile(path) as f:
        f.write(b"\n\\data\\\n")
        for o in model.orders:
            f.write(f"ngram {o.n}={len(o)}\n".encode())
        for o in model.orders:
            f.write(f"\n\\{o.n}-grams:\n".encode())
            words = model.words(o.n)
            for s in range(0, len(o), _CHUNK):
                e = min(s + _CHUNK, len(o))
                cols = [vocab.take(pa.array(words[s:e, c])) for c in range(o.n)]
                ngram = cols[0] if o.n == 1 else pc.binary_join_element_wise(*cols, space)
                prob = _floats(o.logprob[s:e])
                line = pc.binary_join_element_wise(prob, ngram, tab)
                if o.backoff is not None:
                    bo = o.backoff[s:e]
                    has = ~np.isnan(bo)
                    if has.any():
                        with_bo = pc.binary_join_element_wise(line, _floats(np.nan_to_num(bo, nan=0.0)), tab)
                        line = pc.if_else(pa.array(has), with_bo, line)
                line = pc.binary_join_element_wise(line, empty, nl)
                _write_strings(f, line)
        f.write(b"\n\\end\\\n")
    return os.path.getsize(path)


def build_binary(arpa_path: str, binary_path: str) -> bool:
    """Convert ARPA to KenLM's binary format with KenLM's ``build_binary`` when it is on
    ``PATH`` (faster loading, less memory). Returns False when it is not installed."""
    exe = shutil.which("build_binary")
    if exe is None:
        log.info("build_binary not on PATH: keeping the ARPA file only (kenlm loads it directly)")
        return False
    tmp = f"{binary_path}.tmp{os.getpid()}"
    subprocess.run([exe, arpa_path, tmp], check=True, capture_output=True)
    fs.move_into_place(tmp, binary_path)
    return True
