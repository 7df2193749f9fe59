"""The default agent program under `vf-eval feature-deletion`: verifiers' own tool-calling chat loop.

It is the built-in `null` harness (a plain chat loop over the task's MCP tools: no bash, no edit
tool of its own, so the only tools are feature-deletion's, all running in the project's sandbox),
exported by the package so that it is the taskset's default instead of `bash` (which would hand
the model an unsandboxed shell on the host under the subprocess runtime).

One difference: on the host (`--env.agent.runtime.type subprocess`) the chat program runs on the
interpreter that runs verifiers, which already has every package the program declares (they are
verifiers' own dependencies), instead of `uv sync --script` per runtime, which needs a package
index and took 15-34 s per rollout. Remote runtimes keep verifiers' uv path unchanged.
"""

from __future__ import annotations

import hashlib
import sys

from verifiers.v1.harnesses.null.harness import NullHarness
from verifiers.v1.runtimes import Runtime


class _HostInterpreter:
    """A subprocess runtime whose PEP 723 scripts run on this interpreter instead of a fresh uv environment."""

    def __init__(self, runtime: Runtime):
        self._runtime = runtime

    def __getattr__(self, name):
        return getattr(self._runtime, name)

    async def prepare_uv_script(self, script: str | bytes, env: dict[str, str] | None = None, *,
                                activate: bool = True) -> list[str]:
        data = script.encode() if isinstance(script, str) else script
        path = f"vf-script-{hashlib.sha256(data).hexdigest()[:16]}.py"
        await self._runtime.write(path, data)
        return [sys.executable, path]


class FeatureDeletionHarness(NullHarness):
    async def setup(self, runtime: Runtime) -> None:
        if runtime.type != "subprocess":
            await super().setup(runtime)

    async def launch(self, ctx, trace, runtime: Runtime, *args, **kwargs):
        host = _HostInterpreter(runtime) if runtime.type == "subprocess" else runtime
        return await super().launch(ctx, trace, host, *args, **kwargs)
