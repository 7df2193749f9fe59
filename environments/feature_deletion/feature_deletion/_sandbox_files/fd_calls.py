"""Calls of the deleted functions, recorded with the gold code and replayed on the agent's.

Standard library only; it runs inside the sandbox.

As a pytest plugin (`-p fd_calls`, FD_CALLS_TARGETS=<json [[module, name], ...]>,
FD_CALLS_OUT=<path>): wraps each target function wherever a loaded module holds it, and writes
every call whose arguments and result (or raised exception type) serialise faithfully.

As a script (`python fd_calls.py CALLS.json`): reads [{"target", "args", "kwargs"}, ...], calls
each target on those arguments and prints one JSON line of encoded results after a marker. The
expected results are not among its inputs: the grader compares them in its own process.
"""

import importlib
import json
import os
import sys

MARKER = "fd-calls-results:"  # feature_deletion.behaviour.MARKER
MAX_CALLS = 200
_records = []


class Unserialisable(Exception):
    pass


def encode(x, depth=0):
    """A tagged JSON form that keeps exact types; anything else raises Unserialisable."""
    if depth > 20:
        raise Unserialisable("too deep")
    t = type(x)
    if t is str:
        try:
            x.encode("utf-8")  # a lone surrogate cannot be stored in the UTF-8 tasks file
        except UnicodeEncodeError:
            raise Unserialisable("str with surrogates") from None
    if x is None or t in (bool, int, str):
        return [t.__name__, x]
    if t is float:
        return ["float", repr(x)]
    if t is bytes:
        return ["bytes", x.hex()]
    if t in (list, tuple):
        return [t.__name__, [encode(i, depth + 1) for i in x]]
    if t in (set, frozenset):
        return [t.__name__, sorted((encode(i, depth + 1) for i in x), key=json.dumps)]
    if t is dict:
        return ["dict", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]]
    raise Unserialisable(t.__name__)


def decode(x):
    tag, value = x
    if tag in ("NoneType", "bool", "int", "str"):
        return value
    if tag == "float":
        return float(value)
    if tag == "bytes":
        return bytes.fromhex(value)
    if tag in ("list", "tuple", "set", "frozenset"):
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](decode(i) for i in value)
    if tag == "dict":
        return {decode(k): decode(v) for k, v in value}
    raise ValueError(tag)


def outcome(fn, args, kwargs):
    """The encoded result of fn(*args, **kwargs), or the raised exception's type."""
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return ["raises", type(exc).__module__ + "." + type(exc).__qualname__]
    try:
        return encode(result)
    except Unserialisable as exc:
        return ["unserialisable", str(exc)]


def _wrap(target, fn):
    def recorder(*args, **kwargs):
        try:
            entry = {"target": target, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
        except Unserialisable:
            return fn(*args, **kwargs)
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            entry["result"] = ["raises", type(exc).__module__ + "." + type(exc).__qualname__]
            _remember(entry)
            raise
        try:
            entry["result"] = encode(result)
            _remember(entry)
        except Unserialisable:
            pass
        return result

    recorder.__wrapped__ = fn
    recorder.__name__ = getattr(fn, "__name__", "recorder")
    return recorder


def _remember(entry):
    if len(_records) < MAX_CALLS and entry not in _records:
        _records.append(entry)


def pytest_configure(config):
    targets = json.loads(os.environ.get("FD_CALLS_TARGETS", "[]"))
    for module, name in targets:
        fn = getattr(importlib.import_module(module), name)
        wrapper = _wrap([module, name], fn)
        for mod in list(sys.modules.values()):
            namespace = getattr(mod, "__dict__", {})
            for key, value in list(namespace.items()):
                if value is fn:
                    namespace[key] = wrapper


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("FD_CALLS_OUT")
    if path:
        with open(path, "w") as f:
            json.dump(_records, f)


def main():
    with open(sys.argv[1]) as f:
        calls = json.load(f)
    results = []
    for call in calls:
        module, name = call["target"]
        try:
            fn = getattr(importlib.import_module(module), name)
            results.append(outcome(fn, decode(call["args"]), decode(call["kwargs"])))
        except Exception as exc:  # noqa: BLE001 - an import failure is this call's outcome
            results.append(["raises", type(exc).__module__ + "." + type(exc).__qualname__])
    sys.stdout.write("\n" + MARKER + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
