import os

from composer_prime.utils.metrics import MetricsFollower, MetricsLogger, read_metrics


def test_follower_returns_each_record_once_and_waits_for_unfinished_lines(tmp_path):
    follower = MetricsFollower(tmp_path)
    assert follower.new_records() == []
    logger = MetricsLogger(tmp_path, "trainer")
    logger.log(1, {"loss": 0.5})
    logger.log(2, {"loss": 0.25})
    assert [r["step"] for r in follower.new_records()] == [1, 2]
    assert follower.new_records() == []
    with open(tmp_path / "metrics.jsonl", "ab") as f:  # a writer caught mid-line
        f.write(b'{"process": "trainer", "step": 3')
    assert follower.new_records() == []
    with open(tmp_path / "metrics.jsonl", "ab") as f:
        f.write(b', "loss": 0.1}\n')
    assert [(r["step"], r["loss"]) for r in follower.new_records()] == [(3, 0.1)]
    assert [r["step"] for r in read_metrics(tmp_path, "trainer")] == [1, 2, 3]
    logger.close()
    assert not [p for p in os.listdir(tmp_path) if p != "metrics.jsonl"]
