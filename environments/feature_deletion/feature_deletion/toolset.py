"""The agent's tools declared the verifiers v1 way: a `vf.Toolset` served over MCP, one per rollout.

These declarations are the only ones: `TOOL_SCHEMAS` (what composer-prime's own `ToolSession`
advertises) is derived from them by the same MCP code that serves them under `vf-eval`, and every
tool runs through `Workspace.call` (feature_deletion.tools), the single implementation over the
project's sandbox. Under verifiers the server lives in its own process on the host; what grading
needs (the agent's source changes, its tool errors, whether it submitted) travels to the scoring
side in the rollout's state, which verifiers syncs after every call.

    python -m feature_deletion.toolset   # how verifiers starts it (VF_CONFIG, VF_STATE_URL, ...)
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from mcp.server.mcpserver.tools.base import Tool
from pydantic import ConfigDict, Field
from verifiers.v1.utils.decorators import discover_decorated

from feature_deletion.fstree import QuotaExceeded, remove_tree
from feature_deletion.grading import agent_changes
from feature_deletion.task import TaskRow, materialize, runner_for
from feature_deletion.tools import TOOL_NAMES, Workspace


class FeatureDeletionState(vf.State):
    """What the tool server reports to the scoring side after each call (verifiers' state channel)."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    changes: dict[str, bytes | None] = Field(default_factory=dict)
    """The agent's changes to source files so far (None: removed), as grading applies them."""
    ignored: list[str] = Field(default_factory=list)
    """Changed files grading drops (tests, config, files outside the source paths)."""
    errors: list[dict[str, Any]] = Field(default_factory=list)
    """Structured tool errors {kind, turn, message, tool}; `turn` counts tool calls from 1."""
    tool_calls: int = 0
    submitted: bool = False
    over_quota: str = ""
    """Why the workspace is over its quota (too deep, too many entries, too large): grading scores it 0."""


class FeatureDeletionToolsetConfig(vf.ToolsetConfig):
    pass


class FeatureDeletionToolset(vf.Toolset[FeatureDeletionToolsetConfig, FeatureDeletionState]):
    # The tools keep their bare names (list_dir, not feature_deletion_toolset_list_dir): the prompt names them.
    TOOL_PREFIX = None

    workspace: Workspace | None = None

    async def setup_task(self, task) -> None:
        row = TaskRow.model_validate(task.row)
        tasks_dir = Path(task.tasks_dir)
        self.workspace = Workspace(row, tasks_dir, runner_for(row), isolation=task.isolation)
        self._exit_stack.callback(self.workspace.close)
        # The untouched tree, to tell the agent's changes from the task's start state after every call.
        reference = tempfile.mkdtemp(prefix="fd-reference.")
        self._exit_stack.callback(remove_tree, reference)
        self.reference = materialize(row, tasks_dir, Path(reference) / "repo", git=False)

    def _call(self, name: str, **arguments: Any) -> str:
        ws = self.workspace
        if ws is None:
            return "error: this tool server has no task"
        text = ws.call(name, {k: v for k, v in arguments.items() if v is not None}, turn=ws.tool_calls + 1)
        try:
            self.state.changes, self.state.ignored = agent_changes(ws.row, self.reference, ws.root)
            self.state.over_quota = ""
        except QuotaExceeded as exc:
            self.state.over_quota = str(exc)
        self.state.errors, self.state.tool_calls, self.state.submitted = list(ws.errors), ws.tool_calls, ws.submitted
        return text

    @vf.tool
    def list_dir(self, path: str = ".") -> str:
        """List a directory of the repository (relative path, default the root)."""
        return self._call("list_dir", path=path)

    @vf.tool
    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a text file with line numbers; optional 1-based inclusive line range."""
        return self._call("read_file", path=path, start_line=start_line, end_line=end_line)

    @vf.tool
    def search(self, pattern: str, path: str = ".") -> str:
        """Regex search over the repository's text files; returns file:line: text."""
        return self._call("search", pattern=pattern, path=path)

    @vf.tool
    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the exact text old_text (which must occur exactly once) with new_text."""
        return self._call("edit_file", path=path, old_text=old_text, new_text=new_text)

    @vf.tool
    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file with content."""
        return self._call("write_file", path=path, content=content)

    @vf.tool
    def run_tests(self, tests: list[str] | None = None) -> str:
        """Run the test suite, or only the given pytest node ids/paths, in the sandbox."""
        return self._call("run_tests", tests=tests)

    @vf.tool
    def submit(self) -> str:
        """Finish: your current source changes are graded."""
        return self._call("submit")


def _untitled(schema: Any) -> Any:
    """A JSON schema without pydantic's generated `title`s (names again, in prompt tokens); property names stay."""
    if not isinstance(schema, dict):
        return [_untitled(s) for s in schema] if isinstance(schema, list) else schema
    return {k: ({name: _untitled(v) for name, v in value.items()} if k == "properties" else _untitled(value))
            for k, value in schema.items() if k != "title"}


def _schemas() -> list[dict[str, Any]]:
    """OpenAI function schemas of the declared tools (in TOOL_NAMES order), built by the MCP code that serves them."""
    order = {name: i for i, name in enumerate(TOOL_NAMES)}
    declared = discover_decorated(FeatureDeletionToolset(FeatureDeletionToolsetConfig()), "tool")
    tools = [Tool.from_function(fn) for fn in sorted(declared, key=lambda fn: order.get(fn.__name__, len(order)))]
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": _untitled(t.parameters)}} for t in tools]


TOOL_SCHEMAS: list[dict[str, Any]] = _schemas()

if __name__ == "__main__":
    FeatureDeletionToolset.run()
