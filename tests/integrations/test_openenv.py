"""composer_prime/integrations/openenv.py: our environments played by OpenEnv's own client over 127.0.0.1."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openenv")

from feature_deletion.scripted_agent import gold_script  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402

from composer_prime.integrations.openenv import OpenEnvServeConfig, create_app, main  # noqa: E402
from composer_prime.configs.rollout import EnvConfig  # noqa: E402
from composer_prime.utils.serve import ServedApp  # noqa: E402

# A bundled task with few fail-to-pass tests, so grading stays short.
TASK = "inflection-0.5.1/inflection/__init__.py:tableize:def"


@pytest.fixture(scope="module")
def feature_deletion():
    app = create_app(EnvConfig(id="feature-deletion"), max_turns=12)
    with ServedApp(app) as served:
        yield served.url


def _call(name: str, args: dict) -> dict:
    return {"tool_calls": [{"name": name, "arguments": json.dumps(args)}]}


def test_gold_episode_scores_1_and_noop_0(feature_deletion):
    with GenericEnvClient(base_url=feature_deletion, message_timeout_s=600).sync() as env:
        first = env.reset(task_id=TASK)
        prompt = first.observation["messages"]
        assert prompt[-1]["role"] == "user" and TASK in prompt[-1]["content"]
        assert {t["function"]["name"] for t in first.observation["tools"]} >= {"read_file", "submit"}
        # The client never sees the task row: no gold source, no test ids, in what it was sent.
        row = json.dumps(first.observation)
        assert "gold_files" not in row and "f2p" not in row

        from feature_deletion.task import load_rows
        from feature_deletion.taskset import DEFAULT_TASKS

        gold_row = next(r for r in load_rows(DEFAULT_TASKS)[0] if r.id == TASK)
        steps = gold_script(gold_row)
        for step in steps:
            result = env.step(_call(step["tool"], step["args"]))
        assert result.done and result.reward == 1.0
        assert result.observation["metrics"]["f2p_passed"] == len(gold_row.f2p)

        env.reset(task_id=TASK)
        noop = env.step(_call("submit", {}))
        assert noop.done and noop.reward == 0.0
        assert noop.observation["metrics"]["f2p_passed"] == 0


def test_a_reply_without_a_tool_call_ends_and_grades_the_episode(feature_deletion):
    with GenericEnvClient(base_url=feature_deletion, message_timeout_s=600).sync() as env:
        env.reset(task_id=TASK)
        result = env.step({"content": "I am done."})
        assert result.done and result.reward == 0.0
        with pytest.raises(Exception, match="call reset first"):  # a graded episode takes no more actions
            env.step(_call("run_tests", {}))


def test_bad_requests_are_refused_with_a_clear_error(feature_deletion):
    with GenericEnvClient(base_url=feature_deletion, message_timeout_s=600).sync() as env:
        with pytest.raises(Exception, match="call reset first"):
            env.step(_call("submit", {}))
    with GenericEnvClient(base_url=feature_deletion, message_timeout_s=600).sync() as env:
        with pytest.raises(Exception, match="no train task 'nope'"):
            env.reset(task_id="nope")
    with GenericEnvClient(base_url=feature_deletion, message_timeout_s=600).sync() as env:
        with pytest.raises(Exception, match="VALIDATION_ERROR"):
            env.step({"tool_calls": [], "row": {"gold_files": {}}})


def test_reverse_text_is_scored_by_the_tasks_own_reward():
    with ServedApp(create_app(EnvConfig(id="reverse-text", args={"num_examples": 8}))) as served:
        with GenericEnvClient(base_url=served.url).sync() as env:
            first = env.reset(index=0)
            letters = first.observation["messages"][-1]["content"]
            right = env.step({"content": " ".join(reversed(letters.split()))})
            assert right.done and right.reward == 1.0 and right.observation["metrics"]["exact_match"] == 1.0
            env.reset(index=0)
            wrong = env.step({"content": letters[::-1] + " q"})
            assert wrong.done and wrong.reward < 1.0
            assert wrong.observation["metrics"]["exact_match"] == 0.0


def test_serving_an_unknown_environment_is_a_one_line_error(cli_error):
    assert "unknown environment 'nope'" in cli_error(OpenEnvServeConfig, main, ["--env.id", "nope"])
