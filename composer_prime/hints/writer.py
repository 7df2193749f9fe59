"""Hint writers: an error site -> a short hint that says what to do better (templates, or an LLM)."""

from __future__ import annotations

import logging
import os

import httpx

from composer_prime.chat import ChatMessage
from composer_prime.configs.hints import DEFAULT_TEMPLATES, GENERIC_TEMPLATE, LLMWriterConfig, TemplateWriterConfig
from composer_prime.traces import ErrorRecord

logger = logging.getLogger(__name__)

_LLM_INSTRUCTIONS = (
    "You coach an AI agent. Below is the conversation up to one of its turns and the error that turn "
    "caused. Write ONE short hint (at most two sentences) that would have led the agent to a correct turn. "
    "Do not write the turn itself. Reply with the hint only."
)


class TemplateHintWriter:
    def __init__(self, config: TemplateWriterConfig = TemplateWriterConfig()):
        self.templates = DEFAULT_TEMPLATES | config.templates

    def template(self, error: ErrorRecord) -> str:
        return self.templates.get(error.kind, GENERIC_TEMPLATE).format(message=error.message)

    async def write(self, messages: list[ChatMessage], error: ErrorRecord) -> str:
        return self.template(error)

    async def aclose(self) -> None:
        pass


class LLMHintWriter(TemplateHintWriter):
    """Asks a chat model for the hint; falls back to the template (with a warning) when the call fails."""

    def __init__(self, config: LLMWriterConfig):
        super().__init__()
        self.config = config
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_s)

    async def write(self, messages: list[ChatMessage], error: ErrorRecord) -> str:
        transcript = "\n".join(f"[{m.role}] {m.content or ''}" for m in messages[: error.turn + 1])
        prompt = [{"role": "system", "content": _LLM_INSTRUCTIONS},
                  {"role": "user", "content": f"{transcript}\n\nError ({error.kind}): {error.message}"}]
        body = {"model": self.config.model, "messages": prompt, "max_tokens": self.config.max_tokens,
                "temperature": self.config.temperature}
        try:
            response = await self._http.post("/chat/completions", json=body)
            response.raise_for_status()
            hint = (response.json()["choices"][0]["message"]["content"] or "").strip()
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            logger.warning("hint writer %s failed (%s); using the template", self.config.base_url, exc)
            return self.template(error)
        return hint or self.template(error)

    async def aclose(self) -> None:
        await self._http.aclose()


def make_hint_writer(config: TemplateWriterConfig | LLMWriterConfig) -> TemplateHintWriter:
    return LLMHintWriter(config) if isinstance(config, LLMWriterConfig) else TemplateHintWriter(config)
