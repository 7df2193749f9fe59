"""The orchestrator's seal on a step (verify/step_seal.py): each way to get an unsealed step past a site is refused."""

from __future__ import annotations

import msgspec
import pytest

from composer_prime import keys
from composer_prime.verify.step_seal import StepRefused, StepSeal, check_rank, seal_step

KEY = keys.generate_key()
RANKS = [b"rank zero bytes", b"rank one bytes"]


def test_a_sealed_rank_passes():
    marker = seal_step(KEY, 3, RANKS)
    for rank, data in enumerate(RANKS):
        check_rank(KEY.public_key(), marker, 3, rank, 2, data)


@pytest.mark.parametrize(("marker", "step", "rank", "data", "reason"), [
    (seal_step(keys.generate_key(), 3, RANKS), 3, 0, RANKS[0], "not the orchestrator's"),  # another key
    (seal_step(KEY, 2, RANKS), 3, 0, RANKS[0], "the seal is the orchestrator's for step 2"),  # an old step replayed
    (seal_step(KEY, 3, RANKS), 3, 0, RANKS[1], "rank 0's batch is not the one"),  # ranks swapped
    (seal_step(KEY, 3, RANKS), 3, 1, RANKS[1] + b"!", "rank 1's batch is not the one"),  # bytes changed
    (seal_step(KEY, 3, RANKS[:1]), 3, 0, RANKS[0], "sealed for 1 ranks, this run has 2"),
    (b"", 3, 0, RANKS[0], "unreadable seal"),  # the old empty marker
    (b'{"step": 3}', 3, 0, RANKS[0], "unreadable seal"),
])
def test_an_unsealed_step_is_refused_with_its_reason(marker, step, rank, data, reason):
    with pytest.raises(StepRefused, match=reason):
        check_rank(KEY.public_key(), marker, step, rank, 2, data)


def test_a_seal_edited_to_another_step_no_longer_verifies():
    seal = msgspec.json.decode(seal_step(KEY, 2, RANKS), type=StepSeal)
    edited = msgspec.json.encode(msgspec.structs.replace(seal, step=3))
    with pytest.raises(StepRefused, match="not the orchestrator's"):
        check_rank(KEY.public_key(), edited, 3, 0, 2, RANKS[0])
