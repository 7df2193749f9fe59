"""Feature Deletion inside the RL loop: `rl` launches the scripted policy as its inference server
(the same HTTP routes a model is served on), the orchestrator drives multi-turn tool rollouts in
the sandbox and grades them, and the trainer trains a tiny model on the packed batches.

The tiny fdcalc tasks get one script each: gold (reward 1), stumbling (four broken turns, then
gold: reward 1 with structured errors) and noop (submit at once: reward 0); a fourth task's grading
raises (its row names an F2P test file that does not exist): the run goes on, that rollout scores 0
with the grader's error in its trace.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from composer_prime.batch import batch_path, read_batch
from composer_prime.traces import read_traces, traces_path
from composer_prime.utils.net import free_port

# The tasks fixture (the real builder on the tiny package, checks included) and the run: ~7 min at load average ~11,
# past the suite's 600 s at load ~15.
pytestmark = pytest.mark.timeout(1500)
REPO = Path(__file__).resolve().parents[3]
STEPS = 2
SCRIPTS = ("gold", "stumbling", "noop", "gold")  # the last on the task whose grading raises
GROUP_SIZE = 2


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """A tiny Qwen3 model with a ChatML tokenizer and room for whole tool conversations."""
    from composer_prime.model.tiny import TinyModelConfig, build

    return build(TinyModelConfig(output_dir=tmp_path_factory.mktemp("policy") / "model", corpus_lines=2000,
                                 hidden_size=64, num_layers=2, intermediate_size=128,
                                 max_position_embeddings=6144))


def _toml(value) -> str:
    return json.dumps(value) if not isinstance(value, dict) else \
        "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"


def _smallest(rows, n):
    """The `n` tasks with the smallest deletions: every conversation must reach `submit` within seq_len (a class whose
    every method was deleted, written back whole by the gold script, does not fit: it stops at the context)."""
    return sorted(rows, key=lambda r: (r.deletion.lines_removed, r.id))[:n]


@pytest.mark.slow
def test_scripted_policy_through_the_whole_rl_loop(tiny_tasks, policy, tmp_path):
    from feature_deletion.taskset import split_of

    from feature_deletion.task import write_rows

    rows, tasks_dir, _ = tiny_tasks
    train = _smallest([r for r in rows if split_of(r) == "train"], len(SCRIPTS))
    assert len(train) == len(SCRIPTS), "the tiny package should give at least four train tasks"
    raising = train[-1].id
    train[-1] = train[-1].model_copy(update={"f2p": ["tests/test_gone.py::test_x", *train[-1].f2p[1:]]})
    script_of = {row.id: script for row, script in zip(train, SCRIPTS, strict=True)}
    (tmp_path / "tasks").mkdir()
    for archive in Path(tasks_dir).glob("repos"):
        (tmp_path / "tasks" / "repos").symlink_to(archive)
    write_rows(tmp_path / "tasks" / "tasks.jsonl", train)
    tasks = str(tmp_path / "tasks" / "tasks.jsonl")
    out = tmp_path / "run"
    config = tmp_path / "rl.toml"
    config.write_text(f"""
