"""Token log-probs of the packed input under the model, under the distribution the sampler drew from."""

from __future__ import annotations

import torch
from torch import Tensor

from composer_prime.inference.sampling import filter_logits
from composer_prime.trainer.packed_attention import packed

# Rows of [rows, vocab] upcast at once: bounds the transient float32 copy to ~256 MiB.
_CHUNK_ELEMENTS = 1 << 26


class _SelectedLogSoftmax(torch.autograd.Function):
    """log_softmax(logits / T)[target] per row, keeping no [N, vocab] tensor but the logits.

    Forward: out_i = x_i[y_i] / T - logsumexp_{j in K_i}(x_ij / T), where K_i is the whole vocabulary, or
    with top_p < 1 the row's top-p nucleus of softmax(x_i / T) (inference/sampling.py's `filter_logits`,
    vLLM's rule) plus the target itself. Backward: d out_i / d x_ij = (1[j = y_i] - softmax_K(x_i / T)_j) / T
    for j in K_i and 0 elsewhere, recomputed chunk by chunk from the saved logits and logsumexp, so neither a
    tempered copy nor (for bf16 models) a float32 copy of the logits is saved for backward; with top_p < 1 the
    nucleus is saved as a bool mask (a quarter of float32 logits).
    """

    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor, temperature: float, top_p: float) -> Tensor:
        acc = torch.promote_types(logits.dtype, torch.float32)
        chunk = max(1, _CHUNK_ELEMENTS // logits.shape[-1] // (4 if top_p < 1 else 1))  # the nucleus sorts a copy
        lse = torch.empty(logits.shape[0], dtype=acc, device=logits.device)
        keep = torch.ones(0, dtype=torch.bool, device=logits.device)
        if top_p < 1:
            keep = torch.empty(logits.shape, dtype=torch.bool, device=logits.device)
        for s in range(0, logits.shape[0], chunk):
            scaled = logits[s : s + chunk].to(acc) / temperature
            if top_p < 1:
                rows = scaled.shape[0]
                kept = filter_logits(scaled, torch.zeros(rows, dtype=torch.long, device=scaled.device),
                                     torch.full((rows,), top_p, device=scaled.device)) > -torch.inf
                # the sampled token is in the sampler's nucleus; keep it here too, so that logits a little off the
                # sampler's (an older policy, other kernels) never give log(0)
                kept[torch.arange(rows, device=kept.device), targets[s : s + chunk]] = True
                keep[s : s + chunk] = kept
                scaled = scaled.masked_fill(~kept, -torch.inf)
            lse[s : s + chunk] = torch.logsumexp(scaled, dim=-1)
        picked = logits.gather(1, targets[:, None]).squeeze(1).to(acc) / temperature
        ctx.save_for_backward(logits, targets, lse, keep)
        ctx.temperature, ctx.chunk, ctx.top_p = temperature, chunk, top_p
        return picked - lse

    @staticmethod
    def backward(ctx, grad_out: Tensor) -> tuple[Tensor, None, None, None]:
        logits, targets, lse, keep = ctx.saved_tensors
        temperature, chunk = ctx.temperature, ctx.chunk
        grad_logits = torch.empty_like(logits)
        for s in range(0, logits.shape[0], chunk):
            g = grad_out[s : s + chunk, None] / temperature
            probs = torch.exp(logits[s : s + chunk].to(lse.dtype) / temperature - lse[s : s + chunk, None])
            if ctx.top_p < 1:
                probs = probs.masked_fill_(~keep[s : s + chunk], 0.0)
            part = probs.mul_(-g).scatter_add_(1, targets[s : s + chunk, None], g)
            grad_logits[s : s + chunk] = part
        return grad_logits, None, None, None


def selected_log_softmax(logits: Tensor, targets: Tensor, temperature: float = 1.0, top_p: float = 1.0) -> Tensor:
    """`log_softmax(logits / temperature, -1).gather(-1, targets)` for [N, vocab] logits and [N] targets,
    in float32 (float64 for float64 logits) without materialising the [N, vocab] log-softmax; with top_p < 1,
    renormalised over each row's top-p nucleus (and its target), as the sampler reports it."""
    return _SelectedLogSoftmax.apply(logits, targets, float(temperature), float(top_p))


def token_logprobs(logits: Tensor, input_ids: Tensor, temperature: float, top_p: float = 1.0) -> Tensor:
    """[rows, seq] log-prob of input_ids[:, t] under logits[:, t - 1] / T (top-p renormalised when top_p < 1);
    0 at t = 0.

    At the first token of a packed segment the value is meaningless (the previous token
    belongs to another sample); such tokens are prompt tokens, never on the loss mask.
    """
    rows, seq, vocab = logits.shape
    # Score every position against the next token of the flattened batch (a free view of the
    # logits) rather than slicing logits[:, :-1], which would copy them when rows > 1.
    next_ids = torch.roll(input_ids.reshape(-1), -1)
    scored = selected_log_softmax(logits.reshape(rows * seq, vocab), next_ids, temperature, top_p).view(rows, seq)
    return torch.nn.functional.pad(scored[:, :-1], (1, 0))


def forward_logprobs(model: torch.nn.Module, input_ids: Tensor, position_ids: Tensor, temperature: float,
                     top_p: float = 1.0) -> Tensor:
    """Token log-probs of packed rows, as the sampler reported them (temperature, top-p). No attention_mask:
    position_ids restarting at 0 keep packed samples apart, through the trainer's packed attention
    (trainer/packed_attention.py: sample by sample, no mask) or for any other model transformers'
    block-diagonal causal mask (only without a KV cache, hence use_cache=False)."""
    with packed(position_ids):
        logits = model(input_ids=input_ids, position_ids=position_ids, use_cache=False).logits
    return token_logprobs(logits, input_ids, temperature, top_p)
