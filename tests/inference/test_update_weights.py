"""POST /update_weights: published versions load between decode steps; bad ones are refused."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.inference.protocol import GenerateRequest, GenerateResponse
from composer_prime.weights import STABLE, publish_weights


def perturbed(tiny_model_dir, seed: int = 1) -> tuple[dict[str, torch.Tensor], str]:
    """The tiny model's weights plus noise, each tensor with its own storage (as the trainer publishes)."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for name, tensor in model.state_dict().items():
        state[name] = tensor + 0.1 * torch.randn(tensor.shape, generator=generator)
    state["lm_head.weight"] = state["model.embed_tokens.weight"].clone()  # tied
    return state, model.config.to_json_string()


def float64_model(tiny_model_dir, state: dict[str, torch.Tensor] | None):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64).eval()
    if state is not None:
        model.load_state_dict(state)
    return model


def greedy(http: httpx.Client, prompt: list[int]) -> GenerateResponse:
    response = http.post("/generate", json={"prompt_token_ids": prompt, "max_tokens": 12, "temperature": 0})
    response.raise_for_status()
    return GenerateResponse.model_validate(response.json())


def test_loading_a_version_changes_weights_and_version(fresh_server, tiny_model_dir, tmp_path, reference_logprobs):
    state, config_json = perturbed(tiny_model_dir)
    path = publish_weights(tmp_path, 1, state, config_json)
    new_model = float64_model(tiny_model_dir, state)
    prompt = [11, 23, 35, 47]
    with httpx.Client(base_url=fresh_server.url, timeout=60) as http:
        before = greedy(http, prompt)
        reply = http.post("/update_weights", json={"path": str(path), "version": 1})
        assert reply.status_code == 200 and reply.json() == {"weight_version": 1}
        assert http.get("/health").json()["weight_version"] == 1
        after = greedy(http, prompt)
    assert before.weight_version == 0 and after.weight_version == 1
    assert after.completions[0].token_ids != before.completions[0].token_ids
    tokens = after.completions[0].token_ids
    assert after.completions[0].logprobs == pytest.approx(
        reference_logprobs(prompt, tokens, 0.0, model=new_model), abs=1e-4
    )


def test_incomplete_or_unfit_versions_are_refused(fresh_server, tiny_model_dir, tmp_path):
    state, config_json = perturbed(tiny_model_dir)
    incomplete = publish_weights(tmp_path, 1, state, config_json)
    (incomplete / STABLE).unlink()
    extra = publish_weights(tmp_path, 2, {**state, "model.extra.weight": torch.zeros(2)}, config_json)
    reshaped = publish_weights(tmp_path, 3, {**state, "model.norm.weight": torch.ones(3)}, config_json)
    partial = publish_weights(tmp_path, 4, {k: v for k, v in state.items() if "layers.1." not in k}, config_json)
    prompt = [3, 4, 5]
    with httpx.Client(base_url=fresh_server.url, timeout=60) as http:
        before = greedy(http, prompt)
        for path, status, needle in [
            (incomplete, 404, STABLE), (tmp_path / "nowhere", 404, STABLE),
            (extra, 400, "model.extra.weight"), (reshaped, 400, "model.norm.weight"), (partial, 400, "missing"),
        ]:
            reply = http.post("/update_weights", json={"path": str(path), "version": 7})
            assert reply.status_code == status, reply.text
            assert needle in reply.json()["detail"]
        assert http.get("/health").json()["weight_version"] == 0
        assert greedy(http, prompt).completions[0].token_ids == before.completions[0].token_ids


