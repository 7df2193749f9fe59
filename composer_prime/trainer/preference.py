"""Channel 3 in the trainer: DPO or SimPO on preference pairs mined by trace replay (composer_prime/pairs.py).

Pairs are tokenised once with the policy's chat template: prompt = the state rendered with a
generation prompt, answer = what the template appends for the action, up to and including the
first end-of-turn (EOS) token, i.e. exactly what the policy would sample. Tool calls are
rendered as Hermes-style text when the template cannot render `tool_calls` itself.

Reference log-probs (DPO) come from the initial policy, computed once before the first step on
every pair and cached in `<output>/preference/reference.json`: a resumed run reads the cache,
since the initial weights are gone by then. Pairs whose id hashes into `eval_fraction` are held
out: their accuracy (implicit reward margin > 0) is the channel's held-out metric.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from composer_prime.batch import TrainBatch
from composer_prime.chat import Action, render_tool_calls
from composer_prime.configs.trainer import PreferenceLossConfig
from composer_prime.errors import UserError
from composer_prime.loss.preference import PreferenceOutput, add_chosen_nll, dpo_loss, sequence_logprobs, simpo_loss
from composer_prime.model.chat_template import template_ids
from composer_prime.pairs import PreferencePair, read_pairs
from composer_prime.trainer.logprobs import token_logprobs
from composer_prime.trainer.parallel import World
from composer_prime.utils.fs import atomic_write_bytes

logger = logging.getLogger(__name__)

_EVAL_BUCKETS = 1000
_METRICS = ("preference/accuracy", "preference/margin", "preference/chosen_reward", "preference/rejected_reward")


@dataclass(frozen=True)
class TokenizedPair:
    id: str
    prompt_ids: list[int]
    chosen_ids: list[int]
    rejected_ids: list[int]


def is_held_out(pair_id: str, fraction: float) -> bool:
    """Whether the trainer holds this pair out (eval_fraction): by a hash of its id, so any reader splits alike."""
    bucket = int.from_bytes(hashlib.sha256(pair_id.encode()).digest()[:4], "big") % _EVAL_BUCKETS
    return bucket < fraction * _EVAL_BUCKETS


def _as_text(content: str | None, tool_calls: list | None) -> str:
    """A turn as plain text, so that any chat template renders it (tool calls inline, Hermes-style)."""
    text = content or ""
    if tool_calls:
        text = (text + "\n" if text else "") + render_tool_calls(tool_calls)
    return text


def tokenize_pair(pair: PreferencePair, tokenizer: PreTrainedTokenizerBase) -> TokenizedPair:
    """Prompt ids and the chosen / rejected answer ids as the policy would sample them."""
    state = [{"role": m.role, "content": _as_text(m.content, m.tool_calls)} for m in pair.state]
    prompt = template_ids(tokenizer, state)

    def answer(action: Action) -> list[int]:
        reply = {"role": "assistant", "content": _as_text(action.content, action.tool_calls)}
        full = template_ids(tokenizer, state + [reply], add_generation_prompt=False)
        if full[: len(prompt)] != prompt:
            raise ValueError("the chat template renders the state differently with an answer appended")
        ids = full[len(prompt) :]
        eos = tokenizer.eos_token_id
        return ids[: ids.index(eos) + 1] if eos in ids else ids

    return TokenizedPair(pair.id, prompt, answer(pair.chosen), answer(pair.rejected))


def read_tokenized_pairs(path: Path, tokenizer: PreTrainedTokenizerBase, max_tokens: int
                         ) -> tuple[list[TokenizedPair], int]:
    """The pairs of `path` tokenised, less those over `max_tokens` (prompt + answer); and how many those were."""
    kept, skipped = [], 0
    for pair in read_pairs(path):
        try:
            t = tokenize_pair(pair, tokenizer)
        except ValueError as exc:
            raise UserError(f"{path}: pair {pair.id}: {exc}") from None
        if len(t.prompt_ids) + max(len(t.chosen_ids), len(t.rejected_ids)) > max_tokens:
            skipped += 1
        else:
            kept.append(t)
    return kept, skipped


def pair_logprobs(model: torch.nn.Module, pairs: list[TokenizedPair], device: torch.device) -> tuple[Tensor, Tensor]:
    """Token log-probs `[2B, L]` (chosen rows first, then rejected) and the answer mask, one forward."""
    seqs = [p.prompt_ids + p.chosen_ids for p in pairs] + [p.prompt_ids + p.rejected_ids for p in pairs]
    starts = [len(p.prompt_ids) for p in pairs] * 2
    width = max(len(s) for s in seqs)
    ids = np.zeros((len(seqs), width), dtype=np.int64)  # padding is never scored: its id is moot
    mask = np.zeros((len(seqs), width), dtype=np.bool_)
    for i, (seq, start) in enumerate(zip(seqs, starts)):
        ids[i, : len(seq)] = seq
        mask[i, start : len(seq)] = True
    ids_t = torch.from_numpy(ids).to(device)
    logits = model(input_ids=ids_t, use_cache=False).logits  # right padding: causal attention never sees it
    return token_logprobs(logits, ids_t, 1.0), torch.from_numpy(mask).to(device)


@torch.no_grad()
def reference_logprobs(model: torch.nn.Module, pairs: list[TokenizedPair], device: torch.device
                       ) -> dict[str, tuple[float, float]]:
    """Pair id -> summed log-probs of its (chosen, rejected) answer under `model`: DPO's reference."""
    reference = {}
    for chunk in _chunks(pairs, 16):
        summed, _ = sequence_logprobs(*pair_logprobs(model, chunk, device))
        chosen, rejected = summed[: len(chunk)].tolist(), summed[len(chunk) :].tolist()
        reference |= {p.id: (c, r) for p, c, r in zip(chunk, chosen, rejected)}
    return reference


