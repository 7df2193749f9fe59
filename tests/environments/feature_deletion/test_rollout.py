import json

import httpx
from feature_deletion.rollout import run_rollout
from feature_deletion.scripted_agent import ScriptedServer


def _row(rows, file_part="text.py"):
    return next(r for r in rows if file_part in r.id and r.deletion.mode == "body")


def test_gold_scores_1_and_untouched_0_over_http(tiny_tasks):
    rows, out, _ = tiny_tasks
    row = rows[0]
    with ScriptedServer(rows, script="gold") as server:
        assert httpx.get(server.base_url.replace("/v1", "/health")).json() == {"ok": True}
        gold = run_rollout(row, out, server.base_url)
    assert gold.reward == 1.0 and gold.stop_reason == "submitted" and gold.errors == []
    assert gold.metrics["f2p_passed"] == len(row.f2p) and gold.metrics["p2p_passed"] == len(row.p2p)
    names = [c["function"]["name"] for m in gold.messages if m["role"] == "assistant" for c in m["tool_calls"]]
    assert names[:3] == ["list_dir", "read_file", "search"] and names[-2:] == ["run_tests", "submit"]
    with ScriptedServer(rows, script="noop") as server:
        noop = run_rollout(row, out, server.base_url)
    assert noop.reward == 0.0 and noop.metrics["turns"] == 1 and noop.metrics["f2p_passed"] == 0


def test_tool_failures_come_back_as_text_and_structured_errors(tiny_tasks):
    rows, out, _ = tiny_tasks
    row = rows[0]
    script = [
        {"tool": "read_file", "args": {"path": "no/such.py"}},  # tool_error
        {"tool": "read_file", "raw_args": "{not json"},  # malformed_tool_call
        {"tool": "frobnicate", "args": {}},  # malformed_tool_call
        {"text": "I think I am done."},  # format_violation
        {"tool": "edit_file", "args": {"path": "pyproject.toml", "old_text": "nope", "new_text": "x"}},  # tool_error
        {"tool": "read_file", "args": {"path": "../../etc/passwd"}},  # tool_error (escape)
        {"tool": "run_tests", "args": {"tests": row.f2p}},  # test_failure
        {"tool": "submit", "args": {}},
    ]
    with ScriptedServer(rows, custom={row.id: script}) as server:
        result = run_rollout(row, out, server.base_url)
    kinds = [(e["kind"], e["turn"]) for e in result.errors]
    assistant_turns = [i for i, m in enumerate(result.messages) if m["role"] == "assistant"]
    assert [k for k, _ in kinds] == ["tool_error", "malformed_tool_call", "malformed_tool_call", "format_violation",
                                     "tool_error", "tool_error", "test_failure"]
    assert [t for _, t in kinds] == assistant_turns[:7]
    assert all(set(e) >= {"kind", "turn", "message"} and e["message"] for e in result.errors)
    tool_texts = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert tool_texts[0].startswith("error:") and "outside the repository" in tool_texts[4]
    assert result.metrics["tool_errors"] == 7 and result.reward == 0.0
    json.dumps(result.to_dict())  # plain data, ready for a trace


def test_concurrent_rollouts_each_get_their_own_workspace(tiny_tasks):
    from concurrent.futures import ThreadPoolExecutor

    rows, out, _ = tiny_tasks
    with ScriptedServer(rows, script="gold") as server:
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda r: run_rollout(r, out, server.base_url), rows[:3]))
    assert [r.reward for r in results] == [1.0, 1.0, 1.0]
