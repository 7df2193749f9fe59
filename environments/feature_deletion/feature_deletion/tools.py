"""The agent's tools over one rollout's workspace, and the structured error log.

Every tool returns text. A failure is returned to the model as text starting with "error:" and
recorded as a plain dict {"kind", "turn", "message", "tool"} (composer-prime's ErrorRecord keys;
`turn` is the index of the erring assistant message in the conversation).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# `regex`, not `re`: the pattern is the agent's, and only `regex` can bound a match's time (catastrophic
# backtracking in `re` holds the GIL of the host process that serves every tool, with no way to interrupt it).
import regex

from feature_deletion.fstree import Quota, QuotaExceeded, remove_tree, walk
from feature_deletion.grading import run_pytest
from feature_deletion.sandbox import Limits, Sandbox
from feature_deletion.task import TaskRow, materialize

MAX_READ_LINES = 400
MAX_OUTPUT = 8000
MAX_WRITE = 512 * 1024
MAX_READ_BYTES = 4 << 20
SEARCH_SECONDS = 5.0
SEARCH_QUOTA = Quota(max_depth=64, max_entries=20_000)


class ToolError(Exception):
    """A tool failure to report to the model (kind: tool_error unless given)."""

    def __init__(self, message: str, kind: str = "tool_error"):
        super().__init__(message)
        self.kind = kind


# The Workspace methods a tool call may reach; their declarations (names, descriptions, argument schemas) are
# feature_deletion.toolset's, the only ones.
TOOL_NAMES = ("list_dir", "read_file", "search", "edit_file", "write_file", "run_tests", "submit")


def _open_regular(target: Path, flags: int) -> int:
    """A descriptor on `target` only if it is a regular file, else ToolError. The agent's code runs in the workspace
    during run_tests and may leave a FIFO, a socket or a link where a file was: O_NONBLOCK keeps the open itself
    from waiting on a pipe's other end, O_NOFOLLOW refuses a link at the last step, and the type is read from the
    open descriptor (fstat), so nothing swapped in between a check and the open is ever read or written."""
    try:
        fd = os.open(target, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        # ENXIO: a FIFO with no reader or a socket; ELOOP: a link (O_NOFOLLOW)
        why = {errno.ENXIO: "not a regular file", errno.ELOOP: "is a symbolic link; the tools do not follow links"}
        raise ToolError(f"{target.name}: {why.get(exc.errno, f'cannot open ({exc.strerror})')}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{target.name}: not a regular file")
    return fd


def _read_regular(target: Path, limit: int = MAX_READ_BYTES) -> str:
    fd = _open_regular(target, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        if os.fstat(f.fileno()).st_size > limit:
            raise ToolError(f"{target.name}: over {limit} bytes")
        return f.read(limit + 1)[:limit].decode()


def _write_regular(target: Path, content: str) -> None:
    fd = _open_regular(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb") as f:
        f.write(content.encode())


def error_record(kind: str, turn: int, message: str, tool: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "turn": turn, "message": message[:500], "tool": tool}


@dataclass
class Workspace:
    """One rollout's fresh copy of a task and the tools over it."""

    row: TaskRow
    tasks_dir: Path
    runner: Path | None
    limits: Limits = field(default_factory=Limits)
    isolation: str = "namespace"
    errors: list[dict] = field(default_factory=list)
    tool_calls: int = 0
    tool_seconds: float = 0.0
    test_seconds: float = 0.0
    submitted: bool = False
    _pending_failure: str | None = None

    def __post_init__(self):
        self._tmp = tempfile.mkdtemp(prefix="fd-rollout.")
        self.root = materialize(self.row, self.tasks_dir, Path(self._tmp) / "repo")
        self.sandbox = Sandbox(self.root, runner=self.runner, limits=self.limits, isolation=self.isolation)

    def close(self) -> None:
        remove_tree(self._tmp)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- errors
    def record(self, kind: str, turn: int, message: str, tool: str | None = None) -> None:
        self.errors.append(error_record(kind, turn, message, tool))

    # -- dispatch
    def call(self, name: str, arguments: str | dict | None, turn: int) -> str:
        """Run one tool call; failures come back as text and are recorded."""
        start = time.perf_counter()
        self.tool_calls += 1
        try:
            if name not in TOOL_NAMES:
                raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}", "malformed_tool_call")
            if isinstance(arguments, str):
                try:
                    args = json.loads(arguments or "{}")
                except json.JSONDecodeError as exc:
                    raise ToolError(f"arguments of {name} are not valid JSON: {exc}", "malformed_tool_call") from None
            else:
                args = dict(arguments or {})
            if not isinstance(args, dict):
                raise ToolError(f"arguments of {name} must be a JSON object", "malformed_tool_call")
            try:
                out = getattr(self, name)(**args)
            except TypeError as exc:
                raise ToolError(f"bad arguments for {name}: {exc}", "malformed_tool_call") from None
            if self._pending_failure:
                self.record("test_failure", turn, self._pending_failure, name)
                self._pending_failure = None
            return out
        except ToolError as exc:
            self.record(exc.kind, turn, str(exc), name)
            return f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - a tool never crashes the rollout
            self.record("tool_error", turn, f"{type(exc).__name__}: {exc}", name)
            return f"error: {type(exc).__name__}: {exc}"
        finally:
            self.tool_seconds += time.perf_counter() - start

    # -- paths
    def _resolve(self, path: str | None, must_exist: bool = True) -> Path:
        """The path inside the repository, read lexically: a symbolic link anywhere on it is refused,
        never followed, so that a link planted by the agent's code cannot probe the host."""
        rel = (path or ".").strip()
        if rel == self.sandbox.workspace or rel.startswith(self.sandbox.workspace.rstrip("/") + "/"):
            rel = rel[len(self.sandbox.workspace):].lstrip("/") or "."
        if os.path.isabs(rel):
            raise ToolError(f"{path}: use a path relative to the repository root")
        parts = [p for p in Path(os.path.normpath(rel)).parts if p != "."]
        if parts[:1] == [".."]:
            raise ToolError(f"{path}: outside the repository")
        if parts[:1] == [".git"]:
            raise ToolError(f"{path}: the .git directory is not available")
        target = self.root
        for part in parts:
            target = target / part
            if target.is_symlink():
                raise ToolError(f"{path}: is a symbolic link; the tools do not follow links")
        if must_exist and not target.exists():
            raise ToolError(f"{path}: no such file or directory")
        return target

    # -- tools
    def list_dir(self, path: str = ".") -> str:
        target = self._resolve(path)
        if not target.is_dir():
            raise ToolError(f"{path}: not a directory")
        with os.scandir(target) as it:
            entries = sorted(e.name + ("@" if e.is_symlink() else "/" if e.is_dir(follow_symlinks=False) else "")
                             for e in it if e.name != ".git")
        return "\n".join(entries) if entries else "(empty)"

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        target = self._resolve(path)
        try:
            lines = _read_regular(target).splitlines()
        except UnicodeDecodeError:
            raise ToolError(f"{path}: not a text file") from None
        start = max(1, int(start_line or 1))
        end = min(len(lines), int(end_line) if end_line else start + MAX_READ_LINES - 1)
        if lines and start > len(lines):
            raise ToolError(f"{path}: start_line {start} is past the end ({len(lines)} lines)")
        if end - start + 1 > MAX_READ_LINES:
            end = start + MAX_READ_LINES - 1
        body = "\n".join(f"{n:>5}  {lines[n - 1]}" for n in range(start, end + 1))
        more = f"\n[lines {start}-{end} of {len(lines)}]" if (start > 1 or end < len(lines)) else ""
        return body + more

    def search(self, pattern: str, path: str = ".") -> str:
        try:
            compiled = regex.compile(pattern)
        except (regex.error, ValueError, OverflowError) as exc:
            raise ToolError(f"bad regex {pattern!r}: {exc}") from None
        base = self._resolve(path)
        hits = []
        try:
            files = [base] if base.is_file() else [
                base / rel for rel, st in walk(base, SEARCH_QUOTA) if stat.S_ISREG(st.st_mode)
                and ".git" not in (base / rel).relative_to(self.root).parts]
        except QuotaExceeded as exc:
            raise ToolError(f"{path}: the tree is too large to search ({exc})") from None
        deadline = time.monotonic() + SEARCH_SECONDS
        for f in files:
            try:
                lines = _read_regular(f, limit=1 << 20).splitlines()
            except (ToolError, UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(lines, 1):
                try:
                    found = compiled.search(line, timeout=max(deadline - time.monotonic(), 1e-3))
                except TimeoutError:
                    raise ToolError(f"search {pattern!r} ran past {SEARCH_SECONDS:.0f}s; "
                                    "use a simpler pattern or a narrower path") from None
                if found:
                    hits.append(f"{f.relative_to(self.root)}:{n}: {line.strip()[:200]}")
                    if len(hits) >= 100:
                        return "\n".join(hits) + "\n[first 100 matches]"
        return "\n".join(hits) if hits else "no matches"

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        target = self._resolve(path)
        try:
            text = _read_regular(target)
        except UnicodeDecodeError:
            raise ToolError(f"{path}: not a text file") from None
        count = text.count(old_text) if old_text else 0
        if count != 1:
            raise ToolError(f"{path}: old_text occurs {count} times; it must occur exactly once")
        new = text.replace(old_text, new_text, 1)
        if len(new.encode()) > MAX_WRITE:
            raise ToolError(f"{path}: the edited file would be over {MAX_WRITE} bytes")
        _write_regular(target, new)
        return f"edited {path}"

    def write_file(self, path: str, content: str) -> str:
        if len(content.encode()) > MAX_WRITE:
            raise ToolError(f"{path}: content over {MAX_WRITE} bytes")
        target = self._resolve(path, must_exist=False)
        if target.is_dir():
            raise ToolError(f"{path}: is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_regular(target, content)
        os.chown(target, self.sandbox.uid, self.sandbox.uid)
        return f"wrote {len(content)} characters to {path}"

    def run_tests(self, tests: list[str] | None = None) -> str:
        if tests is not None and (not isinstance(tests, list) or not all(isinstance(t, str) for t in tests)):
            raise ToolError("tests must be a list of pytest node ids or paths", "malformed_tool_call")
        if tests and any(t.startswith("-") for t in tests):
            raise ToolError("tests must be node ids or paths, not options", "malformed_tool_call")
        start = time.perf_counter()
        try:
            result, outcomes = run_pytest(self.sandbox, self.row.import_root, tests or None)
        finally:
            self.test_seconds += time.perf_counter() - start
        self.last_outcomes = outcomes
        failed = sorted(t for t, o in outcomes.items() if o in ("failed", "error"))
        text = result.output
        if len(text) > MAX_OUTPUT:
            text = "[... output cut ...]\n" + text[-MAX_OUTPUT:]
        if result.timed_out:
            raise ToolError(f"tests ran past {self.sandbox.limits.wall_s:.0f}s and were killed\n{text}", "test_timeout")
        if failed:
            self._pending_failure = f"{len(failed)} tests failed: " + ", ".join(failed[:5])
        return text

    def submit(self) -> str:
        self.submitted = True
        return "submitted"
