"""OpenAI-compatible routes: the shapes OpenAI clients parse, and agreement with /generate."""

from __future__ import annotations

import pytest

openai = pytest.importorskip("openai")  # installed with verifiers


def native_greedy(client, prompt_ids: list[int], max_tokens: int) -> dict:
    body = {"prompt_token_ids": prompt_ids, "max_tokens": max_tokens, "temperature": 0}
    return client.post("/generate", json=body).json()["completions"][0]


def test_completions_shape_and_agreement_with_generate(client, tokenizer, tiny_model_dir):
    prompt = "hello world the"
    ids = tokenizer.encode(prompt)
    expected = native_greedy(client, ids, 8)
    body = {"model": "anything", "prompt": prompt, "max_tokens": 8, "temperature": 0, "n": 2, "logprobs": 1}
    reply = client.post("/v1/completions", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["object"] == "text_completion" and data["model"] == str(tiny_model_dir)
    assert [c["index"] for c in data["choices"]] == [0, 1]
    for choice in data["choices"]:
        assert choice["text"] == tokenizer.decode(expected["token_ids"], skip_special_tokens=True)
        assert choice["finish_reason"] == expected["finish_reason"]
        logprobs = choice["logprobs"]
        assert logprobs["tokens"] == [tokenizer.decode([t]) for t in expected["token_ids"]]
        assert logprobs["token_logprobs"] == pytest.approx(expected["logprobs"], abs=1e-6)
        assert logprobs["text_offset"][0] == 0 and len(logprobs["text_offset"]) == len(logprobs["tokens"])
    assert data["usage"] == {"prompt_tokens": len(ids), "completion_tokens": 2 * len(expected["token_ids"]),
                             "total_tokens": len(ids) + 2 * len(expected["token_ids"])}


def test_stop_strings_cut_the_text(client, tokenizer):
    ids = tokenizer.encode("reverse text")
    full = tokenizer.decode(native_greedy(client, ids, 16)["token_ids"], skip_special_tokens=True)
    stop = full[3:5]
    cut = full.find(stop)
    body = {"prompt": "reverse text", "max_tokens": 16, "temperature": 0, "stop": [stop, "never-there"],
            "logprobs": 0}
    choice = client.post("/v1/completions", json=body).json()["choices"][0]
    assert choice["text"] == full[:cut] and choice["finish_reason"] == "stop"
    kept = "".join(choice["logprobs"]["tokens"])
    assert kept.startswith(full[:cut]) and stop in kept  # tokens end with the one completing the stop string


def test_chat_completions_apply_the_chat_template(client, tokenizer):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert tokenizer.decode(ids).endswith("<|im_start|>assistant\n")
    expected = native_greedy(client, list(ids), 10)
    body = {"model": "m", "messages": messages, "max_tokens": 10, "temperature": 0, "logprobs": True}
    data = client.post("/v1/chat/completions", json=body).json()
    assert data["object"] == "chat.completion"
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant",
                                 "content": tokenizer.decode(expected["token_ids"], skip_special_tokens=True)}
    content = choice["logprobs"]["content"]
    assert [c["logprob"] for c in content] == pytest.approx(expected["logprobs"], abs=1e-6)
    assert all(c["bytes"] == list(c["token"].encode()) and c["top_logprobs"] == [] for c in content)
    assert data["usage"]["prompt_tokens"] == len(ids)
    assert data["usage"]["completion_tokens"] == len(expected["token_ids"])


def test_chat_content_parts_read_as_text(client):
    def reply(content):
        body = {"messages": [{"role": "user", "content": content}], "max_tokens": 6, "temperature": 0}
        return client.post("/v1/chat/completions", json=body).json()

    parts = [{"type": "text", "text": "hello "}, {"type": "text", "text": "world"}]
    as_parts, as_string = reply(parts), reply("hello world")
    assert as_parts["choices"][0]["message"] == as_string["choices"][0]["message"]
    assert as_parts["usage"] == as_string["usage"]


def test_unsupported_or_bad_requests_are_400(client):
    assert client.post("/v1/completions", json={"prompt": "hi", "stream": True}).status_code == 400
    assert client.post("/v1/completions", json={"prompt": ""}).status_code == 400
    assert client.post("/v1/chat/completions", json={"messages": []}).status_code == 422
    assert client.post("/v1/completions", json={"prompt": [5, 100_000]}).status_code == 400


def test_the_openai_client_parses_every_route(server, tiny_model_dir):
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused") as api:
        assert [m.id for m in api.models.list().data] == [str(tiny_model_dir)]
        completion = api.completions.create(model="m", prompt="hello", max_tokens=5, logprobs=1, seed=3)
        assert isinstance(completion.choices[0].text, str)
        assert len(completion.choices[0].logprobs.token_logprobs) == completion.usage.completion_tokens
        chat = api.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}], max_tokens=6, n=2, seed=3, logprobs=True,
            top_p=0.9, extra_body={"top_k": 20},
        )
        assert len(chat.choices) == 2 and chat.choices[0].message.role == "assistant"
        assert all(len(c.logprobs.content) <= 6 for c in chat.choices)
        assert chat.usage.completion_tokens == sum(len(c.logprobs.content) for c in chat.choices)
        again = api.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}], max_tokens=6, n=2, seed=3,
            top_p=0.9, extra_body={"top_k": 20},
        )
        assert [c.message.content for c in again.choices] == [c.message.content for c in chat.choices]
