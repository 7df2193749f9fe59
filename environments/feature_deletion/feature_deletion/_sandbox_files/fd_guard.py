"""The grader's audit hook (registered from C, `fd_hook.c`), installed before any of the task's code loads.

Standard library only; it runs inside the sandbox: the first plugin of a grading pytest run (`-p fd_guard`)
and the first thing the replay driver does. FD_GUARD=<json {"path": [[first line, last line], ...]}> names
the lines the agent wrote (the definitions it rebuilt and the helpers it added, as the grader parsed them).

While one of those lines is running (anywhere on the stack), a restricted event ends the process at once
(`os._exit(EXIT)`, which no `except` catches) with one line on stderr: code compiled or executed from a
string, frames and code objects (`sys._getframe`, `tb_frame`, `gi_frame`, `__code__`), tracing, `gc`
introspection, `ctypes`, processes, sockets, signals, attributes set on functions (`__defaults__`, `__code__`), files
opened for writing. What runs while a module is imported (the import system, a module's top level) is not
restricted: agent code can only import standard modules and the package's own, which the scope check allows.

Processes are refused more widely: once a file the agent wrote has been loaded (its module's code executed), a
process event (exec, spawn, fork, `os.system`, `subprocess.Popen`, signals to other processes) ends the process
unless one of the task's own test files is on the stack and no agent line is, whatever else the stack holds: an
exit handler the agent registered (`atexit.register(os.execl, "/bin/sh", ...)`) runs with no frame of it on the
stack, and a callable that C code calls has no Python caller at all. FD_GUARD_TESTS=<json [path, ...]> names
those test files (none in the checks' replay, which starts no process). `os.write` and `os._exit` raise no audit
event in CPython 3.11-3.13: the descriptors the grader reads are kept from agent code instead (the replay opens
its results file only once no agent code runs, `_sandbox_files/fd_calls.py`).

Code is made narrowly too: once a file the agent wrote has been loaded, compiling or executing code (`compile`,
`exec`, `eval`) ends the process unless the caller is the import system, pytest's assertion rewriting or one of the
standard library's code generators (CODE_MAKERS), whoever is on the stack.

This is defence in depth: the verdict never rests on what a process that ran agent code says (the
grader compares the replayed programs' results itself); the hook makes the cheap attacks fail loudly.
CPython 3.11 audits neither `__globals__` reads nor `sys.modules` lookups, so those stay with the scope
check.
"""

import json
import os
import re
import sys

EXIT = 86
EVENTS = frozenset({
    "compile", "exec", "import", "open", "sys._getframe", "sys._current_frames", "sys._current_exceptions",
    "sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.excepthook", "sys.unraisablehook",
    "object.__getattr__", "object.__setattr__", "object.__delattr__", "function.__new__", "code.__new__",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.freeze", "builtins.input", "builtins.breakpoint",
    "marshal.loads", "marshal.load", "marshal.dumps", "pickle.find_class", "os.system", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "os.putenv", "os.unsetenv", "os.chdir", "os.chmod", "os.chown", "os.remove",
    "os.rename", "os.rmdir", "os.truncate", "os.link", "os.symlink", "os.mkdir", "os.utime", "subprocess.Popen",
    "resource.setrlimit", "signal.pthread_kill", "signal.set_wakeup_fd", "setopencode", "cpython.run_command",
    "cpython.run_file", "cpython.run_module", "cpython.run_startup", "cpython.PyInterpreterState_New",
    "cpython._PySys_ClearAuditHooks", "faulthandler.enable", "faulthandler.dump_traceback_later",
    "sys.monitoring.register_callback", "tempfile.mkstemp", "tempfile.mkdtemp", "shutil.rmtree", "shutil.move",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.chown",
    "shutil.make_archive", "shutil.unpack_archive",
})
PREFIXES = ("ctypes.", "socket.", "os.exec", "os.spawn", "os.posix_spawn", "pty.", "winreg.", "mmap.", "syslog.",
            "sqlite3.", "urllib.", "http.", "ftplib.", "smtplib.", "telnetlib.", "poplib.", "imaplib.", "nntplib.",
            "webbrowser.", "_winapi.", "msvcrt.", "os.add_dll_directory", "os.listxattr", "os.setxattr")
