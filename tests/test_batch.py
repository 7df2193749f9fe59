import numpy as np

from composer_prime.batch import Array, MicroBatch, TrainBatch, batch_path, read_batch, write_batch


def _array(values, dtype):
    return Array.from_numpy(np.asarray(values, dtype=dtype))


def test_batch_roundtrip_keeps_values_and_dtypes(tmp_path):
    micro = MicroBatch(
        input_ids=_array([[5, 6, 7, 0]], np.int32),
        position_ids=_array([[0, 1, 2, 0]], np.int32),
        loss_mask=_array([[False, True, True, False]], np.bool_),
        advantages=_array([[0.0, 0.5, 0.5, 0.0]], np.float32),
        inference_logprobs=_array([[0.0, -1.25, -0.5, 0.0]], np.float32),
    )
    batch = TrainBatch(step=3, rank=0, world_size=1, temperature=0.7, num_loss_tokens=2,
                       micro_batches=[micro], min_policy_version=1, max_policy_version=2)
    path = write_batch(tmp_path, batch)
    assert path == batch_path(tmp_path, 3, 0)
    back = read_batch(path)
    assert back.step == 3 and back.num_loss_tokens == 2
    got = back.micro_batches[0]
    assert got.input_ids.numpy().dtype == np.int32
    np.testing.assert_array_equal(got.loss_mask.numpy(), [[False, True, True, False]])
    np.testing.assert_allclose(got.inference_logprobs.torch().numpy(), [[0.0, -1.25, -0.5, 0.0]])
    assert not list(path.parent.glob(".*tmp*")), "temporary file left behind"


def test_batch_with_other_schema_version_is_refused(tmp_path):
    batch = TrainBatch(step=0, rank=0, world_size=1, temperature=1.0, num_loss_tokens=0,
                       micro_batches=[], min_policy_version=0, max_policy_version=0, schema_version=99)
    path = write_batch(tmp_path, batch)
    try:
        read_batch(path)
    except ValueError as exc:
        assert "schema v99" in str(exc)
    else:
        raise AssertionError("a batch of an unknown schema version was accepted")
