"""Channels 2 and 3 of the composed loss inside TRL's `GRPOTrainer` (`pip install composer-prime[trl]`).

    trainer = ComposerGRPOTrainer(model=model, reward_funcs=reward, args=GRPOConfig(...), train_dataset=dataset,
                                  processing_class=tokenizer, channels=ComposerChannelsConfig(
                                      hint=HintChannelConfig(weight=0.1),
                                      preference=PreferenceChannelConfig(weight=0.1, pairs="pairs.jsonl")))

    loss = TRL's GRPO loss (channel 1, any `loss_type`) + alpha * L_hint + beta_w * L_pref

A subclass overriding `compute_loss`, the hook transformers documents for a custom loss ("Subclassing
Trainer methods"); TRL's own loss runs unchanged underneath.

Channel 2, hint self-distillation. After TRL generates and scores a batch, each completion's conversation
goes through composer-prime's error-site detector (hints/detect.py) with its reward and, when given, the
environment's feedback; the first error of the completion's turn gets a template hint (hints/writer.py)
and the hinted teacher context (hints/context.py). The same model on the hinted context scores the same
completion tokens without gradient, and the student (the original prompt) is pulled toward it with the
generalised JSD of loss/jsd.py: full vocabulary (chunked), or the teacher's top-k plus a tail bucket.
L_hint is the mean over the optimizer step's site tokens, as in composer-prime's trainer. Sites are taken
on single-turn completions; a completion of TRL's tool loop (several turns) yields none.

Channel 3, replay preferences. Pairs come from the pairs.jsonl that `uv run replay` writes, tokenised and
scored as composer-prime's trainer does it (trainer/preference.py); DPO (reference log-probs from the policy
as it is when the trainer is built) or SimPO, from loss/preference.py. L_pref is the mean over the step's
`pairs_per_step` pairs, drawn from (seed, step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import torch
from pydantic import Field
from pydantic_config import BaseConfig
from torch import Tensor
from transformers import PreTrainedTokenizerBase
from trl import GRPOTrainer
from trl.trainer.utils import pad

from composer_prime.errors import UserError
from composer_prime.configs.hints import TemplateWriterConfig
from composer_prime.hints.context import teacher_messages
from composer_prime.hints.detect import detect_errors
from composer_prime.hints.writer import TemplateHintWriter
from composer_prime.loss.jsd import chunked_generalized_jsd, sparse_generalized_jsd
from composer_prime.loss.preference import PreferenceOutput
from composer_prime.loss.topk import extract_topk
from composer_prime.chat import ChatMessage
from composer_prime.model.chat_template import template_ids
from composer_prime.trainer.preference import TokenizedPair, pair_loss, read_tokenized_pairs, reference_logprobs

FeedbackFunc = Callable[[list, list], Sequence[str | None]]
"""`(prompts, completions) -> one explanation per completion (None where there is none)`, TRL's batch shapes."""


class HintChannelConfig(BaseConfig):
    """Channel 2: hint self-distillation on the error turns of TRL's completions."""

    weight: Annotated[float, Field(ge=0, description="alpha: weight of the mean per-token divergence; 0 is off.")] = 0.0
    beta: Annotated[float, Field(ge=0, le=1, description="JSD beta: 0 KL(teacher||student), 1 KL(student||teacher).")] = 1.0
    temperature: Annotated[float, Field(gt=0, description="Both distributions are taken at this temperature.")] = 1.0
    clamp: Annotated[float | None, Field(gt=0, description="Cap on each token's divergence (OPSD); None: no cap.")] = None
    top_k: Annotated[
        int | None, Field(ge=1, description="Divergence over the teacher's top-k ids plus a tail bucket; None: full vocabulary.")
    ] = None
    wrong_answer_below: Annotated[
        float | None, Field(description="A completion rewarded below this is a `wrong_answer` site; None: off.")
    ] = 1.0
    templates: Annotated[dict[str, str], Field(description="Hint template per error kind, over the built-in ones.")] = {}


class PreferenceChannelConfig(BaseConfig):
    """Channel 3: DPO or SimPO on the pairs `uv run replay` mined."""

    weight: Annotated[float, Field(ge=0, description="beta_w: weight of the mean pair loss; 0 is off.")] = 0.0
    pairs: Annotated[Path | None, Field(description="pairs.jsonl written by `uv run replay`.")] = None
    variant: Annotated[Literal["dpo", "simpo"], Field(description="dpo (sigmoid, reference model) or simpo.")] = "dpo"
    beta: Annotated[float | None, Field(gt=0, description="Reward scale; None: 0.1 for dpo, 2.0 for simpo.")] = None
    gamma: Annotated[float, Field(ge=0, description="SimPO target margin.")] = 0.6
    label_smoothing: Annotated[float, Field(ge=0, lt=0.5, description="Assumed label-flip rate (cDPO).")] = 0.0
    nll_weight: Annotated[float, Field(ge=0, description="RPO: weight of the chosen answer's mean NLL; 0 is off.")] = 0.0
    pairs_per_step: Annotated[int, Field(ge=1, description="Pairs trained on per optimizer step (all processes).")] = 8
    max_tokens: Annotated[int, Field(ge=8, description="Pairs longer than this (prompt + answer) are skipped.")] = 1024
    seed: Annotated[int, Field(description="Seed of the per-step pair draw.")] = 0


