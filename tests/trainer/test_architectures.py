"""Every architecture exact: the sampler's log-probs (inference backend: left-padded prompts, batched
and continuously batched decoding with a KV cache) equal the trainer's (packed rows, train mode) on a
fully on-policy step, for nine causal LMs built locally with random weights and the quickstart
tokenizer: llama, qwen2, gemma2 (sliding window + logit soft-capping), phi3 (sliding window),
gpt_neox, gpt2 (learned absolute position embeddings), and the mixtures of experts qwen3_moe,
mixtral and deepseek_v3 (multi-head latent attention, a shared expert, a dense first layer).

Every model is configured with dropout 0.1 where its config has one, as many released checkpoints
are: the trainer runs in train mode and must not thin the network it scores with (GPT-2's default
0.1 gave importance ratio 1.002 and mismatch KL 0.002 before dropout was switched off). Mixtral's
router jitter (noise on the router's input in train mode) is on for the same reason.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.trainer import DPPOLossConfig
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.loss.resolve import resolve_loss
from composer_prime.model.load import load_train_model
from composer_prime.model.tiny import TinyModelConfig, build
from composer_prime.orchestrator.packing import Sample, pack_step
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step

REPO = Path(__file__).resolve().parents[2]
QUICKSTART_TOKENIZER = REPO / "configs/quickstart/warmstart"
CPU = World(rank=0, world_size=1, device=torch.device("cpu"))
WINDOW = 8  # shorter than every prompt + completion below, so the window cuts into each one

EXTRA: dict[str, dict] = {
    "llama": {"attention_dropout": 0.1},
    "qwen2": {"attention_dropout": 0.1},
    "gemma2": {"sliding_window": WINDOW, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
               "attention_dropout": 0.1},
    "phi3": {"sliding_window": WINDOW, "attention_dropout": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1},
    "gpt_neox": {"attention_dropout": 0.1, "hidden_dropout": 0.1},
    "gpt2": {},  # its defaults: attn, resid and embd dropout 0.1
    "qwen3_moe": {"attention_dropout": 0.1},
    "mixtral": {"attention_dropout": 0.1, "router_jitter_noise": 0.1},
    "deepseek_v3": {"attention_dropout": 0.1},
}
USER_TURNS = ["x", "reverse: c a t", "please reverse the letters of these few words: hello there"]
MAX_TOKENS = [24, 12, 18]  # rows end at different steps, so later requests join a running batch


@pytest.fixture(scope="module", params=list(EXTRA))
def model_dir(request, tmp_path_factory) -> Path:
    arch = request.param
    return build(TinyModelConfig(
        output_dir=tmp_path_factory.mktemp(arch) / "model", architecture=arch, tokenizer_from=QUICKSTART_TOKENIZER,
        hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128,
        max_position_embeddings=256, extra=EXTRA[arch],
    ))


async def _sample(model_dir: Path) -> tuple[list[Sample], int]:
    """Sampled completions of every prompt, and the pad token id."""
    backend = TransformersBackend(ModelConfig(path=str(model_dir), dtype="float32"),
                                  TransformersBackendConfig(max_batch_size=4, batch_wait_ms=0), seed=0)
    chat = backend.tokenizer.apply_chat_template
    prompts = [chat([{"role": "user", "content": turn}], add_generation_prompt=True, return_dict=False)
               for turn in USER_TURNS]
    try:
        tasks = []
        for i, (prompt, max_tokens) in enumerate(zip(prompts, MAX_TOKENS)):
            request = GenerateRequest(prompt_token_ids=prompt, n=2, temperature=1.0, max_tokens=max_tokens, seed=i)
            tasks.append(asyncio.create_task(backend.generate(request)))
            await asyncio.sleep(0.02)  # arrive while the batch decodes: prefilled apart, then merged
        responses = await asyncio.gather(*tasks)
    finally:
        await backend.close()
    samples = [
        Sample(prompt_ids=prompt, completion_ids=c.token_ids, completion_logprobs=c.logprobs,
               advantage=1.0 if j % 2 else -1.0, policy_version=0)
        for prompt, response in zip(prompts, responses)
        for j, c in enumerate(response.completions)
    ]
    return samples, backend.tokenizer.pad_token_id


def test_first_step_is_exactly_on_policy(model_dir):
    samples, pad_token_id = asyncio.run(_sample(model_dir))
    assert len({len(s.prompt_ids) for s in samples}) == len(USER_TURNS)  # left padding in every prefill
    # Two rows of 64: each holds several samples back to back, positions restarting at 0.
    [batch] = pack_step(samples, step=1, seq_len=64, micro_batch_rows=2, world_size=1,
                        pad_token_id=pad_token_id, temperature=1.0)
    assert all((m.position_ids.numpy() == 0).sum() >= 3 for m in batch.micro_batches)

    model = load_train_model(ModelConfig(path=str(model_dir), dtype="float32"), torch.device("cpu"))
    assert model.training
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    result = train_step(model, optimizer, batch, resolve_loss(DPPOLossConfig()), 0.0, 1.0, CPU)

    # Both sides run the same float32 weights over the same tokens; only the batch shapes (and so the
    # order of float32 sums) differ: |log r| per token is a few 1e-7 (~1e-6 at worst here), so the
    # mean ratio is 1 within 1e-6 and k3 ~ (log r)^2 / 2 ~ 1e-12, to which exp/log in float32 add
    # ~1e-7 of rounding. A wrong position, mask, window or a live dropout gives 1e-3 and more.
    ratio, kl = result.loss_metrics["importance_ratio"], result.loss_metrics["mismatch_kl_k3"]
    assert abs(ratio - 1) < 1e-5, ratio
    assert abs(kl) < 1e-6, kl
    assert result.loss_metrics["masked"] == 0