def test_a_version_that_fails_part_way_leaves_the_old_one_served_whole(fresh_server, tiny_model_dir, tmp_path):
    """Defect 9. Two versions pass every check made before a weight changes (STABLE, names, shapes) and fail later:
    one's file is cut short (a copy interrupted after its marker was written), the other holds a tensor of the right
    shape in float4, which torch has no kernel to copy into a float32 parameter: the load raises after the other
    tensors were copied. Either way the version served before is served whole, and the answer is a 400 saying so.
    Then a good version still loads (the server is not left broken), and is itself restored after another failure."""
    state, config_json = perturbed(tiny_model_dir)
    truncated = publish_weights(tmp_path, 1, state, config_json)
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    late = "model.layers.1.mlp.down_proj.weight"  # copied after the embeddings and layer 0 (and before nothing)
    fp4 = torch.zeros(state[late].shape, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    uncopyable = publish_weights(tmp_path, 2, {**state, late: fp4}, config_json)
    good = publish_weights(tmp_path, 3, state, config_json)
    before = {name: tensor.clone() for name, tensor in fresh_server.backend.model.state_dict().items()}
    prompt = [3, 4, 5]
    with httpx.Client(base_url=fresh_server.url, timeout=60) as http:
        served = greedy(http, prompt)
        for path in (truncated, uncopyable):
            reply = http.post("/update_weights", json={"path": str(path), "version": 7})
            assert reply.status_code == 400, reply.text
            assert str(path) in reply.json()["detail"] and "\n" not in reply.json()["detail"]
            assert http.get("/health").json()["weight_version"] == 0
            now = fresh_server.backend.model.state_dict()
            changed = [name for name, tensor in before.items() if not torch.equal(now[name], tensor)]
            assert changed == [], f"{path.name}: {len(changed)} of {len(before)} tensors changed"
            assert greedy(http, prompt) == served
        assert http.post("/update_weights", json={"path": str(good), "version": 3}).status_code == 200
        assert greedy(http, prompt).weight_version == 3
        # restored from the version directory it was served from, not only from the base model
        assert http.post("/update_weights", json={"path": str(uncopyable), "version": 8}).status_code == 400
        assert http.get("/health").json()["weight_version"] == 3
    now = fresh_server.backend.model.state_dict()
    assert all(torch.equal(now[name], tensor) for name, tensor in state.items())


def test_tied_weights_may_be_published_once(fresh_server, tiny_model_dir, tmp_path):
    state, config_json = perturbed(tiny_model_dir)
    del state["lm_head.weight"]  # the embedding fills the tied head
    path = publish_weights(tmp_path, 5, state, config_json)
    with httpx.Client(base_url=fresh_server.url, timeout=60) as http:
        assert http.post("/update_weights", json={"path": str(path), "version": 5}).status_code == 200
        head = fresh_server.backend.model.lm_head.weight
        assert torch.equal(head, state["model.embed_tokens.weight"])


def test_every_response_comes_from_the_version_it_names(fresh_server, tiny_model_dir, tmp_path, reference_logprobs):
    state, config_json = perturbed(tiny_model_dir)
    path = publish_weights(tmp_path, 1, state, config_json)
    references = {0: float64_model(tiny_model_dir, None), 1: float64_model(tiny_model_dir, state)}
    prompts = [[7 + i, 40 + 3 * i, 90 + i][: 1 + i % 3] for i in range(6)]

    async def scenario():
        async with httpx.AsyncClient(base_url=fresh_server.url, timeout=60) as http:
            def generate(prompt):
                body = GenerateRequest(prompt_token_ids=prompt, n=3, max_tokens=40).model_dump()
                return asyncio.create_task(http.post("/generate", json=body))

            in_flight = [generate(p) for p in prompts]  # decoding while the reload arrives
            await asyncio.sleep(0.05)
            update = await http.post("/update_weights", json={"path": str(path), "version": 1})
            after = [generate(p) for p in prompts]
            return update, await asyncio.gather(*in_flight), await asyncio.gather(*after)

    update, in_flight, after = asyncio.run(scenario())
    assert update.status_code == 200
    for prompt, reply in zip(prompts + prompts, in_flight + after):
        response = GenerateResponse.model_validate(reply.json())
        for completion in response.completions:
            expected = reference_logprobs(prompt, completion.token_ids, 1.0, model=references[response.weight_version])
            assert completion.logprobs == pytest.approx(expected, abs=1e-4)
    assert all(GenerateResponse.model_validate(r.json()).weight_version == 1 for r in after)