DENY_IMPORTS = frozenset({"ctypes", "_ctypes", "gc", "subprocess", "_posixsubprocess", "socket", "_socket",
                          "multiprocessing", "_multiprocessing", "pty", "signal", "_signal", "faulthandler",
                          "tracemalloc", "_tracemalloc", "resource", "mmap", "_thread", "threading"})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PROCESS_EVENTS = frozenset({"os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "subprocess.Popen",
                            "signal.pthread_kill"})
PROCESS_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn", "pty.")
CODE_EVENTS = frozenset({"compile", "exec"})
_STDLIB = os.path.dirname(os.__file__)
# Once the agent's code has loaded, code is made only by these callers (the frame that calls compile/exec/eval),
# whoever is on the stack below them (and besides, install's `makes_code`): the standard library's code generators,
# whose text is built from validated identifiers (namedtuple, dataclasses), never executed (ast.parse) or parsed
# first to a dotted name (inspect reading a builtin's text signature, as toolz's `curry` does for every builtin it
# wraps; gettext turning a catalogue's plural formula into a function, after checking its every token, as humanize's
# `activate` does). The agent's own lines may call them too. An allow-list, because a caller that is not the agent's can be
# made to evaluate the agent's text: `typing.get_type_hints` evaluates a string annotation, and a C iterator the
# agent armed runs it from the frame of whoever takes its first item, with no agent line on the stack (red team 3,
# G3).
CODE_MAKERS = frozenset({
    (_STDLIB + "/collections/__init__.py", "namedtuple"), (_STDLIB + "/dataclasses.py", "_create_fn"),
    (_STDLIB + "/dataclasses.py", "add_fns_to_class"), (_STDLIB + "/ast.py", "parse"),
    (_STDLIB + "/inspect.py", "wrap_value"), (_STDLIB + "/gettext.py", "c2py"),
})
DOCTEST = _STDLIB + "/doctest.py"
MAKER_CALL = re.compile(rb"(?:builtins\.)?(?:exec|eval|compile)\s*\(")


