"""A malicious volunteer, for tests only: joins a run with the real protocol, then uploads signed batches
that must all be rejected, cycling through these attacks:

  fabricated-logprobs  real samples whose log-probs claim near-certainty (-0.01 per token)
  wrong-model-proofs   (runs that ask for TOPLOC proofs) real samples and log-probs, proofs computed
                       with other weights (the model with 30 % weight noise)
  stale-version        real samples claiming a weight version far behind the current one
  altered-tokens       real log-probs, completion tokens replaced by random ones
  forged-signature     a batch claiming an honest worker's id, signed with this worker's key

When the run asks for proofs, every other attack carries proofs of its own (submitted) tokens made
with the given weights, so each attack meets the check meant for it.

    python tests/worker/malicious.py --run-url URL --join-token T --worker-id ID --victim HONEST_ID \
        --model DIR --state-dir DIR [--batches N]

It holds no store credential: like any worker it uploads under its own prefix through grants from the
run (coordinator/grants.py), so the forged-signature batch lands under its own id, claiming the victim's
(refused as misplaced, counted against this worker).
Writes `<state-dir>/sent.json`: samples tried per attack (uploaded, or refused a grant once banned), for
the test to compare with what the run accepted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import httpx
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime import keys
from composer_prime.configs.rollout import EnvConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample, signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.toploc import build_proofs
from composer_prime.coordinator.grants import UploadGrant, signed_grant_request
from composer_prime.worker.main import new_batch_id
from composer_prime.coordinator.protocol import JoinRequest, JoinResponse

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))  # run as a script, outside the suite's conftest
from noise import add_weight_noise_  # noqa: E402

# The first three counted attacks (32 samples each) come before the e2e's ban at 96 samples, so each of
# them meets its own check; wrong-model-proofs is among them when the run asks for proofs.
ATTACKS = ("fabricated-logprobs", "wrong-model-proofs", "stale-version", "altered-tokens", "forged-signature")


def join(http: httpx.Client, args, key) -> JoinResponse | None:
    """The run's current state; None once the run has banned this worker."""
    request = JoinRequest(join_token=args.join_token, worker_id=args.worker_id, public_key=keys.public_hex(key))
    response = http.post("/join", json=request.model_dump())
    if response.status_code == 403:
        return None
    response.raise_for_status()
    return JoinResponse.model_validate(response.json())


def upload(http: httpx.Client, key, worker_id: str, batch_id: str, data: bytes) -> None:
    """Upload through a grant, as honest workers do; once banned, the run refuses the grant (403)."""
    response = http.post("/grant", json=signed_grant_request(key, worker_id, batch_id, data).model_dump())
    if response.status_code == 403:
        return
    response.raise_for_status()
    grant = UploadGrant.model_validate(response.json())
    http.put(grant.url, content=data, headers=grant.headers).raise_for_status()


@torch.no_grad()
def sample(scorer: ModelScorer, tokenizer, prompt: list[int], n: int, max_tokens: int, temperature: float
           ) -> list[tuple[list[int], list[float]]]:
    """n completions of `prompt` with their true log-probs, computed as the verifier computes them."""
    ids = torch.tensor([prompt] * n)
    out = scorer.model(0).generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=temperature,
                                   max_new_tokens=max_tokens, pad_token_id=tokenizer.pad_token_id)
    result = []
    for row in out[:, len(prompt):].tolist():
        completion = row[: row.index(tokenizer.eos_token_id) + 1] if tokenizer.eos_token_id in row else row
        result.append((completion, scorer.logprobs(0, prompt, completion, temperature)))
    return result


def wrong_model(model: Path, out: Path) -> Path:
    """The given weights with N(0, (0.3 * std)^2) noise on every tensor: another checkpoint, for the proofs attack."""
    if not (out / "config.json").is_file():
        other = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
        add_weight_noise_(other, 0.3, seed=1).save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--run-url", "--join-token", "--worker-id", "--victim", "--model", "--state-dir"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    state = Path(args.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    key = keys.load_or_create_private_key(state / "worker.key")
    http = httpx.Client(base_url=args.run_url, timeout=30)
    info = join(http, args, key)
    scorer = ModelScorer(lambda _version: Path(args.model))  # one model: the weights it was given
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    examples = load_environment(EnvConfig(id=info.env_id)).examples("train")
    attacks = ATTACKS if info.proofs is not None else tuple(a for a in ATTACKS if a != "wrong-model-proofs")
    wrong = ModelScorer(lambda _version: wrong_model(Path(args.model), state / "wrong-model"))
    rng = random.Random(0)
    sent = {attack: 0 for attack in attacks}
    version = info.current_version
    for index in range(args.batches):
        attack = attacks[index % len(attacks)]
        version = (fresh.current_version if (fresh := join(http, args, key)) else version)
        samples = []
        for _ in range(info.prompts_per_batch):
            example_id = rng.randrange(len(examples))
            prompt = list(tokenizer.apply_chat_template(examples[example_id].prompt, add_generation_prompt=True,
                                                        tokenize=True, return_dict=False))
            for completion, logprobs in sample(scorer, tokenizer, prompt, info.samples_per_prompt, info.max_tokens,
                                               info.temperature):
                if attack == "fabricated-logprobs":
                    logprobs = [-0.01] * len(completion)
                elif attack == "altered-tokens":
                    completion = [rng.randrange(3, scorer.model(0).config.vocab_size) for _ in completion]
                proofs = []
                if info.proofs is not None:
                    prover = wrong if attack == "wrong-model-proofs" else scorer
                    proofs = build_proofs(prover.hidden_states(0, prompt + completion), len(prompt), info.proofs)
                samples.append(RolloutSample(prompt_ids=prompt, completion_ids=completion, logprobs=logprobs,
                                             reward=1.0, example_id=example_id, proofs=proofs))
        claimed = args.victim if attack == "forged-signature" else args.worker_id
        batch = RolloutBatch(worker_id=claimed, batch_id=new_batch_id(),
                             weight_version=version - 10 if attack == "stale-version" else version,
                             temperature=info.temperature, samples=samples)
        upload(http, key, args.worker_id, batch.batch_id, signed_bytes(batch, key))
        sent[attack] += len(samples)
        (state / "sent.json").write_text(json.dumps(sent))


if __name__ == "__main__":
    main()
