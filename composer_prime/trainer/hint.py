"""Channel 2 in the trainer: hint self-distillation on the error turns the orchestrator sent (batch.HintSite).

Per micro-batch of sites: the teacher (same weights, hinted context) runs without gradient, the
student (original context) with gradient; both score the same completion tokens, so their
distributions at those tokens line up one to one. The loss covers only those tokens. When the
inference server already scored the teacher side (`teacher_topk_*`), no teacher forward runs and
the divergence is taken over its top-k + tail (loss/topk.py).

Rows are right-padded (token 0) without an attention mask: attention is causal, so padding after
a row's tokens cannot reach them, and no padded position is scored, so the pad id never matters.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from composer_prime.batch import HintSite, TrainBatch
from composer_prime.configs.trainer import HintLossConfig
from composer_prime.errors import UserError
from composer_prime.loss.jsd import chunked_generalized_jsd, divergence_from_logprobs, sparse_generalized_jsd
from composer_prime.loss.taid import TAIDState, entropy_gated_kl, taid_init, taid_loss, taid_update
from composer_prime.loss.topk import TopKLogprobs, append_tail, extract_topk, gather_logprobs
from composer_prime.trainer.parallel import World, all_reduce_max

logger = logging.getLogger(__name__)


@dataclass
class HintTensors:
    student_ids: Tensor
    """[S, Ls] prompt + completion, right-padded."""
    student_mask: Tensor
    """[S, Ls] True at the positions whose logits predict a completion token."""
    teacher_ids: Tensor
    teacher_mask: Tensor
    topk: TopKLogprobs | None
    """[N, k] inference-side teacher, N = completion tokens of all S sites in row order; None: teacher forward."""
    num_sites: int

    @classmethod
    def from_sites(cls, sites: list[HintSite], device: torch.device) -> HintTensors:
        def rows(prompts: list[list[int]]) -> tuple[Tensor, Tensor]:
            seqs = [p + s.completion_ids for p, s in zip(prompts, sites)]
            width = max(len(x) for x in seqs)
            ids = np.zeros((len(seqs), width), dtype=np.int64)
            mask = np.zeros((len(seqs), width), dtype=np.bool_)
            for i, (p, seq) in enumerate(zip(prompts, seqs)):
                ids[i, : len(seq)] = seq
                mask[i, len(p) - 1 : len(seq) - 1] = True  # logits at t predict token t + 1
            return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)

        student_ids, student_mask = rows([s.student_prompt_ids for s in sites])
        teacher_ids, teacher_mask = rows([s.teacher_prompt_ids for s in sites])
        with_topk = [s.teacher_topk_ids is not None for s in sites]
        if any(with_topk) and not all(with_topk):
            raise ValueError("a micro-batch mixes sites with and without inference-side teacher top-k")
        topk = None
        if all(with_topk):
            topk = TopKLogprobs(
                ids=torch.cat([s.teacher_topk_ids.torch() for s in sites]).to(device),
                logprobs=torch.cat([s.teacher_topk_logprobs.torch() for s in sites]).to(device),
            )
        return cls(student_ids, student_mask, teacher_ids, teacher_mask, topk, len(sites))

    @classmethod
    def placeholder(cls, device: torch.device) -> HintTensors:
        """Two tokens, nothing scored: keeps forward counts equal across data-parallel ranks."""
        ids = torch.zeros(1, 2, dtype=torch.long, device=device)
        mask = torch.zeros(1, 2, dtype=torch.bool, device=device)
        return cls(ids, mask, ids, mask, None, 0)


class HintChannel:
    """alpha * mean over error-turn tokens of the configured divergence to the hinted teacher (a LossChannel)."""

    name = "hint"

    def __init__(self, config: HintLossConfig, total_steps: int):
        self.config, self.weight = config, config.weight
        self.total_steps = total_steps
        self.taid: TAIDState = taid_init()
        self._idle_logged = False

    def prepare(self, model: torch.nn.Module, world: World) -> None:
        pass

    def held_out(self, model: torch.nn.Module, world: World, step: int, always: bool) -> dict[str, float]:
        return {}  # held-out error-site KL is the eval command's (eval/hint_kl.py)

    def backward(self, model: torch.nn.Module, batch: TrainBatch, world: World) -> dict[str, float] | None:
        if batch.num_hint_tokens == 0:  # a global count: every rank returns here alike
            if not self._idle_logged:
                logger.info("hint channel has no inputs at step %d: the batch carries no hint sites (is "
                            "orchestrator.hints.enabled on? does any rollout err?)", batch.step)
                self._idle_logged = True
            return None
        micro = self.micro_batches(batch.hint_sites, world.device)
        micro += [HintTensors.placeholder(world.device) for _ in range(all_reduce_max(len(micro), world) - len(micro))]
        loss_sum, kl_sum, sites = 0.0, 0.0, 0.0
        for mb in micro:
            loss, diag = self.loss(model, mb)
            (self.weight * loss / batch.num_hint_tokens).backward()
            loss_sum += loss.item()
            kl_sum += float(diag.get("hint/kl", 0.0))
            sites += float(diag.get("hint/sites", 0.0))
        return {"loss": loss_sum, "kl": kl_sum, "sites": sites}

    def finish(self, totals: dict[str, float], batch: TrainBatch) -> tuple[float, dict[str, float]]:
        """Mean loss and KL per error-turn token; TAID's t moves on from this step's mean loss."""
        loss = totals["loss"] / batch.num_hint_tokens
        metrics = {"hint/kl": totals["kl"] / batch.num_hint_tokens, "hint/sites": totals["sites"]}
        if self.config.variant == "taid":
            metrics["hint/taid_t"] = self.taid.t  # the t this step used
            self.taid = taid_update(self.taid, loss, batch.step, self.total_steps)
        return loss, metrics

    def micro_batches(self, sites: list[HintSite], device: torch.device) -> list[HintTensors]:
        n = self.config.sites_per_micro_batch
        # Sites scored by the inference server and sites for a trainer teacher never share a forward.
        groups = [[s for s in sites if s.teacher_topk_ids is None], [s for s in sites if s.teacher_topk_ids is not None]]
        return [HintTensors.from_sites(g[i : i + n], device) for g in groups for i in range(0, len(g), n)]

    def loss(self, model: torch.nn.Module, mb: HintTensors) -> tuple[Tensor, dict[str, Tensor]]:
        """Summed (not averaged) loss over the micro-batch's completion tokens, and summed diagnostics."""
        cfg = self.config
        teacher_logits = None
        if mb.topk is None:
            with torch.no_grad():
                teacher_logits = model(input_ids=mb.teacher_ids, use_cache=False).logits[mb.teacher_mask]
        student_logits = model(input_ids=mb.student_ids, use_cache=False).logits[mb.student_mask]
        if mb.num_sites == 0:
            return student_logits.sum() * 0.0, {}

        common = dict(clamp=cfg.clamp, reduction="sum")
        if mb.topk is not None or cfg.side_channel == "topk":
            if cfg.variant != "jsd":
                raise UserError(f"trainer.loss.hint.variant {cfg.variant!r} needs full teacher logits: use "
                                "side_channel = 'full' and orchestrator.hints.teacher = 'trainer'")
            topk = mb.topk if mb.topk is not None else extract_topk(teacher_logits, cfg.top_k, temperature=cfg.temperature)
            loss = sparse_generalized_jsd(student_logits, topk, beta=cfg.beta, temperature=cfg.temperature, **common)
            with torch.no_grad():
                student = gather_logprobs(student_logits.detach(), topk.ids, temperature=cfg.temperature)
                kl = divergence_from_logprobs(student, append_tail(topk.logprobs.to(student.dtype)), beta=1.0)
        else:
            if cfg.variant == "jsd":
                loss = chunked_generalized_jsd(student_logits, teacher_logits, beta=cfg.beta,
                                               temperature=cfg.temperature, **common)
            elif cfg.variant == "taid":
                loss = taid_loss(student_logits / cfg.temperature, teacher_logits / cfg.temperature, self.taid.t, **common)
            else:
                loss = entropy_gated_kl(student_logits, teacher_logits, entropy_threshold=cfg.entropy_threshold,
                                        temperature=cfg.temperature, **common)
            if cfg.variant == "jsd" and cfg.beta == 1.0 and cfg.clamp is None:
                kl = loss.detach()  # the loss already is the reverse KL
            else:  # chunked too: the diagnostic must not bring back the [tokens, V] tensors the loss avoids
                with torch.no_grad():
                    kl = chunked_generalized_jsd(student_logits.detach(), teacher_logits, beta=1.0,
                                                 temperature=cfg.temperature, reduction="sum")
        return loss, {"hint/kl": kl.sum(), "hint/sites": torch.tensor(float(mb.num_sites))}
