"""The grader's audit hook (`_sandbox_files/fd_guard.py`), in a real interpreter: restricted events raised
while a line the agent wrote runs end the process at once with its exit status, whatever the code catches;
the same events from other code, and what plain code and the import system do, pass."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from feature_deletion.behaviour import GUARD_EXIT
from feature_deletion.sandbox import FILES

PRELUDE = "import json, os, sys\n"


def run(tmp_path, agent: str, other: str = "") -> subprocess.CompletedProcess:
    """`agent` is the body of a function the guard watches (module agent.py), called from a module it does not."""
    body = textwrap.indent(textwrap.dedent(agent).strip("\n"), "    ")
    source = PRELUDE + "\n\ndef written_by_agent():\n" + body + "\n    return 'done'\n"
    (tmp_path / "agent.py").write_text(source)
    first = source.splitlines().index("def written_by_agent():") + 1
    spans = {str(tmp_path / "agent.py"): [[first, len(source.splitlines())]]}
    (tmp_path / "main.py").write_text(textwrap.dedent(other) + "\nimport agent\nprint(agent.written_by_agent())\n")
    return subprocess.run([sys.executable, "-c", "import fd_guard; import runpy; runpy.run_path('main.py')"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": f"{FILES}:{tmp_path}", "FD_GUARD": json.dumps(spans)})


@pytest.mark.parametrize("name, code", [
    ("exec of a string", "exec('x = 1')"),
    ("builtins reached through enum.bltns", "import enum\nenum.bltns.exec('x = 1')"),
    ("compile", "compile('1', '<s>', 'eval')"),
    ("frames", "sys._getframe()"),
    ("frames through a traceback", "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame"),
    ("a generator's frame", "(x for x in []).gi_frame"),
    ("code objects", "written_by_agent.__code__"),
    ("tracing", "sys.settrace(None)"),
    ("gc", "import gc\ngc.get_objects()"),
    ("ctypes", "import ctypes"),
    ("a file written", "open('/tmp/fd-guard-probe', 'w')"),
    ("a process", "os.system('true')"),
    ("a function's defaults replaced", "f = lambda x=1: x\nf.__defaults__ = (2,)"),
    ("caught and swallowed", "try:\n    exec('x = 1')\nexcept BaseException:\n    pass"),
])
def test_restricted_events_from_the_agents_lines_end_the_process(tmp_path, name, code):
    proc = run(tmp_path, code)
    assert proc.returncode == GUARD_EXIT, (name, proc.stdout, proc.stderr)
    assert "fd-guard:" in proc.stderr and "agent.py" in proc.stderr and "done" not in proc.stdout


def test_plain_code_imports_and_reads_pass(tmp_path):
    code = """
    import re, fractions, decimal, statistics
    text = open(__file__).read()
    assert re.sub('a', 'b', 'aa') == 'bb' and len(text) > 10
    return_value = sorted({3, 1, 2}, key=lambda x: -x)
    """
    proc = run(tmp_path, code)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr


def test_the_same_events_from_other_code_pass(tmp_path):
    """Only the agent's lines are watched: the grader's own code, the runner and the standard library may
    compile, read frames and write files (pytest does all three)."""
    other = """
    import sys
    exec('x = 1')
    sys._getframe()
    open('scratch.txt', 'w').write('ok')
    """
    proc = run(tmp_path, "x = 2", other)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
    assert (tmp_path / "scratch.txt").read_text() == "ok"
