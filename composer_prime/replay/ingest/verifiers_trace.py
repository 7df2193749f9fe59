"""verifiers v1 trace files (`traces.jsonl` written by `vf-eval`, `vf-debug`, GEPA, ...).

One rollout episode per line: `{"env", "task", "traces": [Trace, ...], "ok"}`. A Trace stores its
conversation as a message graph: `nodes[i] = {"parent", "message", "sampled", "tools"?}`, so
branches (sub-agents, retries) share prefixes. Each node that a model call produced
(`sampled: true`, role assistant) is a step; its state is the path from the root to its parent.
Tool schemas come from `trace.tools` (verifiers' flat `{name, description, parameters}`), turned
into the OpenAI `tools` list. Nodes with an unknown role, a broken parent link or a message that
does not parse are counted and skipped, with the branches below them.

Fidelity: branches are followed by construction (a step's state is its own path, never a sibling's);
a defect on a shared prefix is counted once, not once per step below it; an episode logged twice
gives the same step ids and ingest keeps one (`duplicate_step`); content parts other than text and
images are counted as `unknown_part:<type>`; `developer` messages are read as system messages.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from composer_prime.chat import ChatMessage
from composer_prime.replay.ingest.openai_chat import ROLES, message_from_openai
from composer_prime.replay.steps import IngestReport, Step, json_records, steps_from_conversation

FORMAT = "verifiers"


def _tools(trace: dict) -> str | None:
    tools = trace.get("tools") or next((n.get("tools") for n in trace.get("nodes", []) if n.get("tools")), None)
    if not tools:
        return None
    return json.dumps([
        {"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                          "parameters": t.get("parameters") or {}}}
        for t in tools if isinstance(t, dict) and t.get("name")
    ], ensure_ascii=False)


def _student(trace: dict) -> str:
    for call in trace.get("calls") or []:
        if isinstance(call, dict) and call.get("model"):
            return str(call["model"])
    config = (trace.get("agent") or {}).get("config") or {}
    return str(config.get("model") or "")


def _trace_steps(trace: dict, path: Path, report: IngestReport) -> list[Step]:
    nodes = trace.get("nodes")
    if not isinstance(nodes, list):
        report.skip("malformed_record")
        return []
    messages: list[ChatMessage | None] = []
    for node in nodes:
        raw = node.get("message") if isinstance(node, dict) else None
        if not isinstance(raw, dict) or raw.get("role") not in ROLES:
            report.skip("unknown_event")
            messages.append(None)
            continue
        try:
            messages.append(message_from_openai(raw, report))
        except (ValueError, ValidationError, TypeError, AttributeError):
            report.skip("malformed_node")
            messages.append(None)

    def path_to(i: int) -> list[int] | None:
        chain, seen = [], set()
        while i is not None:
            if not isinstance(i, int) or not 0 <= i < len(nodes) or i in seen or messages[i] is None:
                return None
            seen.add(i)
            chain.append(i)
            i = nodes[i].get("parent")
        return chain[::-1]

    steps: list[Step] = []
    tools, student, trace_id = _tools(trace), _student(trace), str(trace.get("id") or path.stem)
    counted: set[int] = set()  # nodes inside a path already cut: their defects are counted
    turn = 0
    for i, node in enumerate(nodes):
        if messages[i] is None or messages[i].role != "assistant" or not node.get("sampled", True):
            continue
        index, turn = turn, turn + 1
        chain = path_to(i)
        if chain is None:
            report.skip("broken_branch")
            continue
        conversation = [messages[j] for j in chain]
        fresh = next((k for k, j in enumerate(chain) if j not in counted), len(chain))
        found = steps_from_conversation(conversation, source=str(path), format=FORMAT, trace_id=trace_id,
                                        report=report, tools=tools, student=student,
                                        actions={len(conversation) - 1}, count_from=fresh)
        counted.update(chain[:-1])  # the last node is the action: its missing results are not counted yet
        steps.extend(s.model_copy(update={"index": index}) for s in found)
    return steps


def read(path: Path, report: IngestReport) -> list[Step]:
    steps: list[Step] = []
    for _, episode in json_records(path, report):
        traces = episode.get("traces")
        if not isinstance(traces, list):
            report.skip("unknown_event")
            continue
        for trace in traces:
            if isinstance(trace, dict):
                steps.extend(_trace_steps(trace, Path(path), report))
            else:
                report.skip("malformed_record")
    return steps
