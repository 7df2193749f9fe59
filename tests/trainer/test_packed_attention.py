"""Packed rows attended sample by sample (trainer/packed_attention.py): the numbers of transformers' dense
block-diagonal mask (float64), and no mask the size of a row squared. The CUDA path (varlen flash attention)
runs only on a GPU (-m gpu): its numbers and gradients against the same float64 reference."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.model.load import load_train_model
from composer_prime.model.tiny import TinyModelConfig, build
from composer_prime.trainer.build import build_train_model
from composer_prime.trainer.logprobs import forward_logprobs
from composer_prime.trainer.packed_attention import ATTENTION
from composer_prime.trainer.parallel import World

REPO = Path(__file__).resolve().parents[2]
CPU = World(rank=0, world_size=1, device=torch.device("cpu"))
SAMPLES = [5, 17, 30, 12]  # one row of 64: four samples, positions restarting at 0
WINDOW = 8


@pytest.fixture(scope="module", params=["qwen3", "qwen2-window"])
def model_dir(request, tmp_path_factory) -> Path:
    window = {"sliding_window": WINDOW, "use_sliding_window": True, "max_window_layers": 0}
    extra = window if "window" in request.param else {}
    return build(TinyModelConfig(
        output_dir=tmp_path_factory.mktemp(request.param) / "model", architecture=request.param.split("-")[0],
        tokenizer_from=REPO / "configs/quickstart/warmstart", hidden_size=64, num_layers=2, num_heads=4,
        num_kv_heads=2, intermediate_size=128, max_position_embeddings=256, extra=extra,
    ))


def packed_rows(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(1, vocab, (2, sum(SAMPLES)), generator=torch.Generator().manual_seed(0))
    positions = torch.cat([torch.arange(n) for n in SAMPLES]).repeat(2, 1)
    return ids, positions


def test_the_same_numbers_as_the_dense_mask(model_dir):
    dense = load_train_model(ModelConfig(path=str(model_dir), dtype="float32", device="cpu")).double()
    packed = build_train_model(TrainerConfig(model=ModelConfig(path=str(model_dir), dtype="float32", device="cpu")),
                               CPU).double()
    assert dense.config._attn_implementation == "sdpa" and packed.config._attn_implementation == ATTENTION
    ids, positions = packed_rows(dense.config.vocab_size)
    with torch.no_grad():
        expected = forward_logprobs(dense, ids, positions, 0.9)
        got = forward_logprobs(packed, ids, positions, 0.9)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


def test_the_same_gradients_as_the_dense_mask(model_dir):
    # 17 and 30 share a length class: the 17-token sample is padded to 30, and no gradient may reach the padding
    dense = load_train_model(ModelConfig(path=str(model_dir), dtype="float32", device="cpu")).double()
    packed = build_train_model(TrainerConfig(model=ModelConfig(path=str(model_dir), dtype="float32", device="cpu")),
                               CPU).double()
    ids, positions = packed_rows(dense.config.vocab_size)
    weights = torch.rand(ids.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for model in (dense, packed):
        (forward_logprobs(model, ids, positions, 0.9) * weights).sum().backward()
    for (name, expected), got in zip(dense.named_parameters(), packed.parameters()):
        torch.testing.assert_close(got.grad, expected.grad, rtol=0, atol=1e-12, msg=name)


def test_no_mask_grows_with_the_row(model_dir, monkeypatch):
    model = build_train_model(TrainerConfig(model=ModelConfig(path=str(model_dir), dtype="float32", device="cpu")),
                              CPU)
    calls: list[tuple[int, int]] = []  # (query length, mask elements) of every SDPA call
    sdpa = F.scaled_dot_product_attention

    def recording(query, key, value, attn_mask=None, *args, **kwargs):
        calls.append((query.shape[-2], 0 if attn_mask is None else attn_mask[0].numel()))
        return sdpa(query, key, value, attn_mask, *args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    ids, positions = packed_rows(model.config.vocab_size)
    forward_logprobs(model, ids, positions, 1.0).sum().backward()
    longest = max(SAMPLES)
    assert calls and all(length <= longest and mask <= longest * longest for length, mask in calls), calls


@pytest.mark.gpu
def test_varlen_flash_on_cuda_bf16_gives_the_dense_masks_numbers(model_dir, monkeypatch):
    """On CUDA in bf16 (mixed precision: FSDP2 casts each layer to bf16) the packed rows go through varlen
    flash attention, never a masked SDPA; log-probs and gradients are the dense mask's in float64 on the same
    bf16-rounded weights, to bf16's precision."""
    import torch.nn.attention.varlen as varlen

    world = World(rank=0, world_size=1, device=torch.device("cuda"))
    packed = build_train_model(TrainerConfig(model=ModelConfig(path=str(model_dir), dtype="bfloat16",
                                                               device="cuda")), world)
    dense = load_train_model(ModelConfig(path=str(model_dir), dtype="float32", device="cpu")).double()
    for parameter in dense.parameters():  # the weights the bf16 forward computes with
        parameter.data = parameter.data.bfloat16().double()
    flash, masked = [], []
    varlen_attn, sdpa = varlen.varlen_attn, F.scaled_dot_product_attention
    monkeypatch.setattr(varlen, "varlen_attn", lambda *a, **k: flash.append(a[0].dtype) or varlen_attn(*a, **k))

    def recording(query, key, value, attn_mask=None, *args, **kwargs):
        masked.append(query.device.type)
        return sdpa(query, key, value, attn_mask, *args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    ids, positions = packed_rows(dense.config.vocab_size)
    weights = torch.rand(ids.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    expected = forward_logprobs(dense, ids, positions, 0.9)
    (expected * weights).sum().backward()
    masked.clear()  # the float64 reference's own SDPA calls
    got = forward_logprobs(packed, ids.cuda(), positions.cuda(), 0.9)
    (got.double() * weights.cuda()).sum().backward()
    assert flash and set(flash) == {torch.bfloat16} and not masked, (flash, masked)
    torch.testing.assert_close(got.detach().double().cpu(), expected.detach(), rtol=0, atol=5e-2)
    names = dict(dense.named_parameters())
    for name, parameter in packed.named_parameters():
        grad = parameter.grad.full_tensor() if hasattr(parameter.grad, "full_tensor") else parameter.grad
        reference = names[name].grad
        error = (grad.double().cpu() - reference).norm() / reference.norm().clamp_min(1e-12)
        assert parameter.dtype == torch.float32 and error < 5e-2, (name, parameter.dtype, error.item())
