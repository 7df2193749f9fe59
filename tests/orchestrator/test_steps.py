import numpy as np

from composer_prime.batch import batch_path, read_batch
from composer_prime.orchestrator.packing import Sample, pack_step
from composer_prime.orchestrator.step_io import completed_steps, next_step, saved_metrics, step_dir, write_step


def _batches(step: int, world_size: int):
    samples = [Sample([1, 2], [3, 4, 5], [-0.1, -0.2, -0.3], 0.5, step - 1) for _ in range(3)]
    return pack_step(samples, step=step, seq_len=8, micro_batch_rows=1, world_size=world_size, pad_token_id=0,
                     temperature=1.0)


def test_a_fresh_run_starts_at_step_one(tmp_path):
    assert completed_steps(tmp_path, 2) == [] and next_step(tmp_path, 2) == 1


def test_written_steps_are_found_with_their_batches_and_metrics(tmp_path):
    for step in (1, 2, 3):
        write_step(tmp_path, step, _batches(step, 2), {"reward/mean": step / 10})
    assert completed_steps(tmp_path, 2) == [1, 2, 3]
    assert next_step(tmp_path, 2) == 4
    assert saved_metrics(tmp_path, 2) == {"reward/mean": 0.2}
    back = read_batch(batch_path(tmp_path, 3, 1))
    assert (back.step, back.rank, back.world_size) == (3, 1, 2)
    np.testing.assert_array_equal(back.micro_batches[0].input_ids.numpy(),
                                  _batches(3, 2)[1].micro_batches[0].input_ids.numpy())
    leftovers = [p.name for p in (tmp_path / "rollouts").iterdir() if p.name.startswith(".")]
    assert leftovers == [], "staging directories left behind"


def test_a_step_missing_a_rank_file_is_not_complete(tmp_path):
    write_step(tmp_path, 1, _batches(1, 2), {})
    write_step(tmp_path, 2, _batches(2, 2), {})
    batch_path(tmp_path, 2, 1).unlink()  # e.g. a step written for a smaller world size
    assert completed_steps(tmp_path, 2) == [1] and next_step(tmp_path, 2) == 2


def test_a_crashed_staging_directory_is_ignored_and_replaced(tmp_path):
    staging = tmp_path / "rollouts" / ".staging_step_1" / "rollouts" / "step_1"
    staging.mkdir(parents=True)
    (staging / "rank_0.msgpack").write_bytes(b"half")
    assert next_step(tmp_path, 1) == 1
    write_step(tmp_path, 1, _batches(1, 1), {"x": 1})
    assert next_step(tmp_path, 1) == 2 and read_batch(batch_path(tmp_path, 1, 0)).step == 1
    assert not (tmp_path / "rollouts" / ".staging_step_1").exists()
    assert sorted(p.name for p in step_dir(tmp_path, 1).iterdir()) == ["orchestrator_metrics.json", "rank_0.msgpack"]
