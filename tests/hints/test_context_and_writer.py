import asyncio

import pytest

from composer_prime.chat import ChatMessage
from composer_prime.configs.hints import LLMWriterConfig, TemplateWriterConfig
from composer_prime.configs.inference import InferenceConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.hints.context import HINT_PREFIX, teacher_messages
from composer_prime.hints.writer import make_hint_writer
from composer_prime.inference.client import InferenceClient
from composer_prime.traces import ErrorRecord
from composer_prime.utils.net import free_port

MESSAGES = [
    ChatMessage(role="system", content="Reverse the letters."),
    ChatMessage(role="user", content="a b c"),
    ChatMessage(role="assistant", content="c a b"),
]
ERROR = ErrorRecord(kind="wrong_answer", turn=2, message="expected 'c b a', got 'c a b'")


def test_teacher_context_inserts_the_hint_before_the_error_turn():
    context = teacher_messages(MESSAGES, ERROR, "reverse all of it")
    assert context[:2] == MESSAGES[:2]
    assert context[2] == ChatMessage(role="user", content=HINT_PREFIX + "reverse all of it")
    assert len(context) == 3
    with pytest.raises(ValueError, match="not an assistant message"):
        teacher_messages(MESSAGES, ErrorRecord(kind="x", turn=1, message=""), "h")


def test_templates_by_kind_with_overrides_and_a_generic_fallback():
    writer = make_hint_writer(TemplateWriterConfig(templates={"test_failure": "Tests say: {message}"}))
    write = lambda kind: asyncio.run(writer.write(MESSAGES, ErrorRecord(kind=kind, turn=2, message="M")))  # noqa: E731
    assert write("wrong_answer") == "Your answer is wrong: M."
    assert write("test_failure") == "Tests say: M"
    assert write("sandbox_timeout") == "Your next step goes wrong: M."


@pytest.mark.slow
def test_llm_writer_asks_a_real_openai_compatible_server(tmp_path):
    """The quickstart's warm-start model behind our own server's /v1/chat/completions writes the hint."""
    port = free_port()
    config = InferenceConfig(model=ModelConfig(path="configs/quickstart/warmstart"), port=port,
                             log=LogConfig(progress=False))

    async def go(child):
        async with InferenceClient(f"http://127.0.0.1:{port}") as client:
            await wait_ready(client, child, timeout_s=120)
        writer = make_hint_writer(LLMWriterConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_tokens=8))
        try:
            return await writer.write(MESSAGES, ERROR)
        finally:
            await writer.aclose()

    with inference_server(config, tmp_path) as child:
        hint = asyncio.run(go(child))
    fallback = make_hint_writer(TemplateWriterConfig()).template(ERROR)
    assert hint and hint != fallback

    async def unreachable():
        writer = make_hint_writer(LLMWriterConfig(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m"))
        try:
            return await writer.write(MESSAGES, ERROR)
        finally:
            await writer.aclose()

    assert asyncio.run(unreachable()) == fallback  # a dead endpoint degrades to the template
