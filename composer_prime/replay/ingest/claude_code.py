"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`, sub-agents in `agent-*.jsonl`).

One JSON event per line. Every event that has a `uuid` is a node of a tree: `parentUuid` names the
event it follows (null at a root). Conversation events are `type: "user"` / `"assistant"` with an
Anthropic `message` (`content` a string or a list of blocks); the others (`system`, `progress`,
`attachment`, ...) carry no turn but can sit on the chain; `summary`, `file-history-snapshot` and
`queue-operation` have no place in it. Claude Code writes one API response as several lines, one per
content block, all with the same `message.id`, and writes the result of the first tool call before
the line of the second call of the same response.

How the tree becomes traces:
- The conversation of a leaf is its parent chain, root first. The chain of the newest leaf in the
  file (the branch Claude Code resumes) is the session's trace. After a rewind or an edited prompt
  the older branch is another leaf: it becomes its own trace (`<session>/branch-<leaf uuid>`) with
  only the steps that are not on a trace already (the shared prefix is stepped once), and is counted
  in the report as `noted: branch_trace`.
- A compaction writes a `system` event (`subtype: "compact_boundary"`, no `parentUuid`, the chain
  goes on through `logicalParentUuid`) and then the summary as a user turn (`isCompactSummary`).
  The model saw only the summary: the state restarts there. Steps before it keep their full states.