def install(lines, tests=()):
    """Install the hook for {path: [[first, last], ...]} and the test files `tests`; both live only in its
    closure."""
    ranges = {path: tuple((int(a), int(b)) for a, b in spans) for path, spans in lines.items()}
    # The doctest lines (after `>>>` or `...`) of the package's files as they are on disk, the agent's lines left
    # out: doctest runs an example only where its text is written there (red team 4, D4: a docstring set at run time
    # from bytes the agent decoded was run as code). Read here, before any code of the task runs and could write.
    documented = set()
    dirs = {os.path.dirname(path) for path in ranges}
    for top in {d for d in dirs if not any(d.startswith(other + os.sep) for other in dirs)}:
        for root, _, files in os.walk(top):
            for file in files:
                if not file.endswith(".py"):
                    continue
                path = os.path.join(root, file)
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        text = f.read().splitlines()
                except OSError:
                    continue
                spans = ranges.get(path, ())
                documented.update(line.strip()[3:].strip() for i, line in enumerate(text, 1)
                                  if line.lstrip().startswith((">>>", "..."))
                                  and not any(a <= i <= b for a, b in spans))
    trusted = frozenset(tests)
    getframe, write, exit_now = sys._getframe, os.write, os._exit
    # The process's stderr as it is now: pytest's capture later points descriptor 2 at a file of its own, which
    # `os._exit` leaves unread, and the refusal's line with it.
    stderr = os.dup(2)
    busy = [False]
    loaded = [False]  # a file the agent wrote has been executed: its code may run from now on, from anywhere

    def agent_running(frame):
        """The innermost frame running a line the agent wrote, unless a module is being imported above it (the
        import system's own work and a standard module's top level: `warnings.warn` imports `tokenize`, whose
        namedtuples compile code)."""
        while frame is not None:
            if importing(frame):
                return None
            spans = ranges.get(frame.f_code.co_filename)
            if spans is not None:
                line = frame.f_lineno
                for first, last in spans:
                    if first <= line <= last:
                        return frame
            frame = frame.f_back
        return None

    def restricted(event, args, caller):
        if event == "import":
            return str(args[0]).partition(".")[0] in DENY_IMPORTS
        if event == "open":
            mode, flags = args[1], args[2]
            if isinstance(mode, str):
                return any(c in mode for c in "wax+")
            return isinstance(flags, int) and bool(flags & WRITE_FLAGS)
        return True

    def importing(frame):
        """Whether `frame` is the import system loading a module, not one of its helpers called by other code: red team
        4 compiled text with `SourceLoader.source_to_code` and ran it with `_call_with_frames_removed(exec, ...)`,
        both reached through `sys.modules`, and a bare `<frozen importlib` frame stopped the walk and made code."""
        return frame.f_code.co_filename.startswith("<frozen importlib") and frame.f_code.co_name == "_load_unlocked"

    def loads_module(frame):
        """The import system compiling a module's file or running its code, each from where a module's load does it:
        `_call_with_frames_removed` called by `source_to_code` called by `get_code`, or by `exec_module` called by
        `_load_unlocked` (which execs a frozen module itself)."""
        names = []
        while frame is not None and len(names) < 3 and frame.f_code.co_filename.startswith("<frozen importlib"):
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        chains = (("_call_with_frames_removed", "source_to_code", "get_code"),
                  ("_call_with_frames_removed", "exec_module", "_load_unlocked"),
                  ("exec_module", "_load_unlocked"))  # a frozen module's code, from the interpreter
        return any(tuple(names[: len(chain)]) == chain for chain in chains)

    sources = {}

    def calls_maker(frame):
        """Whether the call `frame` is making right now is written `exec(...)`, `eval(...)` or `compile(...)` in its
        file. A C callable has no frame of its own, so whoever takes the first item of a C chain the agent built
        (`map(exec, [text])` inside a returned iterator) is the caller the hook sees (red team 4, C2: a test's
        `list(iterate(...))`): the span of the frame's current instruction tells the two apart."""
        code = frame.f_code
        try:
            line, end, col, end_col = list(code.co_positions())[frame.f_lasti // 2]
        except (IndexError, ValueError, TypeError):
            return False
        if line is None or end is None or col is None:
            return False
        if code.co_filename not in sources:
            try:
                with open(code.co_filename, "rb") as f:  # positions count UTF-8 bytes
                    sources[code.co_filename] = f.read().splitlines()
            except OSError:
                sources[code.co_filename] = []
        text = sources[code.co_filename]
        if not 0 < line <= len(text):
            return False
        return MAKER_CALL.match(text[line - 1][col:]) is not None

    def makes_code(frame):
        """Whether `frame`, the caller of compile, exec or eval, may make code once the agent's code has loaded: the
        import system loading a module; otherwise only a frame whose current call is written as that builtin's call
        (`calls_maker`) and is one of CODE_MAKERS, pytest's assertion rewriting, a line of the task's test files
        (toolz's tests `exec` the functions they inspect), or doctest running an example written in the package's
        files outside the agent's lines (toolz's tests `doctest.testmod` the package: the docstring of a definition
        the agent wrote is its text, run as code)."""
        name = frame.f_code.co_filename
        if loads_module(frame):
            return True
        if not calls_maker(frame):
            return False
        if name.endswith("/_pytest/assertion/rewrite.py") or name in trusted:
            return True
        if name.startswith(_STDLIB + os.sep) and "/site-packages/" not in name and under_load(frame):
            # The standard library making code while a module is loaded, with no agent line above the load (those
            # are refused first): `typing` compiles the string of a forward reference (`TypeVar("T", bound="X")`,
            # a NamedTuple's string annotations) when humanize's modules are imported.
            return True
        if name == DOCTEST and frame.f_code.co_name == "__run":
            # Whose docstring an example came from, doctest does not reliably say (`__test__` entries are placed in
            # the module testmod was given): an example runs where each of its lines is documented.
            source = getattr(frame.f_locals.get("example"), "source", None)
            if not isinstance(source, str):
                return False
            return all(line.strip() in documented for line in source.splitlines() if line.strip())
        return (name, frame.f_code.co_name) in CODE_MAKERS

    def under_load(frame):
        while frame is not None:
            if importing(frame):
                return True
            frame = frame.f_back
        return False

    def test_running(frame):
        while frame is not None:
            if frame.f_code.co_filename in trusted:
                return True
            frame = frame.f_back
        return False

    def place(caller):
        return "no Python caller" if caller is None else f"{caller.f_code.co_filename}:{caller.f_lineno}"

    def refuse(message):
        write(stderr, f"\nfd-guard: {message}: refused\n".encode())
        exit_now(EXIT)

    def hook(event, args):
        if busy[0]:
            return
        if event == "exec" and not loaded[0]:
            loaded[0] = getattr(args[0], "co_filename", None) in ranges
        process = event in PROCESS_EVENTS or event.startswith(PROCESS_PREFIXES)
        if not (process or event in EVENTS or event.startswith(PREFIXES)):
            return
        busy[0] = True
        try:
            try:
                caller = getframe(1)
            except ValueError:  # called from C with no Python frame: an exit handler, a finaliser
                caller = None
            agent = agent_running(caller)
            # a generator's own work on what it makes (namedtuple also reads its caller's frame for the class's
            # module and sets its `__new__`'s defaults), whoever called it
            generated = caller is not None and (caller.f_code.co_filename, caller.f_code.co_name) in CODE_MAKERS
            if agent is not None and not generated and restricted(event, args, caller):
                where = f"{agent.f_code.co_filename}:{agent.f_lineno}"
                via = "" if caller is agent else f" (through {caller.f_code.co_filename}:{caller.f_lineno})"
                refuse(f"{event} from the agent's code at {where}{via}")
            if event in CODE_EVENTS and loaded[0] and (caller is None or not makes_code(caller)):
                refuse(f"{event} of code that is not a file, after the agent's code was loaded, from {place(caller)}")
            if process and loaded[0] and not test_running(caller):
                refuse(f"{event} after the agent's code was loaded, from {place(caller)}, not from a test")
        finally:
            busy[0] = False

    # Registered from C (fd_hook.c), which calls `hook` only for the events it watches and with room above the
    # recursion limit: `sys.addaudithook` would call it in a frame of its own on every event, which code can detect
    # (red team 13, R13: `id()` one frame below the recursion limit raised RecursionError only under the grader).
    try:
        import fd_hook
    except ImportError:  # `python -S` (sandbox.Traits.no_site): the runner venv's site-packages, which holds it, is
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"  # not on the path (`site` puts it there)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "lib", version,
                                        "site-packages"))
        try:
            import fd_hook
        finally:
            del sys.path[0]

    fd_hook.install(hook, tuple(sorted(EVENTS | PROCESS_EVENTS)), PREFIXES + PROCESS_PREFIXES)


def install_from_env():
    spec = os.environ.get("FD_GUARD")
    if spec:
        install(json.loads(spec), json.loads(os.environ.get("FD_GUARD_TESTS", "[]")))


# As a pytest plugin (`-p fd_guard`) it is imported while pytest parses its arguments: before conftest files,
# test modules and the package under test are.
install_from_env()
