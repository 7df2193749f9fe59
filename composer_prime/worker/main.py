"""`uv run worker @ configs/worker/<...>.toml`: a volunteer worker.

  join (token) -> pull the newest verified weight version -> loop:
      roll out `prompts_per_batch` prompts x `samples_per_prompt` completions on the local engine
      (rollout/single_turn.py, as the run's own inference source does), attach TOPLOC proofs when the
      run asks for them, sign the batch, journal it, upload it to `rollouts/<worker_id>/<batch_id>.msgpack`
      through a grant from the run (coordinator/grants.py: no store credential here);
      pick up newer weight versions that heartbeats announce.

Disconnects: every request to the coordinator, the servers and the store is retried with
exponential back-off; a restart uploads the journal's pending batches first (journal.py).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
from transformers import PreTrainedTokenizerBase

from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, make_sources
from composer_prime.broadcast.manifest import BroadcastError
from composer_prime.cli import run_cli
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.worker import WorkerConfig
from composer_prime.coordinator.grants import upload_batch
from composer_prime.coordinator.protocol import (Heartbeat, HeartbeatResponse, JoinRequest, JoinResponse,
                                                 heartbeat_message)
from composer_prime.errors import UserError
from composer_prime.model.load import resolve_device
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.rollout.envs import Environment, load_environment
from composer_prime.rollout.sampler import Sampler
from composer_prime.rollout.single_turn import rollout_group
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample, signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.toploc import build_proofs, require_toploc
from composer_prime.worker.journal import Journal

logger = logging.getLogger("composer_prime.worker")
T = TypeVar("T")


async def retry(what: str, call: Callable[[], Awaitable[T]], first_s: float, fatal=(UserError,)) -> T:
    """Call until it succeeds, backing off 1, 2, 4 ... 60 s; errors in `fatal` end the worker."""
    delay = first_s
    while True:
        try:
            return await call()
        except fatal:
            raise
        except Exception as exc:  # noqa: BLE001 - network and store errors are all worth another try
            logger.warning("%s failed (%s); retrying in %.0f s", what, exc, delay)
            await asyncio.sleep(delay)
            delay = min(60.0, delay * 2)


def new_batch_id() -> str:
    """Unique, and sorting in creation order (the run verifies batches in upload order: verify/inbox.py)."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


