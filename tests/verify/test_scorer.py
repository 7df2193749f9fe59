"""The verifier's trusted log-probs, batched with right padding, against one float64 forward per sequence."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import torch

from composer_prime.verify.scorer import ModelScorer

MODEL = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"


def test_batched_logprobs_equal_each_sequence_scored_alone_in_float64():
    scorer = ModelScorer(lambda version: MODEL, batch_size=3)  # 7 items: chunks of 3, 3 and 1
    model = scorer.model(0)
    rng = random.Random(0)
    vocab = model.config.vocab_size
    items = [([rng.randrange(vocab) for _ in range(rng.randint(1, 12))], [rng.randrange(vocab) for _ in range(rng.randint(1, 9))])
             for _ in range(7)]
    temperature = 0.7
    batched = scorer.logprobs_many(0, items, temperature)
    reference = copy.deepcopy(model).double()
    for (prompt, completion), got in zip(items, batched, strict=True):
        ids = torch.tensor([prompt + completion])
        with torch.no_grad():
            logits = reference(ids).logits[0].double() / temperature
        expected = [
            (logits[len(prompt) - 1 + t] - torch.logsumexp(logits[len(prompt) - 1 + t], 0))[token].item()
            for t, token in enumerate(completion)
        ]
        assert len(got) == len(completion)
        assert max(abs(a - b) for a, b in zip(got, expected)) < 1e-4
    assert scorer.logprobs_many(0, items[:1], temperature)[0] == scorer.logprobs(0, *items[0], temperature)
