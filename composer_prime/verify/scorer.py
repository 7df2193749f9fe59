"""Trusted log-probs of submitted tokens: the verifier's ground truth.

`ModelScorer` runs a teacher-forced forward of prompt + completion with the weights of the
version the worker claims to have sampled from (trusted copies: the trainer's own broadcasts),
in float32.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import torch


class Scorer:
    def logprobs(self, version: int, prompt_ids: list[int], completion_ids: list[int], temperature: float) -> list[float]:
        raise NotImplementedError

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

    def logprobs(self, version: int, prompt_ids: list[int], completion_ids: list[int], temperature: float) -> list[float]:
        return self.logprobs_many(version, [(prompt_ids, completion_ids)], temperature)[0]

    @torch.no_grad()
    def logprobs_many(self, version: int, items: list[tuple[list[int], list[int]]], temperature: float
                      ) -> list[list[float]]:
        """One forward per `batch_size` sequences, right-padded: causal attention keeps padding out of every
        real position, so each row's log-probs are those of its own forward."""
        model, scale = self.model(version), temperature if temperature > 0 else 1.0
        out = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start:start + self.batch_size]
            width = max(len(p) + len(c) for p, c in chunk)
            ids = torch.zeros(len(chunk), width, dtype=torch.long)
            mask = torch.zeros(len(chunk), width, dtype=torch.long)
            for row, (prompt, completion) in enumerate(chunk):
                ids[row, :len(prompt) + len(completion)] = torch.tensor(prompt + completion)
                mask[row, :len(prompt) + len(completion)] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            logits = model(ids, attention_mask=mask).logits.float() / scale
            for row, (prompt, completion) in enumerate(chunk):
                rows = logits[row, len(prompt) - 1:len(prompt) + len(completion) - 1]
                targets = ids[row, len(prompt):len(prompt) + len(completion), None]
                out.append(rows.log_softmax(-1).gather(1, targets).squeeze(1).tolist())
        return out

    @torch.no_grad()
    def hidden_states(self, version: int, token_ids: list[int]) -> torch.Tensor:
        """The last hidden states (the LM head's input), [len(token_ids), d]: what TOPLOC proofs commit to."""
        ids = torch.tensor([token_ids], device=self.device)
        return self.model(version)(ids, output_hidden_states=True).hidden_states[-1][0]
