"""feature-deletion under verifiers' own runners: `vf-eval` (multi-turn tool rollouts over the task's MCP toolset
against an OpenAI-compatible server on 127.0.0.1) and `vf-validate` (gold 1, untouched 0), as real subprocesses."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from feature_deletion.scripted_agent import ScriptedServer, gold_script
from feature_deletion.taskset import FeatureDeletionConfig, FeatureDeletionTask, FeatureDeletionTaskset
from feature_deletion.tools import TOOL_NAMES, Workspace
from feature_deletion.toolset import TOOL_SCHEMAS

BIN = Path(sys.executable).parent
WARMSTART = Path(__file__).resolve().parents[3] / "configs/quickstart/warmstart"
GRADING_METRICS = {"f2p_passed", "f2p_total", "p2p_passed", "p2p_total", "tool_calls", "tool_errors", "turns"}


def test_the_task_declares_rewards_metrics_tools_and_a_stop(tiny_tasks):
    _, out, _ = tiny_tasks
    task = next(iter(FeatureDeletionTaskset(FeatureDeletionConfig(tasks_path=str(out / "tasks.jsonl")))))
    assert [fn.__name__ for fn in task.hooks("reward")] == ["tests_pass"]
    assert [fn.__name__ for fn in task.hooks("metric")] == ["grading"]
    assert [fn.__name__ for fn in task.hooks("stop")] == ["submitted"]
    assert [type(t).__name__ for t in FeatureDeletionTask.toolsets(task.config)] == ["FeatureDeletionToolset"]


def test_tool_schemas_are_the_toolsets_declarations_of_the_workspaces_tools():
    assert tuple(t["function"]["name"] for t in TOOL_SCHEMAS) == TOOL_NAMES
    for tool in TOOL_SCHEMAS:
        fn = tool["function"]
        params = [p for p in inspect.signature(getattr(Workspace, fn["name"])).parameters if p != "self"]
        assert list(fn["parameters"]["properties"]) == params and fn["description"]
    run_tests = next(t["function"]["parameters"] for t in TOOL_SCHEMAS if t["function"]["name"] == "run_tests")
    assert run_tests["properties"]["tests"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}


def _traces(out: Path) -> dict[str, dict]:
    (path,) = out.glob("**/traces.jsonl")
    episodes = [json.loads(line) for line in path.read_text().splitlines()]
    return {e["traces"][0]["task"]["data"]["id"]: e["traces"][0] for e in episodes}


def _vf_eval_served(model: Path, tasks_dir: Path, tmp_path: Path, name: str, *options: str,
                    backend=None) -> subprocess.CompletedProcess:
    """`vf-eval feature-deletion -n 2` (traces under tmp_path/out) against our `inference` server on `model`,
    with `backend` (default: transformers); the server is stopped when vf-eval ends."""
    import asyncio

    from composer_prime.configs.inference import InferenceConfig
    from composer_prime.configs.shared import LogConfig, ModelConfig
    from composer_prime.eval.server import inference_server, wait_ready
    from composer_prime.inference.client import InferenceClient
    from composer_prime.utils.net import free_port

    port = free_port()
    config = InferenceConfig(model=ModelConfig(path=str(model)), port=port, log=LogConfig(progress=False),
                             **({"backend": backend} if backend is not None else {}))

    async def ready(child):
        async with InferenceClient(f"http://127.0.0.1:{port}") as client:
            return await wait_ready(client, child, timeout_s=120)

    with inference_server(config, tmp_path / "server") as child:
        asyncio.run(ready(child))
        command = [str(BIN / "vf-eval"), "feature-deletion", "-m", name, "--client.base-url",
                   f"http://127.0.0.1:{port}/v1", "--client.api-key-var", "FD_TEST_NO_KEY",
                   "--env.agent.runtime.type", "subprocess", "--no-push", *options,
                   "--env.taskset.tasks-path", str(tasks_dir / "tasks.jsonl"), "-n", "2", "-o", str(tmp_path / "out")]
        return subprocess.run(command, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_vf_eval_runs_multi_turn_tool_rollouts_gold_1_noop_0(tiny_tasks, tmp_path):
    rows, tasks_dir, _ = tiny_tasks
    gold, noop, stumbling = rows[:3]
    # Two failures inside the tools (a missing file, a path out of the repository), then the gold script.
    stumble = [{"tool": "read_file", "args": {"path": "no/such.py"}},
               {"tool": "read_file", "args": {"path": "../../etc/passwd"}}, *gold_script(stumbling)]
    custom = {noop.id: [{"tool": "submit", "args": {}}], stumbling.id: stumble}
    with ScriptedServer(rows, script="gold", custom=custom) as server:
        command = [str(BIN / "vf-eval"), "feature-deletion", "-m", "scripted", "--client.base-url", server.base_url,
                   "--client.api-key-var", "FD_TEST_NO_KEY", "--env.agent.runtime.type", "subprocess", "--no-push",
                   "--env.taskset.tasks-path", str(tasks_dir / "tasks.jsonl"), "-n", "3", "-o", str(tmp_path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    traces = _traces(tmp_path)
    assert set(traces) == {gold.id, noop.id, stumbling.id}
    for trace in traces.values():
        assert set(trace["rewards"]) == {"tests_pass"} and GRADING_METRICS <= set(trace["metrics"])
    reward = {tid: t["rewards"]["tests_pass"]["score"] for tid, t in traces.items()}
    assert reward == {gold.id: 1.0, noop.id: 0.0, stumbling.id: 1.0}
    g, n, s = (traces[r.id]["metrics"] for r in (gold, noop, stumbling))
    assert g["f2p_passed"] == len(gold.f2p) and g["p2p_passed"] == len(gold.p2p) and g["tool_errors"] == 0
    assert g["tool_calls"] == len(gold_script(gold)) and traces[gold.id]["stop_condition"] == "submitted"
    assert n["f2p_passed"] == 0 and n["tool_calls"] == 1 and n["submitted"] == 1
    assert s["tool_errors"] == 2 and s["tool_calls"] == len(stumble)
    called = [c["name"] for node in traces[gold.id]["nodes"] for c in (node["message"].get("tool_calls") or [])]
    assert called == [step["tool"] for step in gold_script(gold)]


@pytest.mark.slow
def test_vf_validate_agrees_with_fd_validate_gold_valid_untouched_scores_0(tiny_tasks, tmp_path):
    """vf-validate and fd-validate give each task the same outcome: two sound tasks valid, and one whose gold patch
    is the untouched code (its gold check scores 0) invalid for both."""
    from feature_deletion.task import runner_for, write_rows
    from feature_deletion.taskset import split_of
    from feature_deletion.validate import validate_row

    rows, tasks_dir, _ = tiny_tasks
    sound = [r for r in rows if split_of(r) == "train"][:2]
    no_gold = sound[1].model_copy(update={"gold_files": sound[1].broken_files})
    tasks = tmp_path / "tasks" / "tasks.jsonl"
    tasks.parent.mkdir()
    (tasks.parent / "repos").symlink_to(tasks_dir / "repos")
    write_rows(tasks, [sound[0], no_gold])
    command = [str(BIN / "vf-validate"), "feature-deletion", "--runtime.type", "subprocess",
               "--taskset.tasks-path", str(tasks), "-o", str(tmp_path / "vf")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    (results,) = (tmp_path / "vf").glob("**/results.jsonl")
    vf = {row["name"]: row for row in map(json.loads, results.read_text().splitlines())}
    assert len(vf) == 2, done.stdout[-3000:] + done.stderr[-3000:]
    fd = {r.id: validate_row(r, tasks.parent, runner_for(r)) for r in [sound[0], no_gold]}
    assert {t: vf[t]["valid"] for t in vf} == {t: fd[t]["valid"] for t in fd} == {sound[0].id: True, no_gold.id: False}
    assert vf[no_gold.id]["gold"]["valid"] is False and fd[no_gold.id]["gold"] == 0.0
    for task, row in vf.items():
        # The untouched task scores 0 in both; the rewards dict is what vf-validate reported empty before the task
        # declared its reward.
        assert row["noop"]["valid"] is True and fd[task]["noop"] == 0.0
        assert row["noop"]["rewards"] == {"tests_pass": 0.0} and row["noop"]["reward"] == 0.0


@pytest.mark.slow
def test_vf_eval_against_our_inference_server_gold_1_noop_0(tiny_tasks, tmp_path):
    """The same runner against `inference` with the scripted backend: the server reads the tools, the script's
    Hermes `<tool_call>` text comes back as OpenAI tool_calls, and each call's result goes back into the template."""
    from composer_prime.configs.inference import ScriptedBackendConfig

    rows, tasks_dir, _ = tiny_tasks
    gold, noop = rows[:2]
    backend = ScriptedBackendConfig(tasks_path=str(tasks_dir / "tasks.jsonl"), task_scripts={noop.id: "noop"})
    done = _vf_eval_served(WARMSTART, tasks_dir, tmp_path, "scripted", backend=backend)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    traces = _traces(tmp_path / "out")
    assert {tid: t["rewards"]["tests_pass"]["score"] for tid, t in traces.items()} == {gold.id: 1.0, noop.id: 0.0}
    called = [c["name"] for node in traces[gold.id]["nodes"] for c in (node["message"].get("tool_calls") or [])]
    assert called == [step["tool"] for step in gold_script(gold)]
    assert traces[gold.id]["metrics"]["tool_errors"] == 0 and traces[gold.id]["stop_condition"] == "submitted"


