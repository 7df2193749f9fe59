import logging
from collections import Counter

import numpy as np
import pytest

from composer_prime.batch import read_batch, write_batch
from composer_prime.errors import UserError
from composer_prime.orchestrator.packing import Sample, first_fit_decreasing, pack_step

PAD = 0


def _samples(n: int, seed: int = 0, max_prompt: int = 12, max_completion: int = 20) -> list[Sample]:
    """Samples whose token ids are unique across the whole set, so each token can be traced back."""
    rng = np.random.default_rng(seed)
    samples, next_id = [], 1
    for i in range(n):
        n_p, n_c = int(rng.integers(1, max_prompt)), int(rng.integers(1, max_completion))
        ids = list(range(next_id, next_id + n_p + n_c))
        next_id += n_p + n_c
        samples.append(
            Sample(
                prompt_ids=ids[:n_p],
                completion_ids=ids[n_p:],
                completion_logprobs=[float(x) for x in -rng.random(n_c)],
                advantage=float(rng.normal()),
                policy_version=i % 3,
            )
        )
    return samples


def _segments(batch):
    """Split every row at position resets; yields (ids, mask, advantages, logprobs) per segment."""
    for micro in batch.micro_batches:
        ids, pos = micro.input_ids.numpy(), micro.position_ids.numpy()
        mask, adv, lps = micro.loss_mask.numpy(), micro.advantages.numpy(), micro.inference_logprobs.numpy()
        for r in range(ids.shape[0]):
            starts = list(np.flatnonzero(pos[r] == 0)) + [ids.shape[1]]
            for a, b in zip(starts[:-1], starts[1:], strict=True):
                np.testing.assert_array_equal(pos[r, a:b], np.arange(b - a))
                yield ids[r, a:b], mask[r, a:b], adv[r, a:b], lps[r, a:b]


def _check_sample_segment(sample: Sample, ids, mask, adv, lps):
    n_p = len(sample.prompt_ids)
    assert list(ids) == sample.prompt_ids + sample.completion_ids
    assert not mask[:n_p].any() and mask[n_p:].all()
    np.testing.assert_array_equal(adv[:n_p], 0.0)
    np.testing.assert_array_equal(adv[n_p:], np.float32(sample.advantage))
    np.testing.assert_array_equal(lps[:n_p], 0.0)
    np.testing.assert_array_equal(lps[n_p:], np.asarray(sample.completion_logprobs, dtype=np.float32))


@pytest.mark.parametrize(("world_size", "micro_batch_rows"), [(1, 1), (2, 2), (3, 1), (4, 3)])
def test_every_sample_appears_exactly_once_aligned_and_ranks_are_balanced(world_size, micro_batch_rows):
    samples = _samples(23)
    seq_len = 40
    batches = pack_step(samples, step=5, seq_len=seq_len, micro_batch_rows=micro_batch_rows,
                        world_size=world_size, pad_token_id=PAD, temperature=0.7)

    assert [b.rank for b in batches] == list(range(world_size))
    assert len({len(b.micro_batches) for b in batches}) == 1, "ranks got different numbers of micro-batches"
    by_first_token = {s.prompt_ids[0]: s for s in samples}
    seen = Counter()
    for batch in batches:
        assert (batch.step, batch.world_size, batch.temperature) == (5, world_size, 0.7)
        assert (batch.min_policy_version, batch.max_policy_version) == (0, 2)
        for micro in batch.micro_batches:
            assert micro.input_ids.shape == (micro_batch_rows, seq_len)
        for ids, mask, adv, lps in _segments(batch):
            if ids[0] == PAD:  # trailing padding segment
                assert (ids == PAD).all() and not mask.any() and (adv == 0).all() and (lps == 0).all()
                continue
            sample = by_first_token[int(ids[0])]
            _check_sample_segment(sample, ids, mask, adv, lps)
            seen[sample.prompt_ids[0]] += 1
    assert seen == Counter({s.prompt_ids[0]: 1 for s in samples})

    total = sum(len(s.completion_ids) for s in samples)
    assert all(b.num_loss_tokens == total for b in batches)
    assert sum(int(m.loss_mask.numpy().sum()) for b in batches for m in b.micro_batches) == total


