"""A malicious volunteer, for tests only: joins a run with the real protocol, asks for assignments like any
worker, then uploads signed batches, cycling through these attacks:

  chosen-tokens        a completion of its choosing for every assigned example, with the true log-probs the
                       run's published weights give it (what a log-prob check alone accepts: issue 30)
  fabricated-logprobs  keyed samples whose log-probs claim near-certainty (-0.01 per token); where the
                       model is near-certain of the sampled completion (a short one, late in a run) the claim
                       is true within the run's tolerance: no forgery, and the run accepts it with its own
                       log-probs in place of the claim (verifier.logprobs_agree)
  wrong-model-proofs   (runs that ask for TOPLOC proofs) keyed samples and log-probs, proofs computed
                       with other weights (the model with 30 % weight noise)
  stale-version        keyed samples claiming a weight version older than the one its assignment names (a free
                       drop of an assignment it dislikes, were it taken as stale: counted as wrong-version)
  altered-tokens       real log-probs, completion tokens replaced by random ones
  forged-signature     a batch claiming an honest worker's id, signed with this worker's key

Keyed samples are drawn as an honest worker draws them (the transformers engine, Gumbel-max with the
assignment's noise, on the weights of the version it claims, pulled through the run's broadcast servers), so
each attack meets the check meant for it whatever version the run has reached; when the run asks for proofs,
every other attack carries proofs of its own (submitted) tokens made with those weights.

    python tests/worker/malicious.py --run-url URL --join-token T --name NAME --victim HONEST_ID \
        --state-dir DIR --verify-config JSON [--batches N]

`--verify-config`: the run's verify table (configs/verify.py), for the tolerance that tells a forgery from a claim
that happens to be true.

It holds no store credential: like any worker it uploads under its own prefix through grants from the
run (coordinator/grants.py), so the forged-signature batch lands under its own id, claiming the victim's
(refused as misplaced, counted against this worker).
Writes `<state-dir>/sent.json`, for the test to compare with what the run accepted: per attack, `samples` tried
(uploaded, or refused a grant once banned) and `honest`: per uploaded batch id, how many of its samples are no
forgery (the drawn tokens, true proofs, log-probs true within the tolerance, in a batch whose claims are true), the
only ones the run may accept: some of fabricated-logprobs' at times, by chance, none of the other attacks'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sys
import time
from pathlib import Path

import httpx
import msgspec
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, make_sources
from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.rollout import EnvConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.verify import VerifyConfig
from composer_prime.coordinator.grants import UploadGrant, signed_grant_request
from composer_prime.coordinator.protocol import JoinRequest, JoinResponse, assign_message, open_answer, worker_id
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.rollout.envs import load_environment
from composer_prime.model.chat_template import template_ids
from composer_prime.verify.rollout_batch import (Assignment, RolloutBatch, RolloutSample, SignedAssignment,
                                                 signed_bytes)
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.toploc import build_proofs
from composer_prime.verify.verifier import logprobs_agree

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))  # run as a script, outside the suite's conftest
from noise import add_weight_noise_  # noqa: E402

# The first three counted attacks (32 samples each) come before the e2e's ban at 96 samples, so each of
# them meets its own check; wrong-model-proofs is among them when the run asks for proofs.
ATTACKS = ("chosen-tokens", "fabricated-logprobs", "wrong-model-proofs", "stale-version", "altered-tokens",
           "forged-signature")
PAYLOAD = "the payload answer"


def join(http: httpx.Client, args, key) -> JoinResponse | None:
    """The run's current state; None once the run has banned this worker."""
    request = JoinRequest(join_token=args.join_token, name=args.name, public_key=keys.public_hex(key),
                          nonce=secrets.token_hex(16))
    response = http.post("/join", json=request.model_dump())
    if response.status_code == 403:
        return None
    response.raise_for_status()
    return open_answer(keys.load_public_key(args.run_public_key), response.json(), JoinResponse)


def assignment(http: httpx.Client, wid: str, key) -> tuple[Assignment, bytes] | None:
    """The next assignment, waiting while it holds as many as a worker may; None once banned."""
    while True:
        now = time.time()
        response = http.post("/assign", json={"worker_id": wid, "time": now,
                                              "signature": key.sign(assign_message(wid, now)).hex()})
        if response.status_code == 403:
            return None
        if response.status_code not in (429, 503):  # 503: no version announced yet
            response.raise_for_status()
            signed = msgspec.msgpack.decode(response.content, type=SignedAssignment)
            return msgspec.msgpack.decode(signed.payload, type=Assignment), response.content
        time.sleep(1.0)


def upload(http: httpx.Client, key, wid: str, batch_id: str, data: bytes) -> None:
    """Upload through a grant, as honest workers do; once banned, the run refuses the grant (403)."""
    response = http.post("/grant", json=signed_grant_request(key, wid, batch_id, data).model_dump())
    if response.status_code == 403:
        return
    response.raise_for_status()
    grant = UploadGrant.model_validate(response.json())
    http.put(grant.url, content=data, headers=grant.headers).raise_for_status()


