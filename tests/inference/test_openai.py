"""OpenAI-compatible routes: the shapes OpenAI clients parse, and agreement with /generate."""

from __future__ import annotations

import json

import pytest

from composer_prime.inference.openai_compat import _Choice, _pieces

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
        # n=2 decodes 2 rows, /generate 1: float32 sums reorder, eps 1.2e-7 x logits ~10 x 2 layers ~ 1e-6
        assert logprobs["token_logprobs"] == pytest.approx(expected["logprobs"], abs=1e-5)
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
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    assert tokenizer.decode(ids).endswith("<|im_start|>assistant\n")
    expected = native_greedy(client, list(ids), 10)
    body = {"model": "m", "messages": messages, "max_tokens": 10, "temperature": 0, "logprobs": True}
    data = client.post("/v1/chat/completions", json=body).json()
    assert data["object"] == "chat.completion"
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant",
                                 "content": tokenizer.decode(expected["token_ids"], skip_special_tokens=True)}
    content = choice["logprobs"]["content"]
    # the backend batches whatever is queued, so only float32 agreement is promised (see above)
    assert [c["logprob"] for c in content] == pytest.approx(expected["logprobs"], abs=1e-5)
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


def sse_chunks(reply) -> list[dict]:
    """The JSON chunks of an SSE body, checking the framing: `data:` events, `[DONE]` last."""
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    events = [e for e in reply.text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: "):]) for e in events[:-1]]


def test_streamed_completions_carry_the_same_answer(client):
    plain = {"prompt": ["reverse text", "hello"], "max_tokens": 12, "temperature": 0, "n": 2, "logprobs": 1}
    full = client.post("/v1/completions", json=plain).json()
    stream = client.post("/v1/completions", json={**plain, "stream": True, "stream_options": {"include_usage": True}})
    chunks = sse_chunks(stream)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == full["usage"]
    assert all(c["object"] == "text_completion" and c["id"] == chunks[0]["id"] for c in chunks)
    for expected in full["choices"]:
        mine = [ch for c in chunks for ch in c["choices"] if ch["index"] == expected["index"]]
        assert "".join(ch["text"] for ch in mine) == expected["text"]
        assert [ch["finish_reason"] for ch in mine] == [None] * (len(mine) - 1) + [expected["finish_reason"]]
        for field in ("tokens", "token_logprobs", "text_offset"):
            assert [x for ch in mine if ch["logprobs"] for x in ch["logprobs"][field]] == expected["logprobs"][field]
    without_usage = sse_chunks(client.post("/v1/completions", json={**plain, "stream": True}))
    assert all("usage" not in c for c in without_usage)


def test_streamed_chat_cut_at_a_stop_string(client, tokenizer):
    messages = [{"role": "user", "content": "hello world"}]
    plain = {"messages": messages, "max_tokens": 16, "temperature": 0, "logprobs": True}
    text = client.post("/v1/chat/completions", json=plain).json()["choices"][0]["message"]["content"]
    stop = text[4:6]
    full = client.post("/v1/chat/completions", json={**plain, "stop": stop}).json()
    chunks = sse_chunks(client.post("/v1/chat/completions", json={**plain, "stop": stop, "stream": True}))
    deltas = [c["choices"][0] for c in chunks]
    assert deltas[0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(d["delta"].get("content", "") for d in deltas) == full["choices"][0]["message"]["content"]
    assert deltas[-1] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    streamed = [t for d in deltas if d["logprobs"] for t in d["logprobs"]["content"]]
    assert streamed == full["choices"][0]["logprobs"]["content"]


def test_pieces_never_split_a_character(tokenizer):
    text = "héllo wörld €5 😀 ok"
    ids = tokenizer.encode(text)
    assert any("\ufffd" in tokenizer.decode(ids[:k]) for k in range(1, len(ids)))  # some token ends mid-character
    choice = _Choice(text=text, token_ids=ids, logprobs=[-float(i) for i in range(len(ids))], finish_reason="stop")
    pieces = list(_pieces(tokenizer, choice))
    assert "".join(p[0] for p in pieces) == text and all("\ufffd" not in p[0] for p in pieces)
    assert [t for p in pieces for t in p[1]] == ids and [x for p in pieces for x in p[2]] == choice.logprobs
    assert all(p[0] for p in pieces)  # no token without text left on its own
    ends = [sum(len(p[1]) for p in pieces[:j + 1]) for j in range(len(pieces))]
    assert ["".join(p[0] for p in pieces[:j + 1]) for j in range(len(pieces))] == [
        tokenizer.decode(ids[:k]) for k in ends]  # every piece ends where its tokens' text ends


def test_the_openai_client_reads_streams(server):
    messages = [{"role": "user", "content": "hello"}]
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused") as api:
        plain = api.chat.completions.create(model="m", messages=messages, max_tokens=8, temperature=0)
        stream = api.chat.completions.create(model="m", messages=messages, max_tokens=8, temperature=0, stream=True,
                                             stream_options={"include_usage": True})
        chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == plain.choices[0].message.content
    assert chunks[-1].usage == plain.usage


def test_chat_tools_and_calls_reach_the_template_as_the_rollouts_write_them(tokenizer):
    """`tools` are described as rollouts describe them, and an assistant's `tool_calls` go back as the Hermes text
    a model writes for them. (The route's own answer with tools is run by the feature-deletion vf-eval test.)"""
    from composer_prime.inference.openai_compat import chat_prompt_ids
    from composer_prime.chat import ToolCall, render_tool_calls
    from composer_prime.tool_calls import native_tool_support, with_tools

    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                               "parameters": {"type": "object", "properties": {"path": {}}}}}]
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "x = 1"}]
    written = render_tool_calls([ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}')])
    as_text = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": written}, messages[2]]
    expected, template_tools = with_tools(as_text, tools, native_tool_support(tokenizer))
    ids = tokenizer.apply_chat_template(expected, tools=template_tools, add_generation_prompt=True, tokenize=True,
                                        return_dict=False)
    text = tokenizer.decode(ids)
    assert '"name": "read_file"' in text and '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}' in text
    assert chat_prompt_ids(tokenizer, messages, tools) == list(ids)
    assert chat_prompt_ids(tokenizer, messages[:1], None) == list(
        tokenizer.apply_chat_template(as_text[:1], add_generation_prompt=True, tokenize=True, return_dict=False))
