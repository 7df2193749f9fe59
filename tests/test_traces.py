from composer_prime.chat import ChatMessage
from composer_prime.traces import ErrorRecord, RolloutTrace, read_traces, traces_path, write_traces


def test_traces_round_trip(tmp_path):
    trace = RolloutTrace(
        id="step1/0/0", env_id="reverse-text", example_id="train/3", step=1, weight_version=0,
        messages=[ChatMessage(role="user", content="abc"), ChatMessage(role="assistant", content="cab")],
        reward=0.5, metrics={"lcs": 0.5}, errors=[ErrorRecord(kind="wrong_answer", turn=1, message="expected cba")],
    )
    path = write_traces(tmp_path, 1, [trace, trace])
    assert path == traces_path(tmp_path, 1)
    assert read_traces(path) == [trace, trace]
    assert not list(path.parent.glob(".*"))  # no temporary file left behind
