"""The scripted policy as a real inference server process, on the native routes a model is served on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from composer_prime.configs.inference import InferenceConfig, ScriptedBackendConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import PROTOCOL_VERSION
from composer_prime.tool_calls import parse_turn
from composer_prime.utils.net import free_port
from composer_prime.weights import STABLE

WARMSTART = Path(__file__).resolve().parents[2] / "configs/quickstart/warmstart"


@pytest.fixture(scope="module")
def rows():
    from feature_deletion.task import load_rows
    from feature_deletion.taskset import DEFAULT_TASKS

    return load_rows(DEFAULT_TASKS)[0][:2]


@pytest.fixture(scope="module")
def server(rows, tmp_path_factory):
    port = free_port()
    backend = ScriptedBackendConfig(task_scripts={rows[1].id: "noop"})
    config = InferenceConfig(model=ModelConfig(path=str(WARMSTART)), port=port, backend=backend,
                             log=LogConfig(progress=False))
    url = f"http://127.0.0.1:{port}"

    async def ready(child):
        async with InferenceClient(url) as client:
            return await wait_ready(client, child, timeout_s=120)

    with inference_server(config, tmp_path_factory.mktemp("scripted")) as child:
        health = asyncio.run(ready(child))
        assert health.backend == "scripted" and health.protocol_version == PROTOCOL_VERSION
        yield url


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(WARMSTART)


def _prompt(tokenizer, row, turns: list[str] = ()) -> list[int]:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": f"Task id: {row.id}\n\n{row.prompt}"}]
    for text in turns:
        messages += [{"role": "assistant", "content": text}, {"role": "tool", "content": "ok"}]
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)


def _generate(url, ids, **kw):
    return httpx.post(f"{url}/generate", json={"prompt_token_ids": ids, **kw}, timeout=30)


def test_each_turn_is_the_scripts_next_step_as_a_hermes_tool_call(server, rows, tokenizer):
    from feature_deletion.scripted_agent import gold_script

    script = gold_script(rows[0])
    said = []
    for step in script:
        body = _generate(server, _prompt(tokenizer, rows[0], said), max_tokens=100_000, n=2).json()
        first, second = body["completions"]
        assert first == second and first["finish_reason"] == "stop" and body["weight_version"] == 0
        assert first["token_ids"][-1] == tokenizer.eos_token_id and set(first["logprobs"]) == {0.0}
        text = tokenizer.decode(first["token_ids"][:-1])
        (call,) = parse_turn(text).calls
        assert (call.call.name, json.loads(call.call.arguments)) == (step["tool"], step["args"])
        said.append(text)
    assert json.loads(parse_turn(said[-1]).calls[0].call.arguments) == {} and "submit" in said[-1]
    noop = _generate(server, _prompt(tokenizer, rows[1]), max_tokens=64).json()["completions"][0]
    assert parse_turn(tokenizer.decode(noop["token_ids"][:-1])).calls[0].call.name == "submit"


def test_limits_and_refusals(server, rows, tokenizer):
    cut = _generate(server, _prompt(tokenizer, rows[0]), max_tokens=3).json()["completions"][0]
    assert cut["finish_reason"] == "length" and len(cut["token_ids"]) == 3
    unknown = tokenizer.apply_chat_template([{"role": "user", "content": "Task id: nope"}], add_generation_prompt=True,
                                              return_dict=False)
    assert _generate(server, unknown).status_code == 400
    score = httpx.post(f"{server}/score", json={"prompt_token_ids": [1], "completion_token_ids": [2]})
    assert score.status_code == 400


def test_weight_versions_are_accepted_only_when_complete(server, tmp_path):
    version = tmp_path / "step_3"
    version.mkdir()
    assert httpx.post(f"{server}/update_weights", json={"path": str(version), "version": 3}).status_code == 404
    (version / STABLE).touch()
    assert httpx.post(f"{server}/update_weights", json={"path": str(version), "version": 3}).json() == \
        {"weight_version": 3}
    assert httpx.get(f"{server}/health").json()["weight_version"] == 3
