"""Batched sampling with plain transformers: the default engine on CPU.

One scheduler thread owns the model. Requests (n samples each) queue up; the scheduler
admits their sequences into a running batch of at most `max_batch_size`, prefills the new
prompts together (left-padded, one forward per distinct prompt, the KV cache then copied
per sample) and decodes the whole batch one token per forward with the KV cache. Finished
sequences leave the batch at once, and new ones join the running batch between two decode
steps (continuous batching) when the model's cache is a plain `DynamicCache`; models with
sliding-window cache layers wait for the batch to drain instead.

A weight reload is queued like a request and acts as a barrier: sequences admitted before
it finish on the old weights, nothing is admitted past it, and the swap happens between two
forwards with an empty batch. So every response comes from one weight version.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.backend import Backend, GenerationAborted, check_prompt, eos_token_ids
from composer_prime.inference.protocol import Completion, GenerateRequest, GenerateResponse, ScoreRequest, ScoreResponse
from composer_prime.inference.sampling import gumbel_noise, log_softmax, sample
from composer_prime.model.load import load_model, load_tokenizer
from composer_prime.weights import WeightLayout, load_version_state_dict


@dataclass(eq=False)
class _Job:
    """Something the scheduler resolves on the caller's event loop."""

    future: asyncio.Future
    loop: asyncio.AbstractEventLoop

    def settle(self, result: object = None, error: BaseException | None = None) -> None:
        def _set() -> None:
            if self.future.done():  # the caller went away
                return
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)

        try:
            self.loop.call_soon_threadsafe(_set)
        except RuntimeError:  # that loop is closed: nobody waits any more
            pass


@dataclass(eq=False)
class _Generate(_Job):
    request: GenerateRequest
    stop_ids: list[int]
    max_new: int
    completions: list[Completion | None] = field(default_factory=list)
    admitted: int = 0
    version: int = 0

    def finish(self, index: int, completion: Completion) -> None:
        self.completions[index] = completion
        if all(c is not None for c in self.completions):
            self.settle(GenerateResponse(completions=self.completions, weight_version=self.version))


@dataclass(eq=False)
class _Reload(_Job):
    path: str
    state_dict: dict[str, torch.Tensor]
    version: int


@dataclass(eq=False)
class _Score(_Job):
    request: ScoreRequest


@dataclass
class _Batch:
    """Sequences decoded together: row i of every tensor belongs to `rows[i]` (request, sample index)."""

    rows: list[tuple[_Generate, int]]
    cache: DynamicCache
    attention_mask: torch.Tensor  # [B, T] over the cached context, 0 on left padding
    position: torch.Tensor  # [B] position id of `last`
    last: torch.Tensor  # [B] newest sampled token, the next step's input
    temperature: torch.Tensor  # [B]
    top_k: torch.Tensor  # [B]
    top_p: torch.Tensor  # [B]
    max_new: torch.Tensor  # [B]
    count: torch.Tensor  # [B] tokens sampled so far
    stop_ids: torch.Tensor  # [B, S], -1 padded
    uniforms: torch.Tensor  # [B, W] float64: the draw for each future token
    tokens: torch.Tensor  # [B, W]
    logprobs: torch.Tensor  # [B, W]

    _ROW: ClassVar = ("position", "last", "temperature", "top_k", "top_p", "max_new", "count")
    _RIGHT_PADDED: ClassVar = {"stop_ids": -1, "uniforms": 0, "tokens": 0, "logprobs": 0}  # name: fill

    def select(self, keep: torch.Tensor, trim: bool) -> _Batch:
        """Keep rows `keep`; with `trim`, drop the left-padding columns no remaining row needs."""
        self.cache.batch_select_indices(keep)
        mask = self.attention_mask[keep]
        first = int(mask.any(dim=0).to(torch.int8).argmax()) if trim else 0
        if first > 0:
            mask = mask[:, first:]
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, first:], layer.values[:, :, first:]
        tensors = {name: getattr(self, name)[keep] for name in (*self._ROW, *self._RIGHT_PADDED)}
        return _Batch(rows=[self.rows[i] for i in keep.tolist()], cache=self.cache, attention_mask=mask, **tensors)

    def merge(self, other: _Batch) -> _Batch:
        """One batch holding both: the shorter context is left-padded (cache and mask alike).

        Positions are per row and rotary embeddings are already applied to cached keys, so
        masked padding in front of a row changes nothing it computes."""
        length = max(self.attention_mask.shape[1], other.attention_mask.shape[1])
        for mine, theirs in zip(self.cache.layers, other.cache.layers):
            mine.keys = torch.cat([_pad_left(mine.keys, length, 2), _pad_left(theirs.keys, length, 2)])
            mine.values = torch.cat([_pad_left(mine.values, length, 2), _pad_left(theirs.values, length, 2)])
        mask = torch.cat([_pad_left(self.attention_mask, length, 1), _pad_left(other.attention_mask, length, 1)])
        tensors = {name: torch.cat([getattr(self, name), getattr(other, name)]) for name in self._ROW}
        for name, fill in self._RIGHT_PADDED.items():
            a, b = getattr(self, name), getattr(other, name)
            width = max(a.shape[1], b.shape[1])
            tensors[name] = torch.cat([_pad_right(a, width, fill), _pad_right(b, width, fill)])
        return _Batch(rows=self.rows + other.rows, cache=self.cache, attention_mask=mask, **tensors)