def test_first_fit_decreasing_matches_hand_packing():
    # Sorted: 6(i0) 5(i1) 4(i2) 3(i3) 2(i4). 6 -> bin0 (room 4); 5 -> bin1 (room 5); 4 -> bin0 (room 0);
    # 3 -> bin1 (room 2); 2 -> bin1 (room 0).
    assert first_fit_decreasing([6, 5, 4, 3, 2], 10) == [[0, 2], [1, 3, 4]]
    # Ties keep input order; an item equal to the capacity fills a bin alone.
    assert first_fit_decreasing([3, 10, 3, 3], 10) == [[1], [0, 2, 3]]


def test_rows_are_dealt_in_snake_order_by_token_count():
    # Four samples that each fill a row alone (lengths 10, 9, 8, 7 with seq_len 10).
    samples = [Sample([100 * k + 1], list(range(100 * k + 2, 100 * k + 1 + n)), [-0.1] * (n - 1), 1.0, 0)
               for k, n in enumerate([10, 9, 8, 7])]
    batches = pack_step(samples, step=1, seq_len=10, micro_batch_rows=1, world_size=2, pad_token_id=PAD,
                        temperature=1.0)
    tokens = [[int((m.input_ids.numpy() != PAD).sum()) for m in b.micro_batches] for b in batches]
    assert tokens == [[10, 7], [9, 8]]  # rank 0: 1st and 4th longest, rank 1: 2nd and 3rd


def test_a_rank_without_rows_gets_padding_only_micro_batches():
    samples = _samples(1)
    batches = pack_step(samples, step=1, seq_len=64, micro_batch_rows=2, world_size=3, pad_token_id=PAD,
                        temperature=1.0)
    assert [len(b.micro_batches) for b in batches] == [1, 1, 1]
    for batch in batches[1:]:
        micro = batch.micro_batches[0]
        assert not micro.loss_mask.numpy().any() and (micro.input_ids.numpy() == PAD).all()
        np.testing.assert_array_equal(micro.position_ids.numpy(), np.tile(np.arange(64), (2, 1)))
    assert all(b.num_loss_tokens == len(samples[0].completion_ids) for b in batches)


def test_long_sample_keeps_its_prompt_and_loses_its_completion_tail(caplog):
    long = Sample([1, 2, 3], [4, 5, 6, 7, 8], [-0.1, -0.2, -0.3, -0.4, -0.5], 0.5, 1)
    with caplog.at_level(logging.WARNING):
        (batch,) = pack_step([long], step=1, seq_len=6, micro_batch_rows=1, world_size=1, pad_token_id=PAD,
                             temperature=1.0)
    assert "truncating" in caplog.text
    micro = batch.micro_batches[0]
    assert micro.input_ids.numpy().tolist() == [[1, 2, 3, 4, 5, 6]]
    np.testing.assert_array_equal(micro.inference_logprobs.numpy(), np.float32([[0, 0, 0, -0.1, -0.2, -0.3]]))
    assert batch.num_loss_tokens == 3


def test_sample_whose_prompt_fills_the_row_is_dropped_and_all_dropped_is_a_user_error(caplog):
    fits = Sample([1, 2], [3], [-0.5], 1.0, 4)
    too_long = Sample([9] * 8, [10], [-0.5], -1.0, 2)
    with caplog.at_level(logging.WARNING):
        (batch,) = pack_step([fits, too_long], step=1, seq_len=8, micro_batch_rows=1, world_size=1,
                             pad_token_id=PAD, temperature=1.0)
    assert "dropping" in caplog.text
    assert batch.num_loss_tokens == 1 and (batch.min_policy_version, batch.max_policy_version) == (4, 4)
    with pytest.raises(UserError, match="seq_len 8"):
        pack_step([too_long], step=1, seq_len=8, micro_batch_rows=1, world_size=1, pad_token_id=PAD,
                  temperature=1.0)