class ComposerChannelsConfig(BaseConfig):
    """The channels composer-prime adds to TRL's GRPO loss."""

    hint: HintChannelConfig = HintChannelConfig()
    preference: PreferenceChannelConfig = PreferenceChannelConfig()


def teacher_prompt_ids(tokenizer: PreTrainedTokenizerBase, prompts: list[list[dict]], completions: list[list[dict]],
                       rewards: Sequence[float], truncated: Sequence[bool], config: HintChannelConfig,
                       feedback: Sequence[str | None] | None = None, chat_template_kwargs: dict[str, Any] | None = None
                       ) -> list[list[int] | None]:
    """The hinted teacher context's token ids for each completion with an error site on its turn, else None."""
    writer = TemplateHintWriter(TemplateWriterConfig(templates=config.templates))
    out: list[list[int] | None] = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        if len(completion) != 1 or completion[0].get("role") != "assistant":
            out.append(None)  # several turns (TRL's tool loop): the turn's own tokens are not separable here
            continue
        messages = [ChatMessage(role=m["role"], content=m.get("content")) for m in [*prompt, completion[0]]]
        turn = len(messages) - 1
        errors = detect_errors(messages, truncated=truncated[i], reward=float(rewards[i]),
                               wrong_answer_below=config.wrong_answer_below,
                               feedback=feedback[i] if feedback is not None else None)
        error = next((e for e in errors if e.turn == turn), None)
        if error is None:
            out.append(None)
            continue
        context = teacher_messages(messages, error, writer.template(error))
        out.append(template_ids(tokenizer, [{"role": m.role, "content": m.content or ""} for m in context],
                                **(chat_template_kwargs or {})))
    return out


def left_pad(rows: list[list[int]], pad_id: int, device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """`[B, L]` ids padded on the left (as TRL pads prompts) and their attention mask."""
    ids = [torch.tensor(row, dtype=torch.long, device=device) for row in rows]
    return pad(ids, pad_id, padding_side="left"), pad([torch.ones_like(i) for i in ids], padding_side="left")


def completion_logits(model: torch.nn.Module, prompt_ids: Tensor, prompt_mask: Tensor, completion_ids: Tensor,
                      completion_mask: Tensor) -> Tensor:
    """`[B, C, V]` logits predicting each completion token after its (left-padded) prompt."""
    ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention = torch.cat([prompt_mask, completion_mask], dim=1)
    # Positions count real tokens only, so a left-padded row sees the positions an unpadded one would.
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=False,
                   logits_to_keep=completion_ids.shape[1] + 1).logits
    return logits[:, :-1]


def hint_loss_sum(model: torch.nn.Module, prompt_ids: Tensor, prompt_mask: Tensor, teacher_ids: Tensor,
                  teacher_mask: Tensor, completion_ids: Tensor, completion_mask: Tensor,
                  config: HintChannelConfig) -> Tensor:
    """Summed divergence of the student (prompt) to the teacher (hinted context) over the completion tokens."""
    with torch.no_grad():
        teacher = completion_logits(model, teacher_ids, teacher_mask, completion_ids, completion_mask)
    student = completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
    scored = completion_mask.bool()
    common = dict(beta=config.beta, temperature=config.temperature, clamp=config.clamp, reduction="sum")
    if config.top_k is None:
        return chunked_generalized_jsd(student[scored], teacher[scored], **common)
    topk = extract_topk(teacher[scored], config.top_k, temperature=config.temperature)
    return sparse_generalized_jsd(student[scored], topk, **common)