- Sidechain events (`isSidechain`: a sub-agent's conversation) form their own tree, read the same
  way as traces `<session>/sidechain-<agentId or root uuid>`.
- A parent uuid that is not in the file (a damaged line) is replaced by the previous event of the
  same conversation in file order, counted as `broken_parent_link`.

What one chain becomes:
- Lines with the same `message.id` are one assistant turn, whatever lines came between them; the
  tool results written between follow the whole turn (grouped order), so the state of a turn never
  holds a result the model had not seen. A line seen twice (same `uuid`) counts once.
- `thinking` / `redacted_thinking` blocks are stripped (a thinking signature cannot be replayed to
  another model); a turn left empty is counted as `thinking_only_turn`.
- `<synthetic>` assistant turns (written by Claude Code, not the model), meta user turns
  (`isMeta`: caveats, command output injected by the client) and API error turns are skipped and
  counted. Block types other than text, image, tool_use, tool_result and thinking are counted as
  `unknown_block:<type>`; a bare string in a block list is kept as text and counted.
- `tool_use` becomes an OpenAI tool call, `tool_result` a `tool` message; an error result is
  prefixed with "Error: " unless it already says so. Each step's `student` is the model of its turn.
Tool schemas are not in the log, so steps carry none here; replay gives them a tools file's schemas
or infers them from the session's calls (replay/tools.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from composer_prime.chat import ChatMessage, ToolCall, arguments_json
from composer_prime.replay.steps import (
    PART_SEPARATOR, IngestReport, Step, json_records, steps_from_conversation, text_of,
)

FORMAT = "claude-code"
_OFF_CHAIN = {"summary", "file-history-snapshot", "queue-operation"}
_ON_CHAIN = {"system", "progress", "attachment"}
_THINKING = {"thinking", "redacted_thinking"}
_SYNTHETIC_MODEL = "<synthetic>"
_SAYS_ERROR = re.compile(r"\s*(<tool_use_error>|error\b)", re.IGNORECASE)


@dataclass
class _Node:
    """One event with a uuid, and what it contributes to a conversation once converted."""

    uuid: str
    position: int
    event: dict
    parent: str | None = None
    restart: bool = False
    """The model's context starts here (a compaction)."""
    pieces: list = field(default_factory=list)
    """("assistant", message id, model, ChatMessage) or ("message", ChatMessage), in order."""


def _tool_result_text(block: dict, report: IngestReport) -> str:
    text = text_of(block.get("content"), report) or ""
    if block.get("is_error") and not _SAYS_ERROR.match(text):
        return f"Error: {text}"
    return text


def _assistant_pieces(event: dict, message: dict, blocks: list, report: IngestReport) -> list:
    text, calls = [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, str):
            report.skip("bare_string_block")
            text.append(block)
        elif kind == "text":
            text.append(str(block.get("text", "")))
        elif kind == "tool_use" and block.get("name"):
            calls.append(ToolCall(id=block.get("id"), name=block["name"], arguments=arguments_json(block.get("input"))))
        elif kind not in _THINKING:
            report.skip(f"unknown_block:{kind}")
    turn_id = message.get("id") or event["uuid"]
    content = PART_SEPARATOR.join(t for t in text if t) or None
    return [("assistant", turn_id, str(message.get("model") or ""),
             ChatMessage(role="assistant", content=content, tool_calls=calls or None))]


def _user_pieces(blocks: list, report: IngestReport) -> list:
    pieces, text = [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            pieces.append(("message", ChatMessage(role="tool", tool_call_id=block.get("tool_use_id"),
                                                  content=_tool_result_text(block, report))))
        elif isinstance(block, str):
            report.skip("bare_string_block")
            text.append(block)
        elif kind in ("text", "image"):
            text.append(text_of([block]) or "")
        else:
            report.skip(f"unknown_block:{kind}")
    joined = PART_SEPARATOR.join(t for t in text if t)
    if joined.strip():
        pieces.append(("message", ChatMessage(role="user", content=joined)))
    return pieces


def _convert(node: _Node, report: IngestReport) -> None:
    """Fill node.pieces (and count what is skipped): once per event, whichever chains it is on."""
    event = node.event
    kind = event.get("type")
    if kind == "system" and event.get("subtype") == "compact_boundary":
        node.restart = True
    if kind not in ("user", "assistant"):
        return
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        report.skip("malformed_event")
        return
    if kind == "assistant":
        if event.get("isApiErrorMessage"):
            report.skip("api_error")
        elif message.get("model") == _SYNTHETIC_MODEL:
            report.skip("synthetic_turn")  # Claude Code's own filler ("No response requested."), not the model's
        else:
            node.pieces = _assistant_pieces(event, message, blocks, report)
        return
    if event.get("isMeta"):
        report.skip("meta_turn")
        return
    node.restart = node.restart or bool(event.get("isCompactSummary"))
    node.pieces = _user_pieces(blocks, report)


def _read_nodes(path: Path, report: IngestReport) -> tuple[dict[str, _Node], str]:
    nodes: dict[str, _Node] = {}
    session = Path(path).stem
    for _, event in json_records(path, report):
        kind, uuid = event.get("type"), event.get("uuid")
        if kind in ("user", "assistant"):
            if not isinstance(event.get("message"), dict) or not isinstance(uuid, str):
                report.skip("malformed_event")
                continue
        elif kind in _OFF_CHAIN or kind in _ON_CHAIN:
            report.skip("meta_event")
        else:
            report.skip("unknown_event")
        if kind in _OFF_CHAIN or not isinstance(uuid, str):
            continue
        if uuid in nodes:
            report.skip("duplicate_line")
            continue
        session = event.get("sessionId") or session
        nodes[uuid] = _Node(uuid=uuid, position=len(nodes), event=event)
    return nodes, session


def _link(nodes: dict[str, _Node], report: IngestReport) -> None:
    previous: dict[tuple, str] = {}  # last node of each conversation (main, or one sidechain) in file order
    for node in nodes.values():
        event = node.event
        group = (bool(event.get("isSidechain")), event.get("agentId") if event.get("isSidechain") else None)
        parent = event.get("parentUuid")
        if parent is None:
            parent = event.get("logicalParentUuid")  # a compaction goes on from the last turn before it
        if parent is not None and parent not in nodes:
            report.skip("broken_parent_link")
            parent = previous.get(group)
        node.parent = parent
        previous[group] = node.uuid
        _convert(node, report)


def _chain(leaf: _Node, nodes: dict[str, _Node], lines: _Lines) -> list[_Node]:
    chain, seen, node = [], set(), leaf
    while node is not None and node.uuid not in seen:  # a cycle in a damaged file ends the walk
        seen.add(node.uuid)
        chain.append(node)
        node = nodes.get(node.parent) if node.parent is not None else None
    return lines.complete(chain[::-1])


class _Lines:
    """Where each response's lines and each call's result are, wherever they hang in the tree.

    Claude Code can hang the lines of one response on a fork: each tool result is written as the
    child of its own call's line, so with two parallel calls the chain from the leaf passes through
    the first call's line and its result while the second call and its result sit on a side branch
    that ends there. They are the same response: a chain gets them back (`complete`)."""

    def __init__(self, nodes: dict[str, _Node]):
        self.by_turn: dict[str, list[_Node]] = {}
        self.by_call: dict[str, _Node] = {}
        for node in nodes.values():
            for piece in node.pieces:
                if piece[0] == "assistant":
                    self.by_turn.setdefault(piece[1], []).append(node)
            if node.pieces and all(p[0] == "message" and p[1].role == "tool" for p in node.pieces):
                for piece in node.pieces:
                    self.by_call.setdefault(piece[1].tool_call_id, node)

    def complete(self, chain: list[_Node]) -> list[_Node]:
        """The chain with, after each response's line, its lines and results found off the chain."""
        on_chain = {n.uuid for n in chain}
        out: list[_Node] = []
        for node in chain:
            out.append(node)
            for piece in node.pieces:
                if piece[0] != "assistant":
                    continue
                lines = [n for n in self.by_turn.get(piece[1], []) if n.uuid not in on_chain]
                on_chain.update(n.uuid for n in lines)
                out.extend(lines)
                calls = [c.id for n in (node, *lines) for p in n.pieces if p[0] == "assistant"
                         for c in p[3].tool_calls or []]
                results = [self.by_call[c] for c in calls if c in self.by_call and self.by_call[c].uuid not in on_chain]
                on_chain.update(n.uuid for n in results)
                out.extend(results)
        return out


@dataclass
class _Segment:
    """The part of a chain the model saw in one context: messages, and per assistant message its
    turn id and model."""

    messages: list[ChatMessage] = field(default_factory=list)
    sources: list[set[str]] = field(default_factory=list)
    turns: dict[int, tuple[str, str]] = field(default_factory=dict)


def _segments(chain: list[_Node], report: IngestReport, counted: set[str]) -> list[_Segment]:
    segments = [_Segment()]
    for node in chain:
        if node.restart and segments[-1].messages:
            segments.append(_Segment())
        segment = segments[-1]
        open_turns = {turn_id: i for i, (turn_id, _) in segment.turns.items()}
        for piece in node.pieces:
            if piece[0] == "assistant":
                _, turn_id, model, message = piece
                at = open_turns.get(turn_id)
                if at is None:
                    segment.turns[len(segment.messages)] = (turn_id, model)
                    open_turns[turn_id] = len(segment.messages)
                    segment.messages.append(message)
                    segment.sources.append({node.uuid})
                    continue
                # A later line of a response already in the state: its blocks join that turn.
                merged = segment.messages[at]
                content = PART_SEPARATOR.join(filter(None, [merged.content, message.content])) or None
                calls = list(merged.tool_calls or []) + list(message.tool_calls or [])
                segment.messages[at] = merged.model_copy(update={"content": content, "tool_calls": calls or None})
                segment.sources[at].add(node.uuid)
            else:
                segment.messages.append(piece[1])
                segment.sources.append({node.uuid})
    for segment in segments:
        _group_results(segment)
        _drop_empty_turns(segment, report, counted)
    return segments


def _group_results(segment: _Segment) -> None:
    """Put each tool result right after the turn that called it (grouped order): a response's second
    call was written after the first call's result, but both calls were made before either result
    existed."""
    caller: dict[str, int] = {}
    for i, message in enumerate(segment.messages):
        for call in message.tool_calls or []:
            if call.id is not None:
                caller.setdefault(call.id, i)
    attached: dict[int, list[int]] = {}
    top = []
    for i, message in enumerate(segment.messages):
        if message.role == "tool" and caller.get(message.tool_call_id, i) < i:
            attached.setdefault(caller[message.tool_call_id], []).append(i)
        else:
            top.append(i)
    for i, results in attached.items():  # in the order of the calls, however the lines were written
        ids = [c.id for c in segment.messages[i].tool_calls or []]
        results.sort(key=lambda j: ids.index(segment.messages[j].tool_call_id))
    order = [j for i in top for j in (i, *attached.get(i, []))]
    index = {old: new for new, old in enumerate(order)}
    segment.messages = [segment.messages[i] for i in order]
    segment.sources = [segment.sources[i] for i in order]
    segment.turns = {index[i]: turn for i, turn in segment.turns.items()}


def _drop_empty_turns(segment: _Segment, report: IngestReport, counted: set[str]) -> None:
    keep = [i for i, m in enumerate(segment.messages) if m.role != "assistant" or m.content or m.tool_calls]
    for i in set(range(len(segment.messages))) - set(keep):
        if not segment.sources[i] <= counted:
            report.skip("thinking_only_turn")
    index = {old: new for new, old in enumerate(keep)}
    segment.messages = [segment.messages[i] for i in keep]
    segment.sources = [segment.sources[i] for i in keep]
    segment.turns = {index[i]: turn for i, turn in segment.turns.items() if i in index}


def _leaves(nodes: dict[str, _Node]) -> list[_Node]:
    """Leaves in the order their traces are named: the newest main-conversation leaf first (the
    branch Claude Code resumes), then older branches, then sidechains in file order."""
    parents = {n.parent for n in nodes.values()}
    leaves = [n for n in nodes.values() if n.uuid not in parents]
    main = sorted((n for n in leaves if not n.event.get("isSidechain")), key=lambda n: -n.position)
    side = [n for n in leaves if n.event.get("isSidechain")]
    return main + side


def read(path: Path, report: IngestReport) -> list[Step]:
    nodes, session = _read_nodes(path, report)
    _link(nodes, report)
    lines = _Lines(nodes)
    steps: list[Step] = []
    stepped: set[str] = set()  # turn ids already a step of some trace
    counted: set[str] = set()  # node uuids whose defects were counted on an earlier chain
    main_named = False
    for leaf in _leaves(nodes):
        if _adds_nothing(leaf, nodes, counted):
            continue
        chain = _chain(leaf, nodes, lines)
        if leaf.event.get("isSidechain"):
            root = chain[0]
            trace_id = f"{session}/sidechain-{root.event.get('agentId') or root.uuid[:8]}"
            if any(s.trace_id == trace_id for s in steps):
                trace_id = f"{trace_id}/branch-{leaf.uuid[:8]}"
        elif not main_named:
            trace_id, main_named = session, True
        else:
            trace_id = f"{session}/branch-{leaf.uuid[:8]}"
        found = _chain_steps(chain, trace_id, str(path), report, stepped, counted)
        if found and trace_id != session and not leaf.event.get("isSidechain"):
            report.note("branch_trace")
        steps.extend(found)
        counted.update(n.uuid for n in chain)
    return steps


def _adds_nothing(leaf: _Node, nodes: dict[str, _Node], counted: set[str]) -> bool:
    """A leaf below a chain already read with only turnless events (progress, hooks) in between, or
    on a chain with no turn at all: reading it would give nothing new (and cost a walk of the whole
    session), and must not take the session's trace name."""
    node, seen = leaf, set()
    while node is not None and not node.pieces and node.uuid not in seen:
        seen.add(node.uuid)
        node = nodes.get(node.parent) if node.parent is not None else None
    return node is None or not node.pieces or node.uuid in counted


def _chain_steps(chain: list[_Node], trace_id: str, source: str, report: IngestReport,
                 stepped: set[str], counted: set[str]) -> list[Step]:
    steps, offset = [], 0
    for segment in _segments(chain, report, counted):
        fresh = [i for i, s in enumerate(segment.sources) if not s <= counted]
        actions = {i for i, (turn_id, _) in segment.turns.items() if turn_id not in stepped}
        models = [segment.turns[i][1] for i in sorted(segment.turns)]
        found = steps_from_conversation(segment.messages, source=source, format=FORMAT, trace_id=trace_id,
                                        report=report, actions=actions,
                                        count_from=fresh[0] if fresh else len(segment.messages))
        steps.extend(s.model_copy(update={"index": offset + s.index, "student": models[s.index]}) for s in found)
        stepped.update(turn_id for turn_id, _ in segment.turns.values())
        offset += len(segment.turns)
    return steps
