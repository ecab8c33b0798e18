"""The models wing's shared kit: load a Hugging Face model from a local folder, pick
its device and dtype, and run it over texts in batches cut by token length.

Everything here imports ``torch`` and ``transformers`` inside functions (the ``models``
extra: ``pip install 'datapipe[models]'``), and nothing from Ray or the engine, so
``bench/model_stages.py`` runs it on a machine that has only torch, transformers, numpy
and pyarrow. Models load from a local path only (``local_files_only``): nothing is
downloaded at run time.

Batching (:func:`length_batches`): a batch of texts is tokenized once (no padding), its
rows sorted by token count and cut into sub-batches bounded by *padded tokens*
(``rows x longest row <= batch_tokens``), by ``max_rows`` and by padding (at most 10%
beyond the real tokens); each sub-batch is padded to
its own longest row, run, and the results scattered back to input order. Rows of similar
length share a sub-batch, so little compute goes to padding; a sub-batch of short rows
holds many of them. Results do not depend on which rows share a sub-batch beyond float
noise (padding is masked): on CPU in fp32 they equal one direct call to ~1e-6.

Truncation: head truncation. A text is cut to its first ``max_length`` tokens, special
tokens included (``[CLS] ... [SEP]``), as ``tokenizer(text, truncation=True,
max_length=max_length)`` does; the rest of a long document is not seen. Before tokenizing,
a text is cut to ``max_length * CHARS_PER_TOKEN_CAP`` characters so that a megabyte
document costs no more to tokenize than its head: no real tokenizer gives fewer tokens
than that over so many characters, so the kept tokens are the same.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Sequence

import numpy as np

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

#: characters kept per token of ``max_length`` before tokenizing (see the module docstring)
CHARS_PER_TOKEN_CAP = 32
#: padded tokens per sub-batch when a stage is not told (``batch_tokens``): on a CPU the
#: cost is per token and small batches lose little; a GPU wants large ones
DEFAULT_BATCH_TOKENS = {"cpu": 8192, "cuda": 65536}
DEFAULT_MAX_ROWS = 512
#: padded tokens a sub-batch may compute beyond its real ones (10%)
MAX_PADDING = 0.1
DTYPES = ("auto", "fp32", "bf16", "fp16")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")

Kind = Literal["classify", "embed"]


def import_torch() -> tuple[Any, Any]:
    """``(torch, transformers)``, or an ImportError that says which extra to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:   # pragma: no cover - the dev install has them
        raise ImportError(f"the classify/embed stages need torch and transformers ({exc}); install them with "
                          "`pip install 'datapipe[models]'`") from exc
    return torch, transformers


def check_model_dir(path: str | os.PathLike, *, where: str = "model") -> Path:
    """The model folder as a Path, or a ValueError naming ``path`` and the fix: it must be
    a local folder with a Hugging Face ``config.json``, weights and a tokenizer."""
    p = Path(path).expanduser()
    how = ("give the local folder of a Hugging Face model (config.json, model.safetensors, tokenizer files); "
           "download it yourself first, e.g. `hf download HuggingFaceFW/fineweb-edu-classifier --local-dir "
           "models/fineweb-edu-classifier`: the stages never download")
    if not p.is_dir():
        raise ValueError(f"{where}: {str(path)!r} is not a folder; {how}")
    if not (p / "config.json").is_file():
        raise ValueError(f"{where}: {str(path)!r} has no config.json, so it is not a Hugging Face model folder; {how}")
    if not any((p / w).is_file() for w in WEIGHT_FILES):
        raise ValueError(f"{where}: {str(path)!r} has no weights ({', '.join(WEIGHT_FILES)}); {how}")
    if not any((p / t).is_file() for t in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "spm.model")):
        raise ValueError(f"{where}: {str(path)!r} has no tokenizer files (tokenizer.json / tokenizer_config.json); {how}")
    return p


def model_config(path: str | os.PathLike) -> dict[str, Any]:
    """The model's ``config.json`` as a dict (no torch needed)."""
    return json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))


def resolve_device(device: str) -> str:
    """``auto``: ``cuda`` when torch sees a GPU (a Ray actor sees only the GPUs it was
    given), else ``cpu``; ``cpu``, ``cuda`` and ``cuda:N`` as given."""
    if device == "auto":
        torch, _ = import_torch()
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto``: bf16 on a GPU that supports it (fp16 on older ones), fp32 on CPU."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "auto":
        return dtype
    if device == "cpu":
        return "fp32"
    torch, _ = import_torch()
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def torch_dtype(name: str) -> "torch.dtype":
    torch, _ = import_torch()
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def length_batches(lengths: Sequence[int] | np.ndarray, *, batch_tokens: int,
                   max_rows: int = DEFAULT_MAX_ROWS, max_padding: float = MAX_PADDING) -> list[np.ndarray]:
    """Row indices of each sub-batch: rows sorted by length (ties by index, so the cut is a
    pure function of the lengths), cut so that ``rows x longest <= batch_tokens``,
    ``rows <= max_rows`` and the padding stays within ``max_padding`` of the real tokens
    (a few short rows among long ones get a sub-batch of their own instead of being
    padded to the long ones' length). A row longer than ``batch_tokens`` runs alone."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.lexsort((np.arange(len(lengths)), lengths))
    out: list[np.ndarray] = []
    start, real = 0, 0
    for i in range(len(order)):
        n = int(lengths[order[i]])
        rows = i - start + 1
        if rows > 1 and (rows * n > batch_tokens or rows > max_rows or rows * n > (1 + max_padding) * (real + n)):
            out.append(order[start:i])
            start, rows, real = i, 1, 0
        real += n
    if start < len(order):
        out.append(order[start:])
    return out


def naive_batches(n: int, rows: int) -> list[np.ndarray]:
    """The baseline: fixed-size batches in input order (each padded to its longest row)."""
    return [np.arange(i, min(i + rows, n)) for i in range(0, n, rows)]


@dataclass
class Tokenized:
    """A batch of texts tokenized without padding: per row its ids (and token types, when
    the tokenizer gives them)."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]] | None

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(r) for r in self.input_ids), dtype=np.int64, count=len(self.input_ids))