class Worker:
    def __init__(self, config: WorkerConfig):
        self.config = config
        self.key = keys.load_or_create_private_key(config.state_dir / "worker.key")
        self.http = httpx.AsyncClient(base_url=config.run_url.rstrip("/"), timeout=30)
        self.journal = Journal(config.state_dir / "journal")
        self.version = -1
        self.announced = -1
        self.banned = False

    async def join(self) -> JoinResponse:
        request = JoinRequest(join_token=self.config.join_token, worker_id=self.config.worker_id,
                              public_key=keys.public_hex(self.key))

        async def call() -> JoinResponse:
            response = await self.http.post("/join", json=request.model_dump())
            if response.status_code in (400, 403, 409):  # a wrong token or a taken id will not fix itself
                raise UserError(f"run at {self.config.run_url} refused to join: {response.json().get('detail')}")
            response.raise_for_status()
            return JoinResponse.model_validate(response.json())

        return await retry("join", call, self.config.retry_s)

    async def heartbeat(self) -> HeartbeatResponse:
        now = time.time()
        uploaded = self.journal.uploaded_count()
        signature = self.key.sign(heartbeat_message(self.config.worker_id, now, self.version, uploaded)).hex()
        beat = Heartbeat(worker_id=self.config.worker_id, time=now, weight_version=self.version,
                         batches_uploaded=uploaded, signature=signature)
        response = await self.http.post("/heartbeat", json=beat.model_dump())
        response.raise_for_status()
        answer = HeartbeatResponse.model_validate(response.json())
        self.announced, self.banned = answer.current_version, answer.banned
        return answer

    async def heartbeats(self) -> None:
        while True:
            try:
                await self.heartbeat()
            except Exception as exc:  # noqa: BLE001 - a missed beat is logged, the next one may get through
                logger.warning("heartbeat failed: %s", exc)
            await asyncio.sleep(self.config.heartbeat_s)

    @staticmethod
    def _log_corrupt(report) -> None:
        for index, source in report.corrupt:
            logger.warning("weights v%d: shard %d from %s failed its hash; fetched again elsewhere",
                           report.version, index, source)

    async def upload(self, batch_id: str, data: bytes) -> None:
        await retry(f"upload {batch_id}", lambda: upload_batch(self.http, self.key, self.config.worker_id, batch_id, data),
                    self.config.retry_s)
        self.journal.mark_uploaded(batch_id)

    async def sample(self, sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, info: JoinResponse,
                     rng: random.Random, prover: ModelScorer | None) -> tuple[list[RolloutSample], int]:
        """One batch's samples (`prompts_per_batch` groups) and the weight version that sampled the last group."""
        sampling = SamplingConfig(temperature=info.temperature, max_tokens=info.max_tokens)
        examples, samples, version = env.examples("train"), [], self.version
        for _ in range(info.prompts_per_batch):
            index = rng.randrange(len(examples))
            group = await rollout_group(sampler, env, tokenizer, examples[index], sampling,
                                        n=info.samples_per_prompt, seed=rng.randrange(2**31))
            version, prompt = group.weight_version, group.prompt_ids
            for completion, score in zip(group.completions, group.scores, strict=True):
                proofs = []
                if prover is not None:
                    hidden = await asyncio.to_thread(prover.hidden_states, version, prompt + completion.token_ids)
                    proofs = build_proofs(hidden, len(prompt), info.proofs)
                samples.append(RolloutSample(prompt_ids=prompt, completion_ids=completion.token_ids,
                                             logprobs=completion.logprobs, reward=score.reward, example_id=index,
                                             proofs=proofs))
        return samples, version

    async def run(self) -> None:
        from transformers import AutoTokenizer

        from composer_prime.inference.backend import make_backend
        from composer_prime.configs.inference import InferenceConfig

        info = await self.join()
        for batch_id, data in self.journal.pending_batches():  # signed before a crash, not yet confirmed uploaded
            await self.upload(batch_id, data)
        # Weights only through the run's servers: this worker holds no store credential (coordinator/grants.py).
        client = BroadcastClient(make_sources(info.broadcast_servers), keys.parse_public_key(info.run_public_key),
                                 self.config.state_dir / "broadcasts")
        report = await retry("weights", lambda: asyncio.to_thread(client.fetch, None), self.config.retry_s)
        self._log_corrupt(report)
        self.version = report.version
        logger.info("weights v%d ready at %s", report.version, report.path)
        backend = make_backend(InferenceConfig(
            model=ModelConfig(path=str(report.path), dtype=self.config.dtype, device=self.config.device),
            backend=self.config.backend, seed=self.config.seed))
        tokenizer = AutoTokenizer.from_pretrained(report.path)
        paths = {report.version: report.path}
        prover = None
        if info.proofs is not None:
            require_toploc()
            # Proofs come from a float32 forward of the sampled tokens, as the verifier computes them.
            device = resolve_device(ModelConfig(path=str(report.path), device=self.config.device))
            prover = ModelScorer(lambda version: paths[version], keep=1, device=str(device))
        env = load_environment(EnvConfig(id=info.env_id, args=info.env_args))
        beats = asyncio.create_task(self.heartbeats())
        rng = random.Random(f"{self.config.seed}/{self.config.worker_id}/{self.journal.uploaded_count()}")
        done = 0
        per_version: dict[int, int] = {}
        try:
            while self.config.max_batches is None or done < self.config.max_batches:
                if self.banned:
                    raise UserError("this worker was banned by the run")
                if self.announced > self.version:
                    try:
                        report = await asyncio.to_thread(client.fetch, self.announced)
                        self._log_corrupt(report)
                        await backend.load_weights(str(report.path), report.version)
                        self.version = report.version
                        paths[report.version] = report.path
                    except BroadcastError as exc:
                        logger.warning("could not get version %d yet: %s", self.announced, exc)
                limit = self.config.max_batches_per_version
                if limit is not None and per_version.get(self.version, 0) >= limit:
                    await asyncio.sleep(self.config.heartbeat_s)  # heartbeats announce the next version
                    continue
                batch_id = new_batch_id()
                samples, version = await self.sample(backend, env, tokenizer, info, rng, prover)
                batch = RolloutBatch(worker_id=self.config.worker_id, batch_id=batch_id, weight_version=version,
                                     temperature=info.temperature, samples=samples)
                data = signed_bytes(batch, self.key)
                self.journal.add(batch_id, data)
                await self.upload(batch_id, data)
                done += 1
                per_version[version] = per_version.get(version, 0) + 1
                logger.info("uploaded batch %s (%d samples, weights v%d)", batch_id, len(samples), version)
            await self.heartbeat()  # a last beat, so the run sees the final upload count
        finally:
            beats.cancel()
            client.close()
            await backend.close()
            await self.http.aclose()


def main(config: WorkerConfig) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if config.num_threads:
        import torch

        torch.set_num_threads(config.num_threads)
    asyncio.run(Worker(config).run())


def cli() -> None:
    run_cli(WorkerConfig, main)


if __name__ == "__main__":
    cli()
