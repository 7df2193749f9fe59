"""Hint sites from real rollouts: error detection with the environment's feedback, the hinted teacher
context, and the inference-side teacher (top-k from POST /score) against a float64 forward."""

import asyncio

import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.configs.hints import HintsConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.hints.writer import TemplateHintWriter
from composer_prime.inference.client import InferenceClient
from composer_prime.model.chat_template import template_ids
from composer_prime.model.load import load_tokenizer
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.orchestrator.hint_sites import build_hint_sites, pick_sites, rollouts_of
from composer_prime.rollout.single_turn import rollout_group


def test_sites_from_real_rollouts_with_the_inference_teacher(tiny_model, inference_url):
    env = load_environment(EnvConfig(id="reverse-text", args={"num_examples": 16}))
    tokenizer = load_tokenizer(ModelConfig(path=str(tiny_model)))
    hints = HintsConfig(enabled=True, teacher="inference", top_k=8, max_sites_per_step=5)

    async def go():
        async with InferenceClient(inference_url) as client:
            sampling = SamplingConfig(temperature=1.0, max_tokens=8)
            groups = [await rollout_group(client, env, tokenizer, example, sampling, n=3, seed=i)
                      for i, example in enumerate(env.examples("train")[:3])]
            rollouts = [rollouts_of(1, slot, g, env.id, hints) for slot, g in enumerate(groups)]
            picked = pick_sites(rollouts, hints.max_sites_per_step)
            sites = await build_hint_sites(picked, hints, TemplateHintWriter(), tokenizer, client, temperature=1.0)
            return groups, rollouts, picked, sites

    groups, rollouts, picked, sites = asyncio.run(go())
    # An untrained model gets every answer wrong: all rollouts err; picks go round robin over groups.
    assert all(r.trace.errors for g in rollouts for r in g)
    assert [r.trace.id for r in picked] == ["step1/0/0", "step1/1/0", "step1/2/0", "step1/0/1", "step1/1/1"]
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float64).eval()
    for rollout, site in zip(picked, sites, strict=True):
        error = rollout.trace.errors[0]
        assert site.kind == error.kind
        assert site.student_prompt_ids == rollout.prompt_ids and site.completion_ids == rollout.completion_ids
        expected_context = rollout.trace.messages[: error.turn] + [
            {"role": "user", "content": "Hint: " + TemplateHintWriter().template(error)}]
        as_dicts = [m if isinstance(m, dict) else {"role": m.role, "content": m.content} for m in expected_context]
        assert site.teacher_prompt_ids == template_ids(tokenizer, as_dicts)
        if error.kind == "wrong_answer":
            assert "expected '" in error.message  # the environment's own feedback
        with torch.no_grad():
            ids = torch.tensor([site.teacher_prompt_ids + site.completion_ids])
            logits = model(input_ids=ids).logits[0, len(site.teacher_prompt_ids) - 1 : -1]
        top = torch.log_softmax(logits, -1).topk(8, dim=-1)
        assert site.teacher_topk_ids.numpy().tolist() == top.indices.tolist()
        assert torch.from_numpy(site.teacher_topk_logprobs.numpy().copy()).double() == pytest.approx(top.values,
                                                                                                     abs=1e-4)