class Runner:
    """One model on one device: tokenizes, batches and runs. Subclasses (the classifier,
    the encoder) load the model and turn a padded sub-batch into one float32 row per text
    (:meth:`forward`).

    ``max_length``: tokens kept per text (head truncation), capped by what the model
    takes. ``batch_tokens``: padded tokens per sub-batch (None: by device).
    ``threads``: torch's CPU threads (None: leave torch's setting)."""

    kind: Kind

    def __init__(self, model_dir: str | os.PathLike, *, device: str = "auto", dtype: str = "auto",
                 max_length: int = 512, batch_tokens: int | None = None, max_rows: int = DEFAULT_MAX_ROWS,
                 threads: int | None = None) -> None:
        torch, transformers = import_torch()
        self.model_dir = check_model_dir(model_dir)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {device!r}: torch sees no CUDA GPU here; use device: cpu (or gpus: 0)")
        if threads is not None and self.device == "cpu":
            torch.set_num_threads(max(1, int(threads)))
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
        limit = _model_limit(self.model_dir, self.tokenizer)
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2 (special tokens count), got {max_length}")
        if limit is not None and max_length > limit:
            raise ValueError(f"max_length {max_length} is more than {self.model_dir} takes ({limit} tokens); "
                             f"set max_length <= {limit}")
        self.max_length = int(max_length)
        base = "cuda" if self.device.startswith("cuda") else "cpu"
        self.batch_tokens = int(batch_tokens or DEFAULT_BATCH_TOKENS[base])
        self.max_rows = int(max_rows)
        if self.batch_tokens < self.max_length:
            raise ValueError(f"batch_tokens {self.batch_tokens} must be >= max_length {self.max_length}")
        pad = self.tokenizer.pad_token_id
        if pad is None:   # decoder models: pad with EOS (masked anyway)
            pad = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.pad_id = int(pad)
        self.model = self._load(transformers)
        self.model.to(self.device)
        self.model.eval()

    def _load(self, transformers: Any) -> Any:
        raise NotImplementedError

    def forward(self, input_ids: "torch.Tensor", attention_mask: "torch.Tensor",
                token_type_ids: "torch.Tensor | None") -> "torch.Tensor":
        """One float32 row per text of a padded sub-batch (on any device)."""
        raise NotImplementedError

    def tokenize(self, texts: Sequence[str | None]) -> Tokenized:
        cap = self.max_length * CHARS_PER_TOKEN_CAP
        cut = [("" if t is None else t)[:cap] for t in texts]
        enc = self.tokenizer(cut, truncation=True, max_length=self.max_length, padding=False,
                             return_attention_mask=False)
        return Tokenized(input_ids=enc["input_ids"], token_type_ids=enc.get("token_type_ids"))

    def run(self, texts: Sequence[str | None], *, batching: Literal["length", "naive"] = "length",
            naive_rows: int = 32) -> np.ndarray:
        """``(len(texts), width)`` float32, in input order. ``batching="naive"``: fixed
        batches of ``naive_rows`` in input order (the baseline of bench/model_stages.py)."""
        tok = self.tokenize(texts)
        n = len(tok.input_ids)
        if not n:
            return np.zeros((0, self.width), dtype=np.float32)
        batches = (length_batches(tok.lengths, batch_tokens=self.batch_tokens, max_rows=self.max_rows)
                   if batching == "length" else naive_batches(n, naive_rows))
        return self.run_batches(tok, batches)

    def run_batches(self, tok: Tokenized, batches: Sequence[np.ndarray]) -> np.ndarray:
        torch, _ = import_torch()
        out = np.zeros((len(tok.input_ids), self.width), dtype=np.float32)
        with torch.inference_mode():
            for idx in batches:
                ids, mask, types = _pad(tok, idx, self.pad_id)
                t_ids = torch.from_numpy(ids).to(self.device)
                t_mask = torch.from_numpy(mask).to(self.device)
                t_types = torch.from_numpy(types).to(self.device) if types is not None else None
                out[idx] = self.forward(t_ids, t_mask, t_types).float().cpu().numpy()
        return out

    @property
    def width(self) -> int:
        raise NotImplementedError


def _pad(tok: Tokenized, idx: np.ndarray, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``idx``'s rows right-padded to their longest: ids, attention mask, token types."""
    rows = [tok.input_ids[i] for i in idx.tolist()]
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    types = np.zeros((len(rows), width), dtype=np.int64) if tok.token_type_ids is not None else None
    for j, (i, r) in enumerate(zip(idx.tolist(), rows)):
        ids[j, :len(r)] = r
        mask[j, :len(r)] = 1
        if types is not None:
            types[j, :len(r)] = tok.token_type_ids[i]
    return ids, mask, types


def _model_limit(model_dir: Path, tokenizer: Any) -> int | None:
    """Tokens the model takes: the tokenizer's ``model_max_length`` when it is set (not
    the library's 1e30 placeholder), else the config's ``max_position_embeddings``."""
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000:
        return limit
    pos = model_config(model_dir).get("max_position_embeddings")
    return int(pos) if isinstance(pos, int) and pos > 0 else None


def load_kwargs(runner: Runner) -> dict[str, Any]:
    """What every ``from_pretrained`` of the kit passes: local files only, the dtype."""
    return {"local_files_only": True, "dtype": torch_dtype(runner.dtype)}