@pytest.mark.slow
def test_vf_eval_runs_the_quickstart_model_against_our_inference_server(tiny_tasks, tmp_path):
    """A real model, not a script: the quickstart's warm start served by `inference` (transformers backend)
    under vf-eval. Its context is 512 positions and a Feature Deletion prompt with its tool schemas is
    longer, so it runs from a copy whose config allows 4096: Qwen3 has rotary positions and no learned
    position table, so the same weights run on the longer context (they were never trained there). A
    reverse-text model does not restore features (here it answers with letters in one turn and calls no
    tool): the run must still end, graded, with the reward and every metric present and no feature restored."""
    import shutil

    rows, tasks_dir, _ = tiny_tasks
    model = tmp_path / "quickstart-4096"
    shutil.copytree(WARMSTART, model)
    config_json = json.loads((model / "config.json").read_text())
    config_json["max_position_embeddings"] = 4096
    (model / "config.json").write_text(json.dumps(config_json))
    done = _vf_eval_served(model, tasks_dir, tmp_path, "quickstart", "--sampling.max-tokens", "64",
                           "--sampling.temperature", "1.0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    traces = _traces(tmp_path / "out")
    assert set(traces) == {row.id for row in rows[:2]}
    for trace in traces.values():
        assert trace["rewards"]["tests_pass"]["score"] == 0.0 and GRADING_METRICS <= set(trace["metrics"])
        assert trace["metrics"]["f2p_passed"] == 0
        assert any(node["message"]["role"] == "assistant" and node["message"].get("content")
                   for node in trace["nodes"])  # the model answered: a real generation, graded
