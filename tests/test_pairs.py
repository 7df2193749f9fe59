import json

import datasets
import pytest

from composer_prime.chat import Action, ChatMessage, ToolCall
from composer_prime.errors import UserError
from composer_prime.pairs import PreferencePair, Provenance, TeacherAnswer, read_pairs, write_pairs


def _pair(i: int, tool: bool) -> PreferencePair:
    call = ToolCall(id="c1", name="read_file", arguments=json.dumps({"path": f"f{i}.py", "start": 1}))
    chosen = Action(tool_calls=[call]) if tool else Action(content=f"answer {i}")
    return PreferencePair(
        id=f"p{i}",
        state=[ChatMessage(role="system", content="sys"), ChatMessage(role="user", content=f"task {i}")],
        tools=json.dumps([{"type": "function", "function": {"name": "read_file", "parameters": {}}}]) if tool else None,
        chosen=chosen,
        rejected=Action(content="wrong"),
        provenance=Provenance(
            source="trace.jsonl", format="composer-prime", trace_id=f"t{i}", step=0, k=2, n=3,
            teachers=[TeacherAnswer(teacher="a", model="m", action=chosen, canonical="x", agrees=True, cost_usd=0.01)],
        ),
    )


def test_pairs_round_trip_and_load_with_datasets(tmp_path):
    pairs = [_pair(0, tool=True), _pair(1, tool=False)]
    path = tmp_path / "pairs.jsonl"
    write_pairs(path, pairs)
    assert read_pairs(path) == pairs
    rows = datasets.load_dataset("json", data_files=str(path), split="train")
    assert rows.num_rows == 2
    assert rows[0]["chosen"]["tool_calls"][0]["name"] == "read_file"
    assert json.loads(rows[0]["chosen"]["tool_calls"][0]["arguments"]) == {"path": "f0.py", "start": 1}
    assert rows[1]["chosen"]["content"] == "answer 1"
    assert rows[1]["provenance"]["teachers"][0]["agrees"] is True


def test_bad_pair_line_is_a_user_error(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(_pair(0, tool=False).model_dump_json() + "\n" + '{"id": "x"}\n')
    with pytest.raises(UserError, match=r"pairs.jsonl:2: not a preference pair"):
        read_pairs(path)
    with pytest.raises(UserError, match="does not exist"):
        read_pairs(tmp_path / "missing.jsonl")
