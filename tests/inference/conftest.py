"""A tiny Qwen3 model with a locally trained byte-level BPE tokenizer, and servers to test against.

Servers are real: uvicorn on 127.0.0.1 on a free port, in a thread, stopped in teardown.
"""

from __future__ import annotations

import asyncio
import random
import string
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import torch
import uvicorn
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, PreTrainedTokenizerFast, Qwen3Config

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.server import create_app
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.utils.net import free_port

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus(lines: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["the", "reverse", "text", "answer", "user", "assistant", "hello", "world", "abc", "please"]
    return [
        " ".join(rng.choice(words) if rng.random() < 0.5 else "".join(rng.choices(string.ascii_lowercase, k=4))
                 for _ in range(rng.randint(3, 10)))
        for _ in range(lines)
    ]


def build_tiny_model(path: Path) -> Path:
    """Tokenizer (vocab 300, ChatML) and a randomly initialised 2-layer Qwen3 with tied embeddings."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_corpus(400), trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    ))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], chat_template=CHATML,
    )
    eos, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=eos, pad_token_id=pad,
        initializer_range=0.2,  # peaked next-token distributions: greedy ties would make tests flaky
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    tokenizer.save_pretrained(path, save_jinja_files=False)
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def reference_model(tiny_model_dir):
    """The same checkpoint in float64, for independent log-prob references."""
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64).eval()


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir):
    return AutoTokenizer.from_pretrained(tiny_model_dir)




@dataclass
class RunningServer:
    url: str
    backend: TransformersBackend


class _ServerThread:
    """uvicorn serving `create_app(backend)` on its own event loop in a thread."""

    def __init__(self, model_dir: Path, **backend_options):
        self.port = free_port()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._model_dir, self._options = model_dir, backend_options
        self._thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - surfaced by start()
            self.error = exc
            self.ready.set()

    async def _serve(self) -> None:
        self.backend = TransformersBackend(
            ModelConfig(path=str(self._model_dir)), TransformersBackendConfig(**self._options), seed=0
        )
        config = uvicorn.Config(create_app(self.backend), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        serving = asyncio.create_task(self.server.serve())
        while not self.server.started and not serving.done():
            await asyncio.sleep(0.01)
        self.ready.set()
        try:
            await serving
        finally:
            await self.backend.close()

    def start(self) -> RunningServer:
        self._thread.start()
        self.ready.wait(60)
        if self.error is not None or not getattr(getattr(self, "server", None), "started", False):
            raise RuntimeError(f"test server did not start: {self.error!r}")
        return RunningServer(url=f"http://127.0.0.1:{self.port}", backend=self.backend)

    def stop(self) -> None:
        if getattr(self, "server", None) is not None:
            self.server.should_exit = True
        self._thread.join(30)


@pytest.fixture(scope="module")
def server(tiny_model_dir) -> Iterator[RunningServer]:
    """A shared server over the unchanged tiny model (tests must not load other weights into it).
    It decodes at most 4 sequences together, so requests queue, split and join running batches."""
    thread = _ServerThread(tiny_model_dir, max_batch_size=4)
    try:
        yield thread.start()
    finally:
        thread.stop()


@pytest.fixture
def fresh_server(tiny_model_dir) -> Iterator[RunningServer]:
    """A server of its own, for tests that change its weights."""
    thread = _ServerThread(tiny_model_dir, max_batch_size=16)
    try:
        yield thread.start()
    finally:
        thread.stop()


@pytest.fixture
def client(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


@pytest.fixture(scope="session")
def reference_logprobs(reference_model):
    """log p(completion token | prefix) from one plain float64 forward over prompt + completion, at
    temperature T (T = 0: the raw distribution, which greedy decoding reports).

    The float32 server is within ~2e-6 of it (eps 1.2e-7 x logits ~10 x 2 layers); tests allow 1e-4,
    which a wrong position id or mask (1e-2 and more) still fails."""

    def compute(prompt: list[int], completion: list[int], temperature: float, model=None) -> list[float]:
        model = model or reference_model
        with torch.no_grad():
            logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1].double()
        scaled = logits / (temperature if temperature > 0 else 1.0)
        return scaled.log_softmax(-1).gather(1, torch.tensor(completion)[:, None]).squeeze(1).tolist()

    return compute
