"""`uv run worker @ configs/worker/<...>.toml`: a volunteer worker.

  join (token; the answer must be signed by the run key this worker was given) -> pull the newest
  verified weight version -> loop:
      ask for an assignment (coordinator/assign.py: which examples, and the key of the sampling noise),
      journal it, roll out each assigned example `samples_per_prompt` times on the local engine
      (rollout/single_turn.py, as the run's own inference source does), drawing sample j of the batch by
      Gumbel-max with noise (key, j) so the run can check the tokens were sampled (verify/sampled.py),
      attach TOPLOC proofs when the run asks for them, sign the batch, journal it, upload it to
      `rollouts/<worker_id>/<assignment_id>.msgpack` through a grant from the run (coordinator/grants.py:
      no store credential here); pick up newer weight versions that heartbeats announce, and before
      sampling an assignment, the version it names (the oldest the run accepts for it).

Disconnects: every request to the coordinator, the servers and the store is retried with
exponential back-off; a restart uploads the journal's pending batches first, then samples the
assignment it held (journal.py): keyed sampling draws the same tokens again.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
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
from composer_prime.coordinator.grants import GrantRefused, upload_batch
from composer_prime.coordinator.protocol import (AnswerRefused, AssignRequest, Heartbeat, HeartbeatResponse,
                                                 JoinRequest, JoinResponse, assign_message, heartbeat_message,
                                                 open_answer, worker_id)
from composer_prime.errors import UserError
from composer_prime.model.load import resolve_device
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.rollout.envs import Environment, load_environment
from composer_prime.rollout.sampler import Sampler
from composer_prime.rollout.single_turn import rollout_group
from composer_prime.verify.rollout_batch import (Assignment, AssignmentRefused, RolloutBatch, RolloutSample,
                                                 open_assignment, signed_bytes)
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


class Worker:
    def __init__(self, config: WorkerConfig):
        self.config = config
        self.key = keys.load_or_create_private_key(config.state_dir / "worker.key")
        self.run_public = keys.load_public_key(config.run_public_key)
        self.worker_id = worker_id(config.name, keys.public_hex(self.key))
        self.http = httpx.AsyncClient(base_url=config.run_url.rstrip("/"), timeout=30)
        self.journal = Journal(config.state_dir / "journal")
        self.version = -1
        self.announced = -1
        self.banned = False

    async def join(self) -> JoinResponse:
        nonce = secrets.token_hex(16)
        request = JoinRequest(join_token=self.config.join_token, name=self.config.name,
                              public_key=keys.public_hex(self.key), nonce=nonce)

        async def call() -> JoinResponse:
            response = await self.http.post("/join", json=request.model_dump())
            if response.status_code in (400, 403, 409, 422):  # a wrong token or a bad name will not fix itself
                raise UserError(f"run at {self.config.run_url} refused to join: {response.json().get('detail')}")
            response.raise_for_status()
            try:
                answer = open_answer(self.run_public, response.json(), JoinResponse)
                if answer.nonce != nonce or answer.worker_id != self.worker_id:
                    raise AnswerRefused("a signed join answer for another request")
            except AnswerRefused as exc:  # the wrong run key configured, or someone between this worker and the run
                raise UserError(f"run at {self.config.run_url} sent a join answer this worker must not trust: {exc}") from None
            return answer

        return await retry("join", call, self.config.retry_s)

    async def heartbeat(self) -> HeartbeatResponse:
        now = time.time()
        uploaded = self.journal.uploaded_count()
        signature = self.key.sign(heartbeat_message(self.worker_id, now, self.version, uploaded)).hex()
        beat = Heartbeat(worker_id=self.worker_id, time=now, weight_version=self.version,
                         batches_uploaded=uploaded, signature=signature)
        response = await self.http.post("/heartbeat", json=beat.model_dump())
        response.raise_for_status()
        answer = open_answer(self.run_public, response.json(), HeartbeatResponse)
        if answer.worker_id != self.worker_id or answer.time != now:
            raise AnswerRefused("a signed heartbeat answer for another beat (replayed?)")
        self.announced, self.banned = answer.current_version, answer.banned
        return answer

    async def assignment(self) -> tuple[Assignment, bytes]:
        """The next batch to sample, as the run signed it (journaled before any sampling)."""

        async def call() -> tuple[Assignment, bytes]:
            now = time.time()
            request = AssignRequest(worker_id=self.worker_id, time=now,
                                    signature=self.key.sign(assign_message(self.worker_id, now)).hex())
            response = await self.http.post("/assign", json=request.model_dump())
            if response.status_code == 403:
                raise UserError(f"run refused an assignment: {response.json().get('detail')}")
            response.raise_for_status()
            assignment = open_assignment(response.content, self.run_public)  # AssignmentRefused: retried
            if assignment.worker_id != self.worker_id:
                raise AssignmentRefused("an assignment for another worker")
            return assignment, response.content

        assignment, signed = await retry("assignment", call, self.config.retry_s)
        self.journal.add_assignment(assignment.assignment_id, signed)
        return assignment, signed

    async def heartbeats(self) -> None:
        while True:
            try:
                await self.heartbeat()
            except Exception as exc:  # noqa: BLE001 - a missed beat is logged, the next one may get through
                logger.warning("heartbeat failed: %r", exc)
            await asyncio.sleep(self.config.heartbeat_s)

    @staticmethod
    def _log_corrupt(report) -> None:
        for index, source in report.corrupt:
            logger.warning("weights v%d: shard %d from %s failed its hash; fetched again elsewhere",
                           report.version, index, source)

    async def upload(self, batch_id: str, data: bytes) -> None:
        try:
            await retry(f"upload {batch_id}", lambda: upload_batch(self.http, self.key, self.worker_id, batch_id, data),
                        self.config.retry_s, fatal=(UserError, GrantRefused))
        except GrantRefused as exc:  # answered already (uploaded before a crash) or expired: nothing left to send
            logger.warning("%s; dropped from the journal", exc)
        self.journal.mark_uploaded(batch_id)

    async def sample(self, sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, info: JoinResponse,
                     assignment: Assignment, prover: ModelScorer | None) -> tuple[list[RolloutSample], int]:
        """The assigned batch's samples (one group per assigned example) and the weight version that sampled the
        last group. Sample j is drawn with the assignment's noise (key, j) when the run proves sampling."""
        sampling = SamplingConfig(temperature=assignment.temperature, top_p=assignment.top_p,
                                  max_tokens=assignment.max_tokens)
        examples, samples, version = env.examples("train"), [], self.version
        n = assignment.samples_per_prompt
        for slot, index in enumerate(assignment.example_ids):
            noise = {"gumbel_key": assignment.key, "gumbel_first_sample": slot * n} if info.prove_sampling else {}
            group = await rollout_group(sampler, env, tokenizer, examples[index], sampling, n=n, **noise)
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
        if info.prove_sampling and self.config.backend.type != "transformers":
            raise UserError(f"this run checks that tokens were sampled with its noise (keyed Gumbel-max), which the "
                            f"{self.config.backend.type} backend cannot do: use backend.type = 'transformers'")
        for batch_id, data in self.journal.pending_batches():  # signed before a crash, not yet confirmed uploaded
            await self.upload(batch_id, data)
        # Weights only through the run's servers: this worker holds no store credential (coordinator/grants.py).
        client = BroadcastClient(make_sources(info.broadcast_servers), self.run_public,
                                 self.config.state_dir / "broadcasts")
        report = await retry("weights", lambda: asyncio.to_thread(client.fetch, None), self.config.retry_s)
        self._log_corrupt(report)
        self.version = report.version
        logger.info("weights v%d ready at %s", report.version, report.path)
        # The run's tolerance for sampling checks is measured for float32 engines (benchmarks/README.md).
        dtype = "float32" if info.prove_sampling else self.config.dtype
        if dtype != self.config.dtype and self.config.dtype is not None:
            logger.warning("sampling in float32, not %s: the run checks every token against float32 logits",
                           self.config.dtype)
        backend = make_backend(InferenceConfig(
            model=ModelConfig(path=str(report.path), dtype=dtype, device=self.config.device),
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
        done = 0
        per_version: dict[int, int] = {}
        held = self.journal.assignments()  # assigned before a crash: sampled again, to the same tokens
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
                        await asyncio.sleep(self.config.retry_s)
                        continue  # an assignment issued now names it: sampled with older weights, it would count
                limit = self.config.max_batches_per_version
                if limit is not None and per_version.get(self.version, 0) >= limit:
                    await asyncio.sleep(self.config.heartbeat_s)  # heartbeats announce the next version
                    continue
                if held:
                    signed = held.pop(0)
                    try:
                        assignment = open_assignment(signed, self.run_public)
                    except AssignmentRefused:  # written by another run key: not ours to answer
                        continue
                    if assignment.expires_at < time.time() + 5:
                        self.journal.drop_assignment(assignment.assignment_id)
                        continue
                else:
                    assignment, signed = await self.assignment()
                if assignment.weight_version > self.version:
                    # Sampled with older weights than the assignment names, the batch counts as this worker's
                    # failure (verify/verifier.py: `wrong-version`): fetch them first, then answer it.
                    self.announced = max(self.announced, assignment.weight_version)
                    held.insert(0, signed)
                    continue
                samples, version = await self.sample(backend, env, tokenizer, info, assignment, prover)
                batch = RolloutBatch(worker_id=self.worker_id, batch_id=assignment.assignment_id, assignment=signed,
                                     weight_version=version, temperature=assignment.temperature, samples=samples)
                data = signed_bytes(batch, self.key)
                self.journal.add(batch.batch_id, data)  # the batch replaces its assignment in the journal
                await self.upload(batch.batch_id, data)
                done += 1
                per_version[version] = per_version.get(version, 0) + 1
                logger.info("uploaded batch %s (%d samples, weights v%d)", batch.batch_id, len(samples), version)
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
