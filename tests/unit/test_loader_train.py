"""Trainer pieces that need no process group: config loading, LR schedule, the model's
per-document attention, and the sample config."""

from __future__ import annotations

import pytest
import torch

from datapipe.errors import SpecError
from trainer_bridge.model import GPT, ModelConfig
from trainer_bridge.train import load_config, lr_factor, main


def test_sample_config_loads_and_overrides(repo_dir, tmp_path):
    cfg = load_config(repo_dir / "trainer_bridge/configs/sample.yaml", ["tp=1", "model.dim=64", "steps=3"])
    assert cfg.mix == "mixes/sample.yaml" and cfg.tp == 1 and cfg.steps == 3 and cfg.model.dim == 64
    bad = tmp_path / "bad.yaml"
    bad.write_text("mix: m.yaml\nlearning_rate: 1\n")
    with pytest.raises(SpecError, match=r"bad.yaml: unknown key 'learning_rate' \(valid keys: .*\blr\b"):
        load_config(bad)
    bad.write_text("mix: m.yaml\nmodel: {width: 3}\n")
    with pytest.raises(SpecError, match=r"bad.yaml: model: unknown key 'width'"):
        load_config(bad)
    with pytest.raises(SpecError, match="document_mask needs position_ids"):
        load_config(repo_dir / "trainer_bridge/configs/sample.yaml", ["position_ids=false", "document_mask=true"])


def test_missing_trainer_config_is_a_one_line_error(tmp_path, capsys):
    missing = tmp_path / "no-such.yaml"
    assert main(["--config", str(missing)]) == 2   # not a FileNotFoundError traceback
    err = capsys.readouterr().err
    assert f"trainer config not found: {missing}" in err and "configs/sample.yaml" in err


def test_wrong_type_in_trainer_config_names_file_and_field(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("mix: m.yaml\nmodel: {dim: wide}\n")
    with pytest.raises(SpecError, match=r"cfg.yaml: model: key 'dim' must be int, got 'wide'"):
        load_config(cfg)
    with pytest.raises(SpecError, match=r"cfg.yaml: key 'steps' must be int or null, got 'ten'"):
        load_config(cfg, ["model.dim=64", "steps=ten"])   # --set is checked the same way


def test_lr_schedule_warmup_then_cosine_to_min():
    f = [lr_factor(s, warmup=10, total=110, min_ratio=0.1) for s in range(130)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0) and f[10] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(f[10:], f[11:]))
    assert f[110] == pytest.approx(0.1) and f[129] == pytest.approx(0.1)


def test_document_mask_isolates_documents():
    """With position ids restarting at a document and the document mask, the logits of a
    document packed after another equal those of the document alone."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=50, dim=32, n_layers=2, n_heads=4, max_seq_len=32)).eval()
    a, b = torch.randint(0, 49, (1, 7)), torch.randint(0, 49, (1, 9))
    packed = torch.cat([a, b], dim=1)
    pos = torch.cat([torch.arange(7), torch.arange(9)])[None]
    with torch.no_grad():
        alone = model(b)
        masked = model(packed, pos, document_mask=True)[:, 7:]
        leaky = model(packed)[:, 7:]
    torch.testing.assert_close(masked, alone, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(leaky, alone, atol=1e-3)


def test_model_config_errors_and_flops():
    with pytest.raises(SpecError, match="n_heads"):
        ModelConfig(vocab_size=10, dim=30, n_heads=4)
    cfg = ModelConfig(vocab_size=50304, dim=768, n_layers=12, n_heads=12, max_seq_len=2048)
    assert 120e6 < cfg.num_params() < 170e6  # a GPT-2-small-sized model
    assert cfg.flops_per_token(2048) > 6 * cfg.num_params(embeddings=False)