def test_mismatched_logprobs_are_refused():
    with pytest.raises(ValueError, match="logprobs"):
        pack_step([Sample([1], [2, 3], [-0.1], 0.0, 0)], step=1, seq_len=8, micro_batch_rows=1, world_size=1,
                  pad_token_id=PAD, temperature=1.0)


def test_packed_batches_survive_the_wire_format(tmp_path):
    batches = pack_step(_samples(5), step=2, seq_len=32, micro_batch_rows=2, world_size=2, pad_token_id=PAD,
                        temperature=1.0)
    for batch in batches:
        back = read_batch(write_batch(tmp_path, batch))
        for a, b in zip(batch.micro_batches, back.micro_batches, strict=True):
            np.testing.assert_array_equal(a.input_ids.numpy(), b.input_ids.numpy())
            np.testing.assert_array_equal(a.advantages.numpy(), b.advantages.numpy())


def test_a_completion_mask_trains_only_sampled_tokens():
    # prompt 3 tokens; completion: 2 sampled, 3 context (tool reply), 2 sampled
    mask = [True, True, False, False, False, True, True]
    sample = Sample(prompt_ids=[1, 2, 3], completion_ids=[4, 5, 6, 7, 8, 9, 10],
                    completion_logprobs=[-0.5, -0.25, 0.0, 0.0, 0.0, -1.0, -2.0], advantage=1.5, policy_version=0,
                    completion_mask=mask)
    plain = Sample([20, 21], [22, 23], [-0.1, -0.2], -1.0, 0)
    (batch,) = pack_step([sample, plain], step=1, seq_len=16, micro_batch_rows=1, world_size=1, pad_token_id=PAD,
                         temperature=1.0)
    assert batch.num_loss_tokens == 4 + 2
    micro = batch.micro_batches[0]
    ids, loss = micro.input_ids.numpy()[0], micro.loss_mask.numpy()[0]
    at = int(np.flatnonzero(ids == 1)[0])
    assert loss[at : at + 10].tolist() == [False] * 3 + mask
    assert micro.advantages.numpy()[0, at : at + 10].tolist() == [0.0] * 3 + [1.5 if m else 0.0 for m in mask]
    assert micro.inference_logprobs.numpy()[0, at + 3 : at + 10].tolist() == [-0.5, -0.25, 0, 0, 0, -1.0, -2.0]


def test_truncation_cuts_the_mask_and_drops_a_sample_left_with_nothing_to_train():
    sample = Sample([1, 2], [3, 4, 5, 6], [-1.0, 0.0, 0.0, -1.0], 1.0, 0, completion_mask=[True, False, False, True])
    (batch,) = pack_step([sample], step=1, seq_len=4, micro_batch_rows=1, world_size=1, pad_token_id=PAD,
                         temperature=1.0)
    assert batch.num_loss_tokens == 1
    assert batch.micro_batches[0].loss_mask.numpy()[0].tolist() == [False, False, True, False]
    context_only = Sample([1, 2], [3, 4, 5], [-1.0, 0.0, 0.0], 1.0, 0, completion_mask=[False, False, True])
    with pytest.raises(UserError):
        pack_step([context_only], step=1, seq_len=4, micro_batch_rows=1, world_size=1, pad_token_id=PAD,
                  temperature=1.0)
    with pytest.raises(ValueError, match="mask"):
        pack_step([Sample([1], [2, 3], [0.0, 0.0], 1.0, 0, completion_mask=[True])], step=1, seq_len=8,
                  micro_batch_rows=1, world_size=1, pad_token_id=PAD, temperature=1.0)
