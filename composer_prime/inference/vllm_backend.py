"""vLLM as the sampling engine (CUDA GPU, the `vllm` extra), behind the same Backend interface.

The V1 `AsyncLLM` engine runs with `logprobs_mode="processed_logprobs"`, so the log-prob it
returns for a sampled token is taken after temperature and top-k/top-p, like the transformers
backend's. Weight reloads run inside vLLM's worker process through `collective_rpc`: a worker
extension (`WeightReloadWorker`, mixed into vLLM's worker class) reads the published
safetensors itself, so no tensor crosses a process boundary, and hands them to the model's own
`load_weights`, which maps Hugging Face names onto vLLM's fused layers. The prefix cache is
then cleared: its KV entries belong to the old weights.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from composer_prime.configs.inference import VLLMBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.inference.backend import Backend, check_prompt
from composer_prime.inference.protocol import Completion, GenerateRequest, GenerateResponse, ScoreRequest, ScoreResponse
from composer_prime.model.load import load_tokenizer
from composer_prime.weights import load_version_state_dict, require_stable

_RELOAD_METHOD = "composer_prime_load_weights"


class WeightReloadWorker:
    """vLLM worker extension (`worker_extension_cls`): its methods run in each GPU worker."""

    def composer_prime_load_weights(self, path: str) -> None:
        model = self.model_runner.get_model()
        model = model.unwrap() if hasattr(model, "unwrap") else model  # CUDA-graph wrappers
        model.load_weights(weights=load_version_state_dict(path).items())


class _VersionGate:
    """Generations share the engine; a reload waits for those in flight and holds new ones back,
    so each response comes from one weight version."""

    def __init__(self) -> None:
        self._condition = asyncio.Condition()
        self._active = 0
        self._reloading = False

    @asynccontextmanager
    async def generation(self) -> AsyncIterator[None]:
        async with self._condition:
            await self._condition.wait_for(lambda: not self._reloading)
            self._active += 1
        try:
            yield
        finally:
            async with self._condition:
                self._active -= 1
                self._condition.notify_all()

    @asynccontextmanager
    async def reload(self) -> AsyncIterator[None]:
        async with self._condition:
            await self._condition.wait_for(lambda: not self._reloading)
            self._reloading = True
            await self._condition.wait_for(lambda: self._active == 0)
        try:
            yield
        finally:
            async with self._condition:
                self._reloading = False
                self._condition.notify_all()


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, model: ModelConfig, config: VLLMBackendConfig | None = None, seed: int = 0):
        try:
            import torch
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError:
            raise UserError("vllm backend needs the 'vllm' extra and a CUDA GPU") from None
        if not torch.cuda.is_available():
            raise UserError("vllm backend needs the 'vllm' extra and a CUDA GPU")
        config = config or VLLMBackendConfig()
        self.tokenizer = load_tokenizer(model)
        self.model_name = model.path
        self.weight_version = 0
        self._gate = _VersionGate()
        self._engine = AsyncLLM.from_engine_args(AsyncEngineArgs(
            model=model.path, dtype=model.dtype or "auto", seed=seed, trust_remote_code=model.trust_remote_code,
            gpu_memory_utilization=config.gpu_memory_utilization, max_model_len=config.max_model_len,
            enforce_eager=config.enforce_eager, logprobs_mode="processed_logprobs",
            worker_extension_cls=f"{__name__}.{WeightReloadWorker.__name__}",
        ))
        self._max_len = self._engine.model_config.max_model_len
        self._vocab_size = self._engine.model_config.get_vocab_size()

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        check_prompt(request.prompt_token_ids, self._vocab_size, self._max_len)
        if request.gumbel_key is not None:
            # vLLM draws from its own per-request generator on the device (an exponential race no verifier can
            # re-derive on another machine); its answers are checked by their log-probs only (infra/README.md).
            raise ValueError("keyed Gumbel-max sampling (gumbel_key) is not available on the vllm backend")
        params = SamplingParams(
            n=request.n,
            max_tokens=min(request.max_tokens, self._max_len - len(request.prompt_token_ids)),
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=request.top_k if request.top_k > 0 else -1,
            stop_token_ids=request.stop_token_ids,
            seed=request.seed,
            logprobs=0,  # the sampled token's own log-prob only
            detokenize=False,
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        async with self._gate.generation():
            version = self.weight_version
            final = None
            prompt = TokensPrompt(prompt_token_ids=request.prompt_token_ids)
            async for output in self._engine.generate(prompt, params, request_id=uuid.uuid4().hex):
                final = output
        completions = [
            Completion(
                token_ids=list(out.token_ids),
                logprobs=[step[token].logprob for step, token in zip(out.logprobs, out.token_ids)],
                finish_reason="length" if out.finish_reason == "length" else "stop",
            )
            for out in sorted(final.outputs, key=lambda out: out.index)
        ]
        return GenerateResponse(completions=completions, weight_version=version)

    async def score(self, request: ScoreRequest) -> ScoreResponse:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        token_ids = request.prompt_token_ids + request.completion_token_ids
        check_prompt(token_ids, self._vocab_size, self._max_len)
        # vLLM's prompt_logprobs returns the k most likely tokens plus the scored one; it does not
        # expose the whole distribution, so entropies stay unknown on this engine.
        params = SamplingParams(
            max_tokens=1, temperature=request.temperature, prompt_logprobs=request.top_k,
            detokenize=False, output_kind=RequestOutputKind.FINAL_ONLY,
        )
        async with self._gate.generation():
            version = self.weight_version
            final = None
            async for output in self._engine.generate(
                TokensPrompt(prompt_token_ids=token_ids), params, request_id=uuid.uuid4().hex
            ):
                final = output
        start = len(request.prompt_token_ids)
        logprobs, top_ids, top_logprobs = [], [], []
        for token, step in zip(request.completion_token_ids, final.prompt_logprobs[start:]):
            logprobs.append(step[token].logprob)
            ranked = sorted(((lp.rank, t, lp.logprob) for t, lp in step.items() if lp.rank <= request.top_k))
            top_ids.append([t for _, t, _ in ranked][: request.top_k])
            top_logprobs.append([lp for _, _, lp in ranked][: request.top_k])
        return ScoreResponse(
            logprobs=logprobs, entropies=None, top_ids=top_ids, top_logprobs=top_logprobs, weight_version=version
        )

    async def load_weights(self, path: str, version: int) -> None:
        directory = require_stable(path)
        async with self._gate.reload():
            await self._engine.collective_rpc(_RELOAD_METHOD, args=(str(directory),))
            await self._engine.reset_prefix_cache()
            self.weight_version = version

    async def close(self) -> None:
        await asyncio.to_thread(self._engine.shutdown)
