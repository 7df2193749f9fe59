"""Trusted log-probs of submitted tokens: the verifier's ground truth.

`ModelScorer` runs a teacher-forced forward of prompt + completion with the weights of the
version the worker claims to have sampled from (trusted copies: the trainer's own broadcasts),
in float32. Each completion token is scored under the processed distribution it was sampled from,
`log_softmax(top_p(logits / T))` (inference/sampling.py), and, given the batch's noise key, its
sampling gap (verify/sampled.py).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from composer_prime.inference.sampling import filter_logits, log_softmax
from composer_prime.verify.sampled import sampling_gaps


@dataclass(frozen=True)
class ScoreItem:
    prompt_ids: list[int]
    completion_ids: list[int]
    noise: tuple[int, int] | None = None
    """(key, sample index) of the Gumbel noise the completion was drawn with; None: log-probs only."""


@dataclass(frozen=True)
class Scored:
    logprobs: list[float]
    gaps: list[float] | None = None
    """Per token, the sampling gap (verify/sampled.py) when the item had a noise key."""


class Scorer:
    def score_many(self, version: int, items: list[ScoreItem], temperature: float, top_p: float = 1.0
                   ) -> list[Scored]:
        raise NotImplementedError

    def logprobs(self, version: int, prompt_ids: list[int], completion_ids: list[int], temperature: float) -> list[float]:
        return self.score_many(version, [ScoreItem(prompt_ids, completion_ids)], temperature)[0].logprobs

    def logprobs_many(self, version: int, items: list[tuple[list[int], list[int]]], temperature: float
                      ) -> list[list[float]]:
        """`logprobs` of several (prompt, completion) pairs."""
        return [self.logprobs(version, prompt, completion, temperature) for prompt, completion in items]

    def hidden_states(self, version: int, token_ids: list[int]) -> torch.Tensor:
        raise NotImplementedError


class ModelScorer(Scorer):
    """`resolve(version)` gives the directory of that version's trusted weights; the newest `keep` stay loaded."""

    def __init__(self, resolve: Callable[[int], Path], keep: int = 2, device: str = "cpu", batch_size: int = 16):
        self.resolve = resolve
        self.keep = keep
        self.device = device
        self.batch_size = batch_size
        self._models: OrderedDict[int, torch.nn.Module] = OrderedDict()

    def model(self, version: int) -> torch.nn.Module:
        if version not in self._models:
            from transformers import AutoModelForCausalLM  # slow import, only for verifiers that score locally

            model = AutoModelForCausalLM.from_pretrained(self.resolve(version), dtype=torch.float32)
            self._models[version] = model.to(self.device).eval()
            while len(self._models) > self.keep:
                self._models.popitem(last=False)
        self._models.move_to_end(version)
        return self._models[version]

    def logprobs_many(self, version: int, items: list[tuple[list[int], list[int]]], temperature: float
                      ) -> list[list[float]]:
        return [s.logprobs for s in self.score_many(version, [ScoreItem(p, c) for p, c in items], temperature)]

    @torch.no_grad()
    def score_many(self, version: int, items: list[ScoreItem], temperature: float, top_p: float = 1.0
                   ) -> list[Scored]:
        """One forward per `batch_size` sequences, right-padded: causal attention keeps padding out of every
        real position, so each row's log-probs are those of its own forward."""
        if not temperature > 0:
            raise ValueError(f"scoring needs a temperature > 0, got {temperature}")
        model, out = self.model(version), []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start:start + self.batch_size]
            width = max(len(i.prompt_ids) + len(i.completion_ids) for i in chunk)
            ids = torch.zeros(len(chunk), width, dtype=torch.long)
            mask = torch.zeros(len(chunk), width, dtype=torch.long)
            for row, item in enumerate(chunk):
                length = len(item.prompt_ids) + len(item.completion_ids)
                ids[row, :length] = torch.tensor(item.prompt_ids + item.completion_ids)
                mask[row, :length] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            logits = model(ids, attention_mask=mask).logits.float() / temperature
            for row, item in enumerate(chunk):
                start_at, n = len(item.prompt_ids) - 1, len(item.completion_ids)
                rows = logits[row, start_at:start_at + n]
                dist = log_softmax(filter_logits(rows, torch.full((n,), -1, device=rows.device),
                                                 torch.full((n,), top_p, device=rows.device)))
                targets = ids[row, start_at + 1:start_at + 1 + n, None]
                gaps = None if item.noise is None else sampling_gaps(dist, item.completion_ids, *item.noise).tolist()
                out.append(Scored(dist.gather(1, targets).squeeze(1).tolist(), gaps))
        return out

    @torch.no_grad()
    def hidden_states(self, version: int, token_ids: list[int]) -> torch.Tensor:
        """The last hidden states (the LM head's input), [len(token_ids), d]: what TOPLOC proofs commit to."""
        ids = torch.tensor([token_ids], device=self.device)
        return self.model(version)(ids, output_hidden_states=True).hidden_states[-1][0]
