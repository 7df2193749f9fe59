"""The trainer's model build (trainer/build.py): activation checkpointing is exact and saves activations,
LoRA versions are the adapted model merged (checked in float64), mixed precision keeps float32 masters."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM

from composer_prime.configs.shared import ModelConfig
from composer_prime.model.load import load_model
from composer_prime.trainer.build import build_train_model, inference_state_dict
from composer_prime.configs.trainer import LoRAConfig, TrainerConfig
from composer_prime.trainer.logprobs import forward_logprobs
from composer_prime.trainer.packed_attention import ATTENTION
from composer_prime.trainer.parallel import World
from composer_prime.utils.net import free_port

WORLD = World(rank=0, world_size=1, device=torch.device("cpu"))


def config_for(model_dir: Path, **fields) -> TrainerConfig:
    model = ModelConfig(path=str(model_dir), device="cpu", dtype=fields.pop("dtype", None))
    return TrainerConfig(model=model, **fields)


def packed_inputs(vocab: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two rows, each two packed samples (position ids restart), as the trainer forwards them."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (2, 24), generator=gen)
    positions = torch.cat([torch.arange(10), torch.arange(14)]).repeat(2, 1)
    return ids, positions


def loss_and_grads(model, ids, positions) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    loss = forward_logprobs(model, ids, positions, 1.0).sum()
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def saved_bytes(model, ids, positions) -> int:
    """Bytes autograd keeps for the backward pass of one forward."""
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward_logprobs(model, ids, positions, 1.0).sum()
    return total


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    """GPT-2 stores its linear layers as Conv1D, transposed: the case a LoRA merge gets wrong first."""
    torch.manual_seed(0)
    config = AutoConfig.for_model("gpt2", vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    path = tmp_path_factory.mktemp("tiny_gpt2")
    AutoModelForCausalLM.from_config(config).save_pretrained(path)
    return path


def test_activation_checkpointing_gives_the_same_gradients_and_keeps_fewer_activations(tiny_model_dir):
    ids, positions = packed_inputs(300)
    plain = build_train_model(config_for(tiny_model_dir), WORLD)
    checkpointed = build_train_model(config_for(tiny_model_dir, activation_checkpointing=True), WORLD)
    loss_a, grads_a = loss_and_grads(plain, ids, positions)
    loss_b, grads_b = loss_and_grads(checkpointed, ids, positions)
    assert torch.equal(loss_a, loss_b)
    assert grads_a.keys() == grads_b.keys() and len(grads_a) == len(list(plain.parameters()))
    for name in grads_a:
        assert torch.equal(grads_a[name], grads_b[name]), name
    assert saved_bytes(checkpointed, ids, positions) < 0.7 * saved_bytes(plain, ids, positions)


@pytest.mark.parametrize("arch", ["qwen3", "gpt2"])
def test_lora_trains_only_adapters_and_publishes_them_merged(arch, tiny_model_dir, gpt2_dir):
    model_dir = tiny_model_dir if arch == "qwen3" else gpt2_dir
    config = config_for(model_dir, lora=LoRAConfig(rank=4, alpha=8.0))
    model = build_train_model(config, WORLD)
    base = AutoModelForCausalLM.from_pretrained(model_dir)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    # fresh adapters (B = 0) publish the base weights unchanged
    start = inference_state_dict(model, config, WORLD)
    assert start.keys() == base.state_dict().keys()
    assert all(torch.equal(start[k], v) for k, v in base.state_dict().items())

    with torch.no_grad():  # what training does to the adapters: B moves away from 0
        for name, p in model.named_parameters():
            if ".lora_B." in name:
                p.normal_(0, 0.05)
    merged = inference_state_dict(model, config, WORLD)
    assert any(not torch.equal(merged[k], v) for k, v in base.state_dict().items())
    base.load_state_dict(merged)
    ids, positions = packed_inputs(300)
    with torch.no_grad():
        expected = model.double()(input_ids=ids, position_ids=positions, use_cache=False).logits
        got = base.double()(input_ids=ids, position_ids=positions, use_cache=False).logits
    # the merged weights are float32: one rounding of W + B A s per weight
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_mixed_precision_keeps_float32_masters_and_publishes_the_model_dtype(tiny_model_dir):
    ids, positions = packed_inputs(300)
    mixed_config = config_for(tiny_model_dir, dtype="bfloat16")
    mixed = build_train_model(mixed_config, WORLD)
    assert {p.dtype for p in mixed.parameters()} == {torch.float32}
    assert mixed(input_ids=ids, position_ids=positions, use_cache=False).logits.dtype == torch.bfloat16
    published = inference_state_dict(mixed, mixed_config, WORLD)
    assert {t.dtype for t in published.values()} == {torch.bfloat16}
    assert mixed.config.dtype == torch.bfloat16  # what the published config.json says
    # AdamW's moments follow the parameters: float32
    optimizer = torch.optim.AdamW(mixed.parameters())
    forward_logprobs(mixed, ids, positions, 1.0).sum().backward()
    optimizer.step()
    assert {s["exp_avg_sq"].dtype for s in optimizer.state.values()} == {torch.float32}

    pure = build_train_model(config_for(tiny_model_dir, dtype="bfloat16", mixed_precision=False), WORLD)
    assert {p.dtype for p in pure.parameters()} == {torch.bfloat16}


def test_mixed_precision_on_one_process_runs_the_network_inference_runs(tiny_model_dir):
    """bf16 compute over float32 masters as FSDP2 does it (parameters cast, then the bf16 forward) equals the bf16
    model inference loads, bit for bit; autocast over float32 weights computed another network."""
    ids, positions = packed_inputs(300)
    mixed = build_train_model(config_for(tiny_model_dir, dtype="bfloat16"), WORLD)
    served = load_model(ModelConfig(path=str(tiny_model_dir), dtype="bfloat16", device="cpu"))
    served.set_attn_implementation(ATTENTION)  # the trainer's attention kernels: only the precision differs
    with torch.no_grad():
        assert torch.equal(forward_logprobs(mixed, ids, positions, 1.0), forward_logprobs(served, ids, positions, 1.0))


def test_lora_keeps_the_frozen_base_in_the_model_dtype(tiny_model_dir):
    model = build_train_model(config_for(tiny_model_dir, dtype="bfloat16", lora=LoRAConfig(rank=4, alpha=8.0)), WORLD)
    frozen = {p.dtype for p in model.parameters() if not p.requires_grad}
    trained = {p.dtype for p in model.parameters() if p.requires_grad}
    assert frozen == {torch.bfloat16} and trained == {torch.float32}


_RANKS = """
import sys, torch
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.trainer.build import build_train_model, inference_state_dict
from composer_prime.trainer.parallel import close_world, init_world
from safetensors.torch import load_file, save_file
with_weights, without_weights, out = sys.argv[1:]
world = init_world(ModelConfig(path=with_weights, device="cpu"))
path = with_weights if world.is_main else without_weights  # only rank 0 may read the weights
model = build_train_model(TrainerConfig(model=ModelConfig(path=path, device="cpu")), world)
state = inference_state_dict(model, TrainerConfig(model=ModelConfig(path=path, device="cpu")), world)
if world.is_main:
    save_file({k: v.contiguous() for k, v in state.items()}, out)
close_world(world)
"""


@pytest.mark.slow
def test_only_rank_0_reads_the_checkpoint(tiny_model_dir, tmp_path):
    """Two gloo ranks: rank 1's model directory has no weights at all, yet it ends with the model's shards."""
    bare = tmp_path / "no-weights"
    shutil.copytree(tiny_model_dir, bare)
    (bare / "model.safetensors").unlink()
    script = tmp_path / "ranks.py"
    script.write_text(_RANKS)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr",
                           "127.0.0.1", "--master-port", str(free_port()), str(script), str(tiny_model_dir), str(bare),
                           str(tmp_path / "out.safetensors")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"})
    assert done.returncode == 0, done.stderr[-3000:]
    got, base = load_file(str(tmp_path / "out.safetensors")), AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert got.keys() == base.state_dict().keys()
    assert all(torch.equal(got[k], v) for k, v in base.state_dict().items())
