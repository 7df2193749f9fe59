"""A run as the verifier sees it, on the committed quickstart warm start and the reverse-text environment:
its key, assignments issued by the real Assigner, and honest batches sampled by the real engine a volunteer
runs (the transformers backend, keyed Gumbel-max)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from transformers import AutoTokenizer

from composer_prime import keys
from composer_prime.configs.coordinator import AssignmentsConfig
from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.rollout import EnvConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.verify import VerifyConfig
from composer_prime.coordinator.assign import Assigner
from composer_prime.coordinator.protocol import worker_id
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.orchestrator.volunteers import stop_token_ids
from composer_prime.rollout.envs import load_environment
from composer_prime.model.chat_template import template_ids
from composer_prime.verify.rollout_batch import Assignment, RolloutBatch, RolloutSample, SignedAssignment, signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.verifier import RolloutVerifier, RunSpec
from composer_prime.verify.worker_registry import WorkerRegistry

MODEL = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"
T, MAX_TOKENS, N, PROMPTS = 1.0, 16, 4, 2  # 8 samples a batch


@dataclass
class VerifyRun:
    run_key: object
    spec: RunSpec
    assigner: Assigner
    backend: TransformersBackend
    scorer: ModelScorer
    loop: asyncio.AbstractEventLoop

    def registry(self, path: Path, *names: str) -> tuple[WorkerRegistry, dict[str, tuple[str, object]]]:
        """A registry holding a worker per name: name -> (its id, its key)."""
        registry, workers = WorkerRegistry(path), {}
        for name in names:
            key = keys.generate_key()
            workers[name] = (worker_id(name, keys.public_hex(key)), key)
            registry.register(workers[name][0], keys.public_hex(key))
        return registry, workers

    def verifier(self, registry: WorkerRegistry, **config) -> RolloutVerifier:
        return RolloutVerifier(registry, self.scorer, VerifyConfig(**{"ban_min_samples": 1000, **config}),
                               self.scorer.model(0).config.vocab_size, self.spec)

    def assign(self, registry: WorkerRegistry, wid: str, version: int = 0) -> tuple[Assignment, bytes]:
        """An assignment issued while `version` is the announced one."""
        signed = self.assigner.issue(registry, wid, version)
        return msgspec.msgpack.decode(msgspec.msgpack.decode(signed, type=SignedAssignment).payload,
                                      type=Assignment), signed

    def honest(self, assignment: Assignment) -> list[RolloutSample]:
        """What an honest worker uploads for `assignment`: sample j drawn with noise (key, j)."""

        async def sample() -> list:
            return await asyncio.gather(*(self.backend.generate(GenerateRequest(
                prompt_token_ids=self.spec.prompt_of(example), n=N, max_tokens=MAX_TOKENS, temperature=T,
                stop_token_ids=sorted(self.spec.stop_ids), gumbel_key=assignment.key, gumbel_first_sample=slot * N))
                for slot, example in enumerate(assignment.example_ids)))

        responses = self.loop.run_until_complete(sample())
        return [RolloutSample(prompt_ids=self.spec.prompt_of(example), completion_ids=c.token_ids, logprobs=c.logprobs,
                              example_id=example)
                for example, response in zip(assignment.example_ids, responses, strict=True)
                for c in response.completions]

    @staticmethod
    def batch(wid: str, assignment: Assignment, signed: bytes, samples: list[RolloutSample], version: int = 1,
              temperature: float = T) -> RolloutBatch:
        return RolloutBatch(worker_id=wid, batch_id=assignment.assignment_id, assignment=signed, weight_version=version,
                            temperature=temperature, samples=samples)

    def upload(self, wid: str, key, registry: WorkerRegistry, version: int = 1) -> bytes:
        """An honest worker's signed upload of a fresh assignment."""
        assignment, signed = self.assign(registry, wid)
        return signed_bytes(self.batch(wid, assignment, signed, self.honest(assignment), version), key)


@pytest.fixture(scope="module")
def run():
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    examples = load_environment(EnvConfig(id="reverse-text")).examples("train")
    prompts: dict[int, list[int]] = {}

    def prompt_of(example: int) -> list[int] | None:
        if not 0 <= example < len(examples):
            return None
        return prompts.setdefault(example, template_ids(tokenizer, examples[example].prompt))

    run_key = keys.generate_key()
    spec = RunSpec(public_key=run_key.public_key(), temperature=T, top_p=1.0, max_tokens=MAX_TOKENS,
                   samples_per_prompt=N, stop_ids=frozenset(stop_token_ids(str(MODEL), tokenizer)), prompt_of=prompt_of)
    assigner = Assigner(run_key, len(examples), PROMPTS, N, T, 1.0, MAX_TOKENS, AssignmentsConfig(max_open=1000))
    scorer = ModelScorer(lambda version: MODEL)
    scorer._models[0] = scorer._models[1] = scorer.model(0)  # versions 0 and 1 are the same trusted weights here
    loop = asyncio.new_event_loop()
    backend = TransformersBackend(ModelConfig(path=str(MODEL), dtype="float32", device="cpu"),
                                  TransformersBackendConfig(max_batch_size=16))
    try:
        yield VerifyRun(run_key, spec, assigner, backend, scorer, loop)
    finally:
        loop.run_until_complete(backend.close())
        loop.close()