def pair_loss(model: torch.nn.Module, pairs: list[TokenizedPair], device: torch.device, config: PreferenceLossConfig,
              beta: float, reference: dict[str, tuple[float, float]]) -> PreferenceOutput:
    """DPO (against `reference`) or SimPO of `pairs` under `model`, plus RPO's NLL term with `config.nll_weight`.
    `config` needs only `variant`, `gamma`, `label_smoothing` and `nll_weight` (the TRL integration's has them)."""
    summed, averaged = sequence_logprobs(*pair_logprobs(model, pairs, device))
    b = len(pairs)
    if config.variant == "simpo":
        out = simpo_loss(averaged[:b], averaged[b:], beta=beta, gamma=config.gamma,
                         label_smoothing=config.label_smoothing)
    else:
        ref = torch.tensor([reference[p.id] for p in pairs], dtype=summed.dtype, device=device)
        out = dpo_loss(summed[:b], summed[b:], ref[:, 0], ref[:, 1], beta=beta, label_smoothing=config.label_smoothing)
    return add_chosen_nll(out, averaged[:b], config.nll_weight) if config.nll_weight else out


class PreferenceChannel:
    """beta_w * mean over the step's pairs of the DPO / SimPO loss, plus held-out accuracy (a LossChannel)."""

    name = "preference"

    def __init__(self, config: PreferenceLossConfig, tokenizer: PreTrainedTokenizerBase, output_dir: Path, seed: int):
        self.config, self.seed, self.weight = config, seed, config.weight
        self.beta = config.beta or (0.1 if config.variant == "dpo" else 2.0)
        self.cache_path = Path(output_dir) / "preference" / "reference.json"
        tokenized, skipped = read_tokenized_pairs(config.pairs, tokenizer, config.max_tokens)
        if skipped:
            logger.warning("preference: skipped %d pairs longer than max_tokens %d", skipped, config.max_tokens)
        self.train = [p for p in tokenized if not is_held_out(p.id, config.eval_fraction)]
        self.eval = [p for p in tokenized if is_held_out(p.id, config.eval_fraction)]
        if not self.train:
            raise UserError(f"{config.pairs}: no training pairs left (of {len(tokenized) + skipped}; "
                            f"{skipped} too long)")
        self.reference: dict[str, tuple[float, float]] = {}
        logger.info("preference: %d train pairs, %d held out, %s beta %g", len(self.train), len(self.eval),
                    config.variant, self.beta)

    def prepare(self, model: torch.nn.Module, world: World) -> None:
        self.prepare_reference(model, world.device, write=world.is_main)

    def prepare_reference(self, model: torch.nn.Module, device: torch.device, write: bool) -> None:
        """Reference log-probs of every pair: from the cache, else from `model` (the initial policy)."""
        if self.config.variant != "dpo":
            return
        digest = hashlib.sha256(Path(self.config.pairs).read_bytes()).hexdigest()
        if self.cache_path.is_file():
            cached = json.loads(self.cache_path.read_text())
            if cached["pairs_sha256"] == digest:
                self.reference = {k: tuple(v) for k, v in cached["logps"].items()}
                return
            raise UserError(f"{self.cache_path} was computed for another pairs file; remove it or use a new output_dir")
        self.reference = reference_logprobs(model, self.train + self.eval, device)
        if write:
            body = {"pairs_sha256": digest, "logps": self.reference}
            atomic_write_bytes(self.cache_path, json.dumps(body).encode())

    def step_pairs(self, step: int, rank: int, world_size: int) -> list[TokenizedPair]:
        """This rank's share of the step's pairs: a fixed function of (seed, step), so resume repeats it."""
        rng = np.random.default_rng([self.seed, step, 7])
        n = self.config.pairs_per_step
        picks = rng.choice(len(self.train), size=n, replace=n > len(self.train))
        return [self.train[i] for i in picks[rank::world_size]]

    def backward(self, model: torch.nn.Module, batch: TrainBatch, world: World) -> dict[str, float]:
        pairs = self.step_pairs(batch.step, world.rank, world.world_size)
        if not pairs:  # fewer pairs than ranks: still one forward/backward, for FSDP's collectives
            logits = model(input_ids=torch.zeros(1, 2, dtype=torch.long, device=world.device), use_cache=False).logits
            (logits.sum() * 0.0).backward()
            return dict.fromkeys(("loss", "pairs", *_METRICS), 0.0)
        loss, diag = self.loss(model, pairs, world.device)
        (self.weight * loss / self.config.pairs_per_step).backward()
        sums = torch.stack([diag[k].detach().sum() for k in _METRICS]).tolist()  # one device sync
        return {"loss": loss.item(), "pairs": float(len(pairs)), **dict(zip(_METRICS, sums))}

    def finish(self, totals: dict[str, float], batch: TrainBatch) -> tuple[float, dict[str, float]]:
        """Mean loss over pairs_per_step; each metric's mean over the pairs of all ranks."""
        return totals["loss"] / self.config.pairs_per_step, {k: totals[k] / totals["pairs"] for k in _METRICS}

    def held_out(self, model: torch.nn.Module, world: World, step: int, always: bool) -> dict[str, float]:
        due = always or (self.config.eval_interval and step % self.config.eval_interval == 0)
        return self.evaluate(model, world.device) if due else {}

    def loss(self, model, pairs: list[TokenizedPair], device) -> tuple[Tensor, dict[str, Tensor]]:
        """Summed pair loss of this rank's pairs (the trainer divides by pairs_per_step) and summed diagnostics."""
        out = pair_loss(model, pairs, device, self.config, self.beta, self.reference)
        values = ((out.margins > 0), out.margins, out.chosen_rewards, out.rejected_rewards)
        return out.losses.sum(), {k: v.double() for k, v in zip(_METRICS, values)}

    @torch.no_grad()
    def evaluate(self, model, device) -> dict[str, float]:
        """Held-out accuracy and mean margin (every rank computes the same numbers)."""
        if not self.eval:
            return {}
        margins = torch.cat([pair_loss(model, pairs, device, self.config, self.beta, self.reference).margins
                             for pairs in _chunks(self.eval, 16)])
        return {"preference/eval_accuracy": float((margins > 0).double().mean()),
                "preference/eval_margin": float(margins.double().mean())}


def _chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]
