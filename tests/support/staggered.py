"""Sampling through the project's transformers backend with requests that arrive while a batch decodes.

Each prompt is its own request (n completions at T = 1, its own seed and max_tokens), sent 20 ms after
the previous one: prompts are prefilled apart (left padding of different lengths) and then merged into
the running batch, the path whose log-probs the trainer must reproduce exactly.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.protocol import GenerateRequest, GenerateResponse
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.model.chat_template import template_ids


async def sample_staggered(model_dir: Path, chats: list[list[dict]], max_tokens: list[int], n: int = 2
                           ) -> tuple[TransformersBackend, list[list[int]], list[GenerateResponse]]:
    """(the closed backend, for its tokenizer; each chat's prompt ids; each chat's response)."""
    backend = TransformersBackend(ModelConfig(path=str(model_dir), dtype="float32"),
                                  TransformersBackendConfig(max_batch_size=4, batch_wait_ms=0), seed=0)
    prompts = [template_ids(backend.tokenizer, chat) for chat in chats]
    try:
        tasks = []
        for i, (prompt, tokens) in enumerate(zip(prompts, max_tokens)):
            request = GenerateRequest(prompt_token_ids=prompt, n=n, temperature=1.0, max_tokens=tokens, seed=i)
            tasks.append(asyncio.create_task(backend.generate(request)))
            await asyncio.sleep(0.02)
        responses = await asyncio.gather(*tasks)
    finally:
        await backend.close()
    return backend, prompts, list(responses)