output_dir = {_toml(str(out))}
max_steps = {STEPS}
plot = false
[model]
path = {_toml(str(policy))}
[log]
progress = false
[inference]
port = {free_port()}
[inference.backend]
type = "scripted"
tasks_path = {_toml(tasks)}
task_scripts = {_toml(script_of)}
[orchestrator]
batch_size = {len(SCRIPTS) * GROUP_SIZE}
group_size = {GROUP_SIZE}
max_concurrent = 3
seq_len = 5120  # a gold conversation of the tiny tasks is ~5k tokens; attention cost grows with rows squared
max_turns = 20
[orchestrator.env]
id = "feature-deletion"
args = {_toml({"tasks_path": tasks, "num_examples": len(SCRIPTS)})}
[orchestrator.sampling]
max_tokens = 2048
[orchestrator.eval]
num_examples = 0
[orchestrator.hints]
enabled = true
max_sites_per_step = 2
[trainer.loss.hint]
weight = 0.5
[trainer.optim]
lr = 1e-4
""")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "composer_prime.rl.main", "@", str(config)], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-4000:]

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    orchestrator = {r["step"]: r for r in records if r["process"] == "orchestrator" and "reward/mean" in r}
    trainer = {r["step"]: r for r in records if r["process"] == "trainer" and "loss" in r}
    assert sorted(orchestrator) == sorted(trainer) == list(range(1, STEPS + 1))
    rollouts = STEPS * len(SCRIPTS) * GROUP_SIZE
    print(f"{rollouts} rollouts in {elapsed:.1f}s: {60 * rollouts / elapsed:.1f} rollouts/min end to end; "
          f"step times {[round(orchestrator[s]['time/step_s'], 1) for s in orchestrator]}s")

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(policy)
    for step in range(1, STEPS + 1):
        record = orchestrator[step]
        assert record["reward/mean"] == pytest.approx(2 / 4)  # gold and stumbling solve it, noop and the raising one not
        assert record["env/stop/done"] == 1.0 and record["num_loss_tokens"] > 0
        assert np.isfinite(trainer[step]["loss"])
        assert record["hints/sites"] > 0 and trainer[step]["loss/hint"] > 0

        traces = read_traces(traces_path(out, step))
        assert len(traces) == rollouts // STEPS
        for trace in traces:
            task = re.search(r"Task id: ([^\n]+)", trace.messages[1].content).group(1)
            script = script_of[task]
            assert [m.role for m in trace.messages[:3]] == ["system", "user", "assistant"]
            assert json.loads(trace.tools)[0]["function"]["name"] == "list_dir"
            calls = [c.name for m in trace.messages if m.role == "assistant" for c in m.tool_calls or []]
            assert calls[-1] == "submit" and trace.messages[-1].content == "submitted"
            kinds = [(e.kind, e.turn) for e in trace.errors]
            if task == raising:  # its grading raised: reward 0, the grader's error on the last turn, the run goes on
                last = max(i for i, m in enumerate(trace.messages) if m.role == "assistant")
                assert trace.reward == 0.0 and ("grading_error", last) in kinds, kinds
                assert "FileNotFoundError" in next(e.message for e in trace.errors if e.kind == "grading_error")
            elif script == "noop":
                assert trace.reward == 0.0 and calls == ["submit"] and kinds == [("wrong_answer", 2)]
            elif script == "gold":
                assert trace.reward == 1.0 and kinds == [] and "write_file" in calls and "run_tests" in calls
            else:  # stumbling: turns 2, 4, 6, 8 go wrong, each recorded on its own assistant message
                assert trace.reward == 1.0
                # The environment's and the parser's records; the detector adds tool_error wherever a tool
                # message reads "error: ..." (a malformed call's reply too), and nothing after the stumbles.
                stumbles = {(k, t) for k in ("tool_error", "malformed_tool_call") for t in (2, 4, 6, 8)}
                assert {("tool_error", 2), ("malformed_tool_call", 4), ("malformed_tool_call", 6),
                        ("malformed_tool_call", 8)} <= set(kinds) <= stumbles
                assert all(trace.messages[t].role == "assistant" for _, t in kinds)
                messages = {(e.kind, e.turn): e.message for e in trace.errors}
                assert "no/such/file.py" in messages["tool_error", 2]
                assert "unknown tool" in messages["malformed_tool_call", 6]
                assert trace.messages[9].content.startswith("error:") and "not closed" in trace.messages[9].content
            assert trace.metrics["f2p_passed"] == (0 if script == "noop" or task == raising else trace.metrics["f2p_total"])

        # Batches: the loss mask covers exactly the sampled assistant turns, each ending with the EOS token.
        batch = read_batch(batch_path(out, step, 0))
        turns = sum(len([m for m in t.messages if m.role == "assistant"]) for t in traces)
        runs, loss_tokens = [], 0
        for micro in batch.micro_batches:
            ids, mask, pos = micro.input_ids.numpy(), micro.loss_mask.numpy(), micro.position_ids.numpy()
            lps = micro.inference_logprobs.numpy()
            for r in range(ids.shape[0]):
                loss_tokens += int(mask[r].sum())
                assert not lps[r][~mask[r]].any()
                edges = np.flatnonzero(np.diff(np.concatenate([[0], mask[r].astype(np.int8), [0]])))
                for a, b in zip(edges[::2], edges[1::2], strict=True):
                    assert ids[r, b - 1] == tokenizer.eos_token_id and pos[r, a] > 0
                    assert tokenizer.decode(ids[r, a - 3 : a]).endswith("<|im_start|>assistant\n")
                    runs.append(tokenizer.decode(ids[r, a:b]))
        assert loss_tokens == batch.num_loss_tokens and len(runs) == turns
        assert all("<|im_start|>" not in run and "<|im_start|>tool" not in run for run in runs)
        assert sum('"name": "submit"' in run for run in runs) == rollouts // STEPS


@pytest.mark.slow
def test_held_out_tool_tasks_are_evaluated_at_the_start_every_interval_and_the_end(heldout_tasks, policy, tmp_path):
    """configs/feature_deletion/rl_scripted.toml on tasks with a held-out split: the gold script's held-out task is
    rolled out like a training one (sandbox, tools, grading) before step 1, after each step and at the end."""
    from composer_prime.utils.plot import run_panels

    from feature_deletion.task import write_rows

    train, held_out, built = heldout_tasks
    tasks = tmp_path / "tasks" / "tasks.jsonl"
    tasks.parent.mkdir()
    (tasks.parent / "repos").symlink_to(built.parent / "repos")
    write_rows(tasks, _smallest(train, 2) + held_out)
    out = tmp_path / "run"
    layer = tmp_path / "tasks.toml"
    layer.write_text(f"""
