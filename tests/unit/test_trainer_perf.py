"""Trainer performance pieces that need no process group: the chunked loss against the plain
one, per-sample losses, activation-checkpointing modes, the memory-driven choice of
micro-batch and AC mode, the straggler rule, and fp8's refusal on CPU."""

from __future__ import annotations

import pytest
import torch

from datapipe.errors import SpecError
from trainer_bridge import memory, perf
from trainer_bridge.loss import loss_per_sample, mean_loss
from trainer_bridge.model import GPT, ModelConfig
from trainer_bridge.parallelize import AC_MODES, apply_activation_checkpointing, fp8_unavailable
from trainer_bridge.train import TrainConfig

CFG = ModelConfig(vocab_size=96, dim=32, n_layers=4, n_heads=4, max_seq_len=24)


def _grads(model: GPT, x, y, **kw) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    tok = model(x, labels=y, **kw)
    mean_loss(tok).backward()
    return tok.detach(), {n.replace("_checkpoint_wrapped_module.", ""): p.grad.clone()
                          for n, p in model.named_parameters()}


def test_chunked_loss_matches_plain_values_and_grads():
    """Chunks of 7 tokens (not dividing B x T = 48, so the last chunk is short) against all
    logits at once: per-token losses equal to 1e-6, gradients to 1e-5 relative (fp32; only the
    summation order of the output head's weight gradient differs)."""
    torch.manual_seed(0)
    model = GPT(CFG)
    x, y = torch.randint(0, 96, (2, 24)), torch.randint(0, 96, (2, 24))
    plain, g_plain = _grads(model, x, y, loss_chunk_tokens=None)
    chunked, g_chunked = _grads(model, x, y, loss_chunk_tokens=7)
    ref = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten(), reduction="none").view(2, 24)
    torch.testing.assert_close(plain, ref.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(chunked, plain, rtol=1e-6, atol=1e-6)
    for name, g in g_plain.items():
        torch.testing.assert_close(g_chunked[name], g, rtol=1e-5, atol=1e-7, msg=name)
    per_sample = loss_per_sample(chunked)
    assert per_sample.shape == (2,)
    torch.testing.assert_close(per_sample, ref.detach().mean(1))
    torch.testing.assert_close(per_sample.mean(), mean_loss(chunked))


@pytest.mark.parametrize("mode", [m for m in AC_MODES if m != "none"])
def test_activation_checkpointing_modes_keep_the_gradients(mode):
    torch.manual_seed(0)
    ref_model = GPT(CFG)
    x, y = torch.randint(0, 96, (2, 24)), torch.randint(0, 96, (2, 24))
    _, want = _grads(ref_model, x, y, loss_chunk_tokens=16)
    torch.manual_seed(0)
    model = GPT(CFG)
    apply_activation_checkpointing(model, mode)
    wrapped = sum(type(mod).__name__ == "CheckpointWrapper" for mod in model.modules())
    assert wrapped == {"full": 4, "every_other": 2, "attention": 4}[mode]
    _, got = _grads(model, x, y, loss_chunk_tokens=16)
    assert got.keys() == want.keys()
    for name, g in want.items():
        torch.testing.assert_close(got[name], g, rtol=1e-5, atol=1e-7, msg=name)
    with pytest.raises(SpecError, match="selective.*not one of none, attention, every_other, full"):
        apply_activation_checkpointing(GPT(CFG), "selective")


def test_memory_auto_choice_trades_micro_batch_and_recomputation():
    """The 1.1B config of the issue (bf16, one rank, seq 2048, 8 rows per rank): with an
    H100's 80 GB the whole batch fits without checkpointing; with 24 GB it must give up
    micro-batch or recompute, and it says so when nothing fits."""
    m = ModelConfig(vocab_size=50048, dim=2048, n_layers=18, n_heads=16, max_seq_len=2048)
    kw = dict(seq_len=2048, local_batch=8, dp=1, tp=1, bf16=True, chunk_tokens=4096, fused_adam=True)
    est, fits = memory.choose(m, micro_batch=None, ac="auto", budget=76 << 30, **kw)
    assert fits and (est.micro_batch, est.ac) == (8, "none")
    est, fits = memory.choose(m, micro_batch=None, ac="auto", budget=24 << 30, **kw)
    assert fits and est.peak <= 24 << 30 and est.ac != "none"
    rest = {k: v for k, v in kw.items() if k != "local_batch"}
    none8 = memory.estimate(m, micro_batch=8, n_micro=1, ac="none", **rest)
    assert none8.peak > 24 << 30
    est, fits = memory.choose(m, micro_batch=None, ac="auto", budget=12 << 30, **kw)
    assert not fits and (est.micro_batch, est.ac) == (1, "full")
    assert "DOES NOT FIT" in "\n".join(est.lines(12 << 30))


def test_chunked_loss_shrinks_the_estimate_by_the_logits():
    m = ModelConfig(vocab_size=50048, dim=768, n_layers=12, n_heads=12, max_seq_len=2048)
    kw = dict(seq_len=2048, micro_batch=16, n_micro=1, dp=1, tp=1, ac="none", bf16=True, fused_adam=True)
    plain = memory.estimate(m, chunk_tokens=None, **kw)
    chunked = memory.estimate(m, chunk_tokens=4096, **kw)
    assert plain.loss == 16 * 16 * 2048 * 50048 + 4 * 16 * 2048  # 26 GB of logits-sized tensors
    assert chunked.loss * 7 < plain.loss and plain.activations == chunked.activations


def test_loss_auto_is_plain_on_cuda_only_when_it_costs_no_micro_batch_or_recomputation():
    """The 1.1B config on one rank: with an 80 GB GPU's budget plain fits at the chunked
    loss's choice (micro-batch 8, no checkpointing), so auto takes it (the H200 measurement:
    47.5% -> 51.8% MFU); with 48 GB plain would need checkpointing, so auto stays chunked; on
    CPU auto is chunked whatever the budget, and an explicit mode is kept as given."""
    m = ModelConfig(vocab_size=50048, dim=2048, n_layers=18, n_heads=16, max_seq_len=2048)
    kw = dict(seq_len=2048, local_batch=8, micro_batch=None, ac="auto", dp=1, tp=1, bf16=True, fused_adam=True)
    chunk, est, fits = memory.choose_loss(m, loss="auto", cuda=True, chunk_tokens=4096, budget=76 << 30, **kw)
    assert (chunk, est.micro_batch, est.ac, fits) == (None, 8, "none", True)
    chunked, _ = memory.choose(m, chunk_tokens=4096, budget=48 << 30, **kw)
    plain, _ = memory.choose(m, chunk_tokens=None, budget=48 << 30, **kw)
    assert (chunked.micro_batch, chunked.ac) == (8, "none") and (plain.micro_batch, plain.ac) != (8, "none")
    chunk, est, _ = memory.choose_loss(m, loss="auto", cuda=True, chunk_tokens=4096, budget=48 << 30, **kw)
    assert (chunk, est.micro_batch, est.ac) == (4096, 8, "none")
    assert memory.choose_loss(m, loss="auto", cuda=False, chunk_tokens=4096, budget=76 << 30, **kw)[0] == 4096
    assert memory.choose_loss(m, loss="plain", cuda=False, chunk_tokens=4096, budget=76 << 30, **kw)[0] is None
    assert memory.choose_loss(m, loss="chunked", cuda=True, chunk_tokens=4096, budget=76 << 30, **kw)[0] == 4096
    with pytest.raises(SpecError, match="loss 'plian' must be auto, chunked or plain"):
        TrainConfig(mix="m.yaml", model=m, loss="plian")


def test_straggler_rule():
    assert perf.stragglers([1.0, 1.1, 0.9, 2.0], 1.5) == [3]
    assert perf.stragglers([1.0, 1.1, 0.9, 1.4], 1.5) == []
    assert perf.stragglers([5.0], 1.5) == [] and perf.stragglers([1.0, 9.0], None) == []
    line = perf.straggler_line(7, [1.0, 1.1, 0.9, 2.0], [3], [0.5, 0.45, 0.55, 0.25])
    assert line.startswith("STRAGGLER at step 7: rank 3 step 2.000 s = 1.90x the median 1.050 s, mfu 25.0%")


def test_fp8_refuses_on_cpu_with_the_requirement():
    why = fp8_unavailable(torch.device("cpu"))
    assert "precision: fp8 needs a CUDA GPU with float8 tensor cores (Hopper" in why
    with pytest.raises(SpecError, match="precision: fp8 needs a CUDA GPU .*Hopper.* and torchao; device is cpu"):
        TrainConfig(mix="m.yaml", model=CFG, precision="fp8", device="cpu")


def test_fp8_run_on_cpu_stops_before_training_naming_the_requirement(shared_dir, tmp_path, capsys):
    from shard_helper import write_mix, write_text_sources

    from trainer_bridge.train import main

    manifests = write_text_sources(shared_dir, tmp_path / "shards", max_bytes=4_000, sources=("wiki",))
    mix = write_mix(tmp_path / "mix.yaml", manifests, {"wiki": 1.0}, seq_len=16, token_budget=16 * 64)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"mix: {mix}\nmodel: {{dim: 32, n_layers: 1, n_heads: 2}}\nprecision: fp8\n"
                   f"metrics_path: {tmp_path / 'm.jsonl'}\n")
    assert main(["--config", str(cfg)]) == 2   # device auto resolves to cpu here: no silent bf16/fp32 run
    err = capsys.readouterr().err
    assert "error: precision: fp8 needs a CUDA GPU with float8 tensor cores (Hopper sm_90" in err
    assert not (tmp_path / "m.jsonl").exists()