class ReplayPairs:
    """The pairs of one pairs.jsonl, tokenised once, with their DPO reference log-probs."""

    def __init__(self, config: PreferenceChannelConfig, tokenizer: PreTrainedTokenizerBase, reference_model,
                 device: torch.device):
        if config.pairs is None:
            raise UserError("preference.weight > 0 needs preference.pairs (a pairs.jsonl from `uv run replay`)")
        self.config, self.device = config, device
        self.beta = config.beta or (0.1 if config.variant == "dpo" else 2.0)
        self.pairs, _ = read_tokenized_pairs(config.pairs, tokenizer, config.max_tokens)
        if not self.pairs:
            raise UserError(f"{config.pairs}: no pair fits in max_tokens {config.max_tokens}")
        self.reference = reference_logprobs(reference_model, self.pairs, device) if config.variant == "dpo" else {}

    def step_pairs(self, step: int) -> list[TokenizedPair]:
        """The step's pairs: a fixed function of (seed, step), so a resumed run draws the same ones."""
        n = self.config.pairs_per_step
        picks = np.random.default_rng([self.config.seed, step]).choice(len(self.pairs), size=n, replace=n > len(self.pairs))
        return [self.pairs[i] for i in picks]

    def loss(self, model, pairs: list[TokenizedPair]) -> PreferenceOutput:
        return pair_loss(model, pairs, self.device, self.config, self.beta, self.reference)


class ComposerGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with composer-prime's hint and preference channels added to its loss (module docstring)."""

    def __init__(self, *args, channels: ComposerChannelsConfig, feedback_func: FeedbackFunc | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.channels = channels
        self.feedback_func = feedback_func
        self._scored: tuple[list, list, Tensor] | None = None
        self.replay_pairs = None
        if channels.preference.weight > 0:
            self.replay_pairs = ReplayPairs(channels.preference, self._tokenizer, self.model,
                                            self.accelerator.device)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._scored = (prompts, completions, rewards_per_func)  # the hint sites need them beside the tokens
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.channels.hint.weight > 0 and self.model.training:
            output |= self._hint_sites(output)
        return output

    def _hint_sites(self, output: dict) -> dict[str, Tensor]:
        prompts, completions, rewards_per_func = self._scored
        if not isinstance(prompts[0], list):
            raise UserError("the hint channel needs a conversational dataset (prompts as lists of chat messages)")
        n, device = len(prompts), self.accelerator.device
        local = rewards_per_func[self.accelerator.process_index * n:(self.accelerator.process_index + 1) * n]
        rewards = (local * self.reward_weights.to(device).unsqueeze(0)).nansum(dim=1).tolist()
        completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
        eos = self._tokenizer.eos_token_id
        truncated = [eos not in ids[mask.bool()].tolist() for ids, mask in zip(completion_ids, completion_mask)]
        feedback = self.feedback_func(prompts, completions) if self.feedback_func else None
        teachers = teacher_prompt_ids(self._tokenizer, prompts, completions, rewards, truncated,
                                      self.channels.hint, feedback, self.chat_template_kwargs)
        site = torch.tensor([t is not None for t in teachers], device=device)
        ids, mask = left_pad([t or [] for t in teachers], self._tokenizer.pad_token_id, device)
        tokens = (completion_mask.sum(-1) * site).sum().float()
        return {"hint_teacher_ids": ids, "hint_teacher_mask": mask, "hint_site": site,
                "hint_tokens": self.accelerator.reduce(tokens, reduction="sum")}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if not self.model.training:
            return loss
        if "hint_site" in inputs and inputs["hint_site"].any():
            loss = loss + self._hint_term(model, inputs)
        if self.replay_pairs is not None and self._step % self.current_gradient_accumulation_steps == 0:
            loss = loss + self._preference_term(model)  # once per optimizer step, on its first micro-batch
        return loss

    def _hint_term(self, model, inputs) -> Tensor:
        rows = inputs["hint_site"]
        completion_mask = inputs["completion_mask"][rows]
        total = hint_loss_sum(model, inputs["prompt_ids"][rows], inputs["prompt_mask"][rows],
                              inputs["hint_teacher_ids"][rows], inputs["hint_teacher_mask"][rows],
                              inputs["completion_ids"][rows], completion_mask, self.channels.hint)
        self._metrics["train"]["loss/hint"].append((total.detach() / completion_mask.sum().clamp(min=1)).item())
        self._metrics["train"]["hint/sites"].append(float(rows.sum()))
        # `hint_tokens` spans every process's share of the generation batch, which covers
        # steps_per_generation / gradient_accumulation_steps optimizer steps; data parallelism averages gradients.
        step_tokens = inputs["hint_tokens"] * self.current_gradient_accumulation_steps / self.args.steps_per_generation
        return self.channels.hint.weight * total * self.accelerator.num_processes / step_tokens.clamp(min=1)

    def _preference_term(self, model) -> Tensor:
        pairs = self.replay_pairs.step_pairs(self.state.global_step)
        mine = pairs[self.accelerator.process_index::self.accelerator.num_processes]
        if not mine:  # fewer pairs than processes
            return next(model.parameters()).sum() * 0.0
        out = self.replay_pairs.loss(model, mine)
        self._metrics["train"]["loss/preference"].append(out.loss.item())
        self._metrics["train"]["preference/accuracy"].append(out.accuracy.item())
        share = out.losses.sum() * self.accelerator.num_processes / len(pairs)
        return self.channels.preference.weight * share