def wrong_model(model: Path, out: Path) -> Path:
    """The given weights with N(0, (0.3 * std)^2) noise on every tensor: another checkpoint, for the proofs attack."""
    if not (out / "config.json").is_file():
        other = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
        add_weight_noise_(other, 0.3, seed=1).save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--run-url", "--join-token", "--name", "--victim", "--state-dir", "--run-public-key",
                 "--verify-config"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    tolerance = VerifyConfig.model_validate_json(args.verify_config)
    torch.set_num_threads(1)
    state = Path(args.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    key = keys.load_or_create_private_key(state / "worker.key")
    wid = worker_id(args.name, keys.public_hex(key))
    http = httpx.Client(base_url=args.run_url, timeout=30)
    info = join(http, args, key)
    # Weights as an honest worker gets them: the signed broadcast, version by version. Sampling with version 0's
    # while claiming a later one would fail the log-prob check first, and the later checks would go unmet.
    client = BroadcastClient(make_sources(info.broadcast_servers), keys.load_public_key(args.run_public_key),
                             state / "broadcasts")
    paths: dict[int, Path] = {}

    def weights(version: int) -> Path:
        if version not in paths:
            paths[version] = Path(client.fetch(version).path)
        return paths[version]

    scorer = ModelScorer(weights)
    wrong = ModelScorer(lambda version: wrong_model(weights(version), state / f"wrong-model-{version}"))
    version = info.current_version
    tokenizer = AutoTokenizer.from_pretrained(weights(version))
    examples = load_environment(EnvConfig(id=info.env_id)).examples("train")
    attacks = ATTACKS if info.proofs is not None else tuple(a for a in ATTACKS if a != "wrong-model-proofs")
    loop = asyncio.new_event_loop()
    engine = TransformersBackend(ModelConfig(path=str(weights(version)), dtype="float32", device="cpu"),
                                 TransformersBackendConfig())
    loaded = version
    rng = random.Random(0)
    payload = tokenizer.encode(PAYLOAD, add_special_tokens=False)[: info.max_tokens - 1] + [tokenizer.eos_token_id]
    sent = {attack: {"samples": 0, "honest": {}} for attack in attacks}
    for index in range(args.batches):
        attack = attacks[index % len(attacks)]
        version = (fresh.current_version if (fresh := join(http, args, key)) else version)
        got = assignment(http, wid, key)
        if got is None:  # banned: every later attack is refused at the door
            sent[attack]["samples"] += info.prompts_per_batch * info.samples_per_prompt
            (state / "sent.json").write_text(json.dumps(sent))
            continue
        task, signed = got
        version = max(version, task.weight_version)  # announced since the join
        if version != loaded:
            loop.run_until_complete(engine.load_weights(str(weights(version)), version))
            loaded = version
        samples, drawn = [], []
        for slot, example_id in enumerate(task.example_ids):
            prompt = template_ids(tokenizer, examples[example_id].prompt)
            response = loop.run_until_complete(engine.generate(GenerateRequest(
                prompt_token_ids=prompt, n=task.samples_per_prompt, max_tokens=task.max_tokens,
                temperature=task.temperature, stop_token_ids=[tokenizer.eos_token_id], gumbel_key=task.key,
                gumbel_first_sample=slot * task.samples_per_prompt)))
            for c in response.completions:
                completion, logprobs = c.token_ids, c.logprobs
                if attack == "chosen-tokens":
                    completion = payload
                    logprobs = scorer.logprobs(version, prompt, completion, task.temperature)
                elif attack == "fabricated-logprobs":
                    logprobs = [-0.01] * len(completion)
                elif attack == "altered-tokens":
                    completion = [rng.randrange(3, scorer.model(version).config.vocab_size) for _ in completion]
                proofs, prover = [], wrong if attack == "wrong-model-proofs" else scorer
                if info.proofs is not None:
                    proofs = build_proofs(prover.hidden_states(version, prompt + completion), len(prompt), info.proofs)
                samples.append(RolloutSample(prompt_ids=prompt, completion_ids=completion, logprobs=logprobs,
                                             reward=1.0, example_id=example_id, proofs=proofs))
                drawn.append(completion == c.token_ids and prover is scorer)
        claimed = args.victim if attack == "forged-signature" else wid
        batch = RolloutBatch(worker_id=claimed, batch_id=task.assignment_id, assignment=signed,
                             weight_version=version - 10 if attack == "stale-version" else version,
                             temperature=task.temperature, samples=samples)
        upload(http, key, wid, batch.batch_id, signed_bytes(batch, key))
        sent[attack]["samples"] += len(samples)
        # No forgery: the drawn tokens with true proofs, true log-probs within the tolerance (scored as the run
        # scores them: the same weights, one call for the batch), in a batch whose own claims are true.
        trusted = scorer.logprobs_many(version, [(s.prompt_ids, s.completion_ids) for s in samples], task.temperature)
        sent[attack]["honest"][batch.batch_id] = sum(
            ok and logprobs_agree(s.logprobs, t, tolerance) for s, t, ok in zip(samples, trusted, drawn, strict=True)
        ) if (batch.worker_id, batch.weight_version) == (wid, version) else 0
        (state / "sent.json").write_text(json.dumps(sent))
    loop.run_until_complete(engine.close())


if __name__ == "__main__":
    main()