output_dir = {_toml(str(out))}
[inference]
port = {free_port()}
[inference.backend]
tasks_path = {_toml(str(tasks))}
[orchestrator.env]
args = {_toml({"tasks_path": str(tasks), "num_examples": 3})}
""")
    result = subprocess.run([sys.executable, "-m", "composer_prime.rl.main", "@",
                             str(REPO / "configs/feature_deletion/rl_scripted.toml"), "@", str(layer),
                             "--model.path", str(policy)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = {r["step"]: r for r in records if r["process"] == "orchestrator" and "eval/reward" in r}
    assert sorted(evals) == [0, 1, STEPS]  # start (before step 1), eval.interval = 1, end
    for record in evals.values():
        assert record["eval/verdict"] == "resolved"
        assert record["eval/solved"] == record["eval/pass@1"] == record["eval/reward"] == 1.0
        assert record["eval/env/f2p_fraction"] == 1.0 and record["eval/env/stop/done"] == 1.0
        assert record["eval/env/turns"] > 4 and record["eval/tool_errors"] == 0
    end = evals[STEPS]
    assert end["eval/solved_start"] == end["eval/solved_end"] == 1.0 and end["eval/delta"] == 0.0
    assert "held-out resolved 1.000 -> 1.000 (+0.000); reward 1.000 -> 1.000" in result.stderr
    trained = [r for r in records if r["process"] == "orchestrator" and "reward/mean" in r]
    assert [(r["env/resolved"], r["tool_errors"]) for r in trained] == [(1.0, 0.0)] * STEPS

    assert (out / "plots" / "rl.png").stat().st_size > 0
    panels = {title: dict(lines) for title, lines in run_panels(out).items()}
    assert [step for step, _ in panels["held-out resolved"]["sampled"]] == [0, 1, STEPS]
    assert [step for step, _ in panels["per rollout (tools)"]["held-out turns"]] == [0, 1, STEPS]
    assert panels["per rollout (tools)"]["train tool errors"] == [(1, 0.0), (STEPS, 0.0)]
    assert panels["reward"]["held-out"] == [(0, 1.0), (1, 1.0), (STEPS, 1.0)]
    assert "answer length / target length" not in panels  # single-turn only
