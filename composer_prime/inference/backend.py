"""The sampling engine behind the inference server, and the choice between engines.

A backend turns token ids into sampled completions with their log-probs and swaps in
published weight versions. It guarantees that all completions of one response come from one
weight version: a reload waits for the generation in flight and holds back new ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from composer_prime.configs.inference import InferenceConfig
from composer_prime.inference.protocol import GenerateRequest, GenerateResponse, ScoreRequest, ScoreResponse

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class Backend(ABC):
    """One loaded policy that serves concurrent `generate` calls."""

    name: ClassVar[str]
    model_name: str
    tokenizer: PreTrainedTokenizerBase
    weight_version: int
    """Version of the weights now loaded: 0 for the starting model, N after loading step_N."""

    @abstractmethod
    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        """`request.n` completions of one prompt, all from the weight version the response names.

        Raises ValueError for a request this model cannot serve (token id out of range,
        prompt longer than the context)."""

    @abstractmethod
    async def score(self, request: ScoreRequest) -> ScoreResponse:
        """The model's distribution at each completion token, teacher-forced, on the current weights.

        Raises ValueError for token ids out of range or a sequence longer than the context."""

    @abstractmethod
    async def load_weights(self, path: str, version: int) -> None:
        """Load the published version directory `path` and call it `version`.

        Raises FileNotFoundError for a directory without its STABLE marker and ValueError
        for weights that do not fit the model; the old weights stay in place then."""

    @abstractmethod
    async def close(self) -> None:
        """Fail what is still in flight and release the model."""


class GenerationAborted(RuntimeError):
    """The engine gave up on a request (vLLM's `abort`): what it returned is no sample to train on."""


def check_prompt(token_ids: list[int], vocab_size: int, max_len: int | None) -> None:
    """Reject what would otherwise crash the shared batch: unknown token ids, over-long sequences."""
    bad = [t for t in token_ids if not 0 <= t < vocab_size]
    if bad:
        raise ValueError(f"token id {bad[0]} is outside the vocabulary [0, {vocab_size})")
    if max_len is not None and len(token_ids) >= max_len:
        raise ValueError(f"{len(token_ids)} tokens do not fit the model's context of {max_len}")


def eos_token_ids(generation_config, tokenizer: PreTrainedTokenizerBase) -> set[int]:
    """The tokenizer's EOS plus every EOS id the model's generation config (may be None) names: where sampling stops."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    generation_eos = getattr(generation_config, "eos_token_id", None)
    if generation_eos is not None:
        ids |= {generation_eos} if isinstance(generation_eos, int) else set(generation_eos)
    return ids


def make_backend(config: InferenceConfig) -> Backend:
    """The engine `config.backend.type` names, loaded and ready."""
    if config.backend.type == "vllm":
        from composer_prime.inference.vllm_backend import VLLMBackend

        return VLLMBackend(config.model, config.backend, seed=config.seed)
    if config.backend.type == "scripted":
        from composer_prime.inference.scripted import ScriptedBackend

        return ScriptedBackend(config.model, config.backend)
    from composer_prime.inference.transformers_backend import TransformersBackend

    return TransformersBackend(config.model, config.backend, seed=config.seed)
