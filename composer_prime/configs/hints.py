"""`[orchestrator.hints]`: where error sites come from, who writes the hints, where the teacher runs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from pydantic_config import BaseConfig

DEFAULT_TEMPLATES = {
    "tool_error": "The tool call in your next step fails with: {message}. Choose a call that works.",
    "malformed_tool_call": "Your next tool call is malformed ({message}). Write a well-formed call.",
    "test_failure": "Your change fails the tests:\n{message}\nFix what they check.",
    "format_violation": "Your answer must be complete and follow the required format ({message}).",
    "wrong_answer": "Your answer is wrong: {message}.",
}
GENERIC_TEMPLATE = "Your next step goes wrong: {message}."


class TemplateWriterConfig(BaseConfig):
    """Hints from fixed templates keyed by error kind; `{message}` is the error's text."""

    type: Literal["template"] = "template"
    templates: Annotated[
        dict[str, str], Field(description="Template per error kind; merged over the built-in ones.")
    ] = {}


class LLMWriterConfig(BaseConfig):
    """Hints written by a model behind any OpenAI-compatible chat endpoint."""

    type: Literal["llm"] = "llm"
    base_url: Annotated[str, Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.")]
    model: Annotated[str, Field(description="Model name sent with each request.")]
    api_key_env: Annotated[str | None, Field(description="Environment variable holding the API key.")] = None
    max_tokens: Annotated[int, Field(ge=1, description="Longest hint, in tokens.")] = 64
    temperature: Annotated[float, Field(ge=0, description="Sampling temperature of the writer.")] = 0.0
    timeout_s: Annotated[float, Field(gt=0, description="Per-request timeout; on failure the template is used.")] = 30.0


class HintsConfig(BaseConfig):
    """Channel 2 inputs: error sites of the step's rollouts, each with a hint and the hinted teacher context."""

    enabled: Annotated[bool, Field(description="Find error sites and send hint sites to the trainer.")] = False
    writer: Annotated[TemplateWriterConfig | LLMWriterConfig, Field(discriminator="type")] = TemplateWriterConfig()
    wrong_answer_below: Annotated[
        float | None, Field(description="A rollout whose reward is below this is a `wrong_answer` site (None: off).")
    ] = 1.0
    max_sites_per_step: Annotated[int, Field(ge=1, description="At most this many sites per step (spread over groups).")] = 64
    teacher: Annotated[
        Literal["trainer", "inference"],
        Field(description="trainer: the trainer runs the hinted forward on its current weights (full logits or "
                          "top-k, trainer.loss.hint.side_channel); inference: the inference server scores the "
                          "hinted context and sends its top-k + tail (weights lag by the async level)."),
    ] = "trainer"
    top_k: Annotated[int, Field(ge=1, le=1024, description="Teacher ids per token when teacher = inference.")] = 64