def _keyed_noise(batch: _Batch, vocab: int) -> torch.Tensor | None:
    """Gumbel noise for the rows of requests with a `gumbel_key` (NaN rows for the others), None when there are none:
    completion `index` of a request is sample `gumbel_first_sample + index`, at position = tokens drawn so far."""
    keyed = [(i, job.request, index) for i, (job, index) in enumerate(batch.rows) if job.request.gumbel_key is not None]
    if not keyed:
        return None
    noise = torch.full((len(batch.rows), vocab), torch.nan, dtype=torch.float64)
    counts = batch.count.tolist()
    for i, request, index in keyed:
        noise[i] = gumbel_noise(request.gumbel_key, request.gumbel_first_sample + index, counts[i], vocab)
    return noise


def _pad_left(x: torch.Tensor, length: int, dim: int) -> torch.Tensor:
    pad = [0, 0] * (x.dim() - 1 - dim) + [length - x.shape[dim], 0]
    return F.pad(x, pad)


def _pad_right(x: torch.Tensor, width: int, fill: float) -> torch.Tensor:
    return F.pad(x, (0, width - x.shape[1]), value=fill)


class TransformersBackend(Backend):
    name = "transformers"

    def __init__(self, model: ModelConfig, config: TransformersBackendConfig | None = None, seed: int = 0):
        self.config = config or TransformersBackendConfig()
        if self.config.num_threads is not None:
            torch.set_num_threads(self.config.num_threads)
        self.tokenizer = load_tokenizer(model)
        self.model = load_model(model).eval()
        self.model_name = model.path
        self.weight_version = 0
        self._seed = seed
        self._sequences = 0  # unseeded sequences drawn so far: their generator's counter
        self._device = next(self.model.parameters()).device
        self._eos = eos_token_ids(getattr(self.model, "generation_config", None), self.tokenizer)
        self._pad_id = self.tokenizer.pad_token_id
        self._vocab_size = self.model.get_input_embeddings().num_embeddings
        self._max_len = getattr(self.model.config, "max_position_embeddings", None)
        self._layout = WeightLayout.from_module(self.model)  # tied weights: loading any one name fills them all
        self._served = lambda: load_model(model).state_dict()  # the weights served now, read again (a failed reload)
        self._broken: str | None = None
        self._prefill_kwargs = (
            {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(self.model.forward).parameters else {}
        )
        self._continuous = all(type(layer) is DynamicLayer for layer in self._new_cache().layers)
        self._inbox: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="inference-scheduler", daemon=True)
        self._thread.start()

    # ---- called from the event loop ----

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        check_prompt(request.prompt_token_ids, self._vocab_size, self._max_len)
        max_new = request.max_tokens
        if self._max_len is not None:
            max_new = min(max_new, self._max_len - len(request.prompt_token_ids))
        loop = asyncio.get_running_loop()
        job = _Generate(
            future=loop.create_future(), loop=loop, request=request,
            stop_ids=sorted(self._eos | set(request.stop_token_ids)), max_new=max_new,
            completions=[None] * request.n,
        )
        return await self._submit(job)

    async def score(self, request: ScoreRequest) -> ScoreResponse:
        check_prompt(request.prompt_token_ids + request.completion_token_ids, self._vocab_size, self._max_len)
        loop = asyncio.get_running_loop()
        return await self._submit(_Score(future=loop.create_future(), loop=loop, request=request))

    async def load_weights(self, path: str, version: int) -> None:
        state_dict = await asyncio.to_thread(load_version_state_dict, path)
        self._layout.check({name: tuple(t.shape) for name, t in state_dict.items()}, path)
        loop = asyncio.get_running_loop()
        await self._submit(_Reload(future=loop.create_future(), loop=loop, path=path, state_dict=state_dict,
                                   version=version))

    async def close(self) -> None:
        self._closed = True
        self._inbox.put(None)
        await asyncio.to_thread(self._thread.join)

    async def _submit(self, job: _Job):
        if self._closed:
            raise RuntimeError("inference backend is closed")
        if self._broken is not None:
            raise GenerationAborted(self._broken)
        self._inbox.put(job)
        return await job.future

    # ---- the scheduler thread ----

    def _run(self) -> None:
        pending: deque[_Job] = deque()
        batch: _Batch | None = None
        with torch.inference_mode():
            while not self._closed:
                self._receive(pending, block=batch is None and not pending)
                head = pending[0] if pending else None
                if isinstance(head, _Score):  # needs no cache: it runs between two decode steps
                    self._score(pending.popleft())
                    continue
                if isinstance(head, _Reload):
                    if batch is None:
                        self._reload(pending.popleft())
                        continue
                elif head is not None and (batch is None or self._continuous):
                    if batch is None:
                        self._gather(pending)
                    rows = self._admit(pending, self.config.max_batch_size - (len(batch.rows) if batch else 0))
                    if rows:
                        try:
                            new = self._prefill(rows)
                        except Exception as exc:  # noqa: BLE001 - fail these requests, keep serving
                            self._fail({job for job, _ in rows}, exc)
                        else:
                            batch = self._retire(new if batch is None else batch.merge(new))
                if batch is not None:
                    try:
                        self._step(batch)
                    except Exception as exc:  # noqa: BLE001
                        self._fail({job for job, _ in batch.rows}, exc)
                        batch = None
                    else:
                        batch = self._retire(batch)
        closed = RuntimeError("inference backend is shutting down")
        self._fail(set(pending) | ({job for job, _ in batch.rows} if batch else set()), closed)

    def _receive(self, pending: deque[_Job], block: bool) -> None:
        try:
            job = self._inbox.get(block=block)
            while True:
                if job is not None:
                    pending.append(job)
                job = self._inbox.get_nowait()
        except queue.Empty:
            pass

    def _gather(self, pending: deque[_Job]) -> None:
        """Before starting an empty batch, wait `batch_wait_ms` for more requests to share it."""
        deadline = time.monotonic() + self.config.batch_wait_ms / 1000
        while (left := deadline - time.monotonic()) > 0 and self._waiting(pending) < self.config.max_batch_size:
            try:
                job = self._inbox.get(timeout=left)
            except queue.Empty:
                return
            if job is None:
                return
            pending.append(job)

    @staticmethod
    def _waiting(pending: deque[_Job]) -> int:
        total = 0
        for job in pending:
            if not isinstance(job, _Generate):
                break
            total += job.request.n - job.admitted
        return total

    def _admit(self, pending: deque[_Job], room: int) -> list[tuple[_Generate, int]]:
        """Take up to `room` sequences from the head of the queue, stopping at a reload barrier."""
        rows: list[tuple[_Generate, int]] = []
        while pending and isinstance(pending[0], _Generate) and len(rows) < room:
            job = pending[0]
            if job.future.done():  # cancelled by its caller
                pending.popleft()
                continue
            if job.admitted == 0:
                job.version = self.weight_version
            take = min(job.request.n - job.admitted, room - len(rows))
            rows.extend((job, job.admitted + i) for i in range(take))
            job.admitted += take
            if job.admitted == job.request.n:
                pending.popleft()
        return rows

    def _new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.model.config)

    def _uniforms(self, job: _Generate, index: int) -> np.ndarray:
        # A seeded request owns generator (seed, sample index); others take the server's next one.
        if job.request.seed is not None:
            entropy = [0, job.request.seed % 2**64, index]
        else:
            entropy = [1, self._seed % 2**64, self._sequences]
            self._sequences += 1
        return np.random.default_rng(entropy).random(job.max_new)

    def _prefill(self, rows: list[tuple[_Generate, int]]) -> _Batch:
        jobs = list(dict.fromkeys(job for job, _ in rows))
        prompts = [job.request.prompt_token_ids for job in jobs]
        length = max(len(p) for p in prompts)
        input_ids = torch.full((len(jobs), length), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(jobs), length), dtype=torch.long)
        for j, prompt in enumerate(prompts):
            input_ids[j, length - len(prompt):] = torch.tensor(prompt)
            mask[j, length - len(prompt):] = 1
        input_ids, mask = input_ids.to(self._device), mask.to(self._device)
        cache = self._new_cache()
        logits = self.model(
            input_ids=input_ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
            past_key_values=cache, use_cache=True, **self._prefill_kwargs,
        ).logits[:, -1]
        # One prefill per distinct prompt; its cache is then copied for each of its samples.
        slot = {id(job): j for j, job in enumerate(jobs)}
        expand = torch.tensor([slot[id(job)] for job, _ in rows], device=self._device)
        cache.batch_select_indices(expand)
        width = max(job.max_new for job, _ in rows)
        uniforms = torch.zeros((len(rows), width), dtype=torch.float64)
        for i, (job, index) in enumerate(rows):
            uniforms[i, : job.max_new] = torch.from_numpy(self._uniforms(job, index))
        stop_width = max(len(job.stop_ids) for job, _ in rows)
        stop_ids = torch.tensor([job.stop_ids + [-1] * (stop_width - len(job.stop_ids)) for job, _ in rows])

        def column(values: list, dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=self._device)

        requests = [job.request for job, _ in rows]
        mask = mask[expand]
        batch = _Batch(
            rows=rows, cache=cache, attention_mask=mask,
            position=mask.sum(-1), last=torch.zeros(len(rows), dtype=torch.long, device=self._device),
            temperature=column([r.temperature for r in requests], torch.float32),
            top_k=column([r.top_k for r in requests], torch.long),
            top_p=column([r.top_p for r in requests], torch.float32),
            max_new=column([job.max_new for job, _ in rows], torch.long),
            count=torch.zeros(len(rows), dtype=torch.long, device=self._device),
            stop_ids=stop_ids.to(self._device), uniforms=uniforms.to(self._device),
            tokens=torch.zeros((len(rows), width), dtype=torch.long, device=self._device),
            logprobs=torch.zeros((len(rows), width), dtype=torch.float32, device=self._device),
        )
        self._sample_into(batch, logits[expand])
        return batch

    def _step(self, batch: _Batch) -> None:
        mask = F.pad(batch.attention_mask, (0, 1), value=1)
        # A ready [B, 1, 1, T] mask skips transformers' mask construction (a fifth of a small model's
        # decode step on CPU). Only right when every layer sees the whole context: no sliding window.
        attention = mask.bool()[:, None, None, :] if self._continuous else mask
        logits = self.model(
            input_ids=batch.last[:, None], attention_mask=attention, position_ids=batch.position[:, None],
            past_key_values=batch.cache, use_cache=True,
        ).logits[:, -1]
        batch.attention_mask = mask
        batch.position += 1
        self._sample_into(batch, logits)

    @staticmethod
    def _sample_into(batch: _Batch, logits: torch.Tensor) -> None:
        at = batch.count[:, None]
        tokens, logprobs = sample(
            logits, batch.temperature, batch.top_k, batch.top_p, batch.uniforms.gather(1, at).squeeze(1),
            noise=_keyed_noise(batch, logits.shape[-1]),
        )
        batch.tokens.scatter_(1, at, tokens[:, None])
        batch.logprobs.scatter_(1, at, logprobs[:, None])
        batch.count += 1
        batch.last = tokens

    def _retire(self, batch: _Batch) -> _Batch | None:
        """Hand finished sequences to their requests; drop them (and abandoned ones) from the batch."""
        stopped = (batch.last[:, None] == batch.stop_ids).any(dim=-1)
        done = stopped | (batch.count >= batch.max_new)
        abandoned = torch.tensor([job.future.done() for job, _ in batch.rows], device=done.device)
        if not bool((done | abandoned).any()):
            return batch
        for i in (done & ~abandoned).nonzero().squeeze(1).tolist():
            job, index = batch.rows[i]
            n = int(batch.count[i])
            job.finish(index, Completion(
                token_ids=batch.tokens[i, :n].tolist(), logprobs=batch.logprobs[i, :n].tolist(),
                finish_reason="stop" if bool(stopped[i]) else "length",
            ))
        keep = (~(done | abandoned)).nonzero().squeeze(1)
        return batch.select(keep, trim=self._continuous) if keep.numel() else None

    def _score(self, job: _Score) -> None:
        request = job.request
        try:
            ids = torch.tensor([request.prompt_token_ids + request.completion_token_ids[:-1]], device=self._device)
            logits = self.model(input_ids=ids, use_cache=False).logits[0, len(request.prompt_token_ids) - 1 :]
            logprobs = log_softmax(logits.float() / request.temperature)
            targets = torch.tensor(request.completion_token_ids, device=self._device)
            chosen = logprobs.gather(-1, targets[:, None]).squeeze(-1)
            entropies = -(logprobs.exp() * logprobs).sum(-1)
            top = logprobs.topk(request.top_k, dim=-1) if request.top_k else None
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            job.settle(error=exc)
            return
        job.settle(ScoreResponse(
            logprobs=chosen.tolist(), entropies=entropies.tolist(), weight_version=self.weight_version,
            top_ids=top.indices.tolist() if top else [[] for _ in request.completion_token_ids],
            top_logprobs=top.values.tolist() if top else [[] for _ in request.completion_token_ids],
        ))

    def _reload(self, job: _Reload) -> None:
        try:
            self.model.load_state_dict(job.state_dict, strict=False)
        except Exception as exc:  # noqa: BLE001 - some tensors may be new already: the served version goes back whole
            job.settle(error=self._restore(job.path, " ".join(str(exc).split())))
            return
        self._served = functools.partial(load_version_state_dict, job.path)
        self.weight_version = job.version
        job.settle()

    def _restore(self, path: str, error: str) -> Exception:
        """Load the version served before `path` failed part-way back; the error the caller gets."""
        try:
            self.model.load_state_dict(self._served(), strict=False)
        except Exception as again:  # noqa: BLE001
            self._broken = (f"weights are partly from {path} ({error}) and could not be restored ({again}): "
                            "restart the inference server")
            return RuntimeError(self._broken)
        return ValueError(f"{path} failed to load part-way ({error}); version {self.weight_version} was loaded back "
                          "and is served")

    @staticmethod
    def _fail(jobs: set[_Job], error: BaseException) -> None:
        for job in jobs:
            job.settle(error=error)
