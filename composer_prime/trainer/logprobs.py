"""Token log-probs of the packed input under the model, at the sampling temperature."""

from __future__ import annotations

import torch
from torch import Tensor

# Rows of [rows, vocab] upcast at once: bounds the transient float32 copy to ~256 MiB.
_CHUNK_ELEMENTS = 1 << 26


class _SelectedLogSoftmax(torch.autograd.Function):
    """log_softmax(logits / T)[target] per row, keeping no [N, vocab] tensor but the logits.

    Forward: out_i = x_i[y_i] / T - logsumexp(x_i / T). Backward:
    d out_i / d x_i = (onehot(y_i) - softmax(x_i / T)) / T, recomputed chunk by chunk from
    the saved logits and logsumexp, so neither a tempered copy nor (for bf16 models) a
    float32 copy of the logits is saved for backward.
    """

    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor, temperature: float) -> Tensor:
        acc = torch.promote_types(logits.dtype, torch.float32)
        chunk = max(1, _CHUNK_ELEMENTS // logits.shape[-1])
        lse = torch.empty(logits.shape[0], dtype=acc, device=logits.device)
        for s in range(0, logits.shape[0], chunk):
            lse[s : s + chunk] = torch.logsumexp(logits[s : s + chunk].to(acc) / temperature, dim=-1)
        picked = logits.gather(1, targets[:, None]).squeeze(1).to(acc) / temperature
        ctx.save_for_backward(logits, targets, lse)
        ctx.temperature, ctx.chunk = temperature, chunk
        return picked - lse

    @staticmethod
    def backward(ctx, grad_out: Tensor) -> tuple[Tensor, None, None]:
        logits, targets, lse = ctx.saved_tensors
        temperature, chunk = ctx.temperature, ctx.chunk
        grad_logits = torch.empty_like(logits)
        for s in range(0, logits.shape[0], chunk):
            g = grad_out[s : s + chunk, None] / temperature
            probs = torch.exp(logits[s : s + chunk].to(lse.dtype) / temperature - lse[s : s + chunk, None])
            part = probs.mul_(-g).scatter_add_(1, targets[s : s + chunk, None], g)
            grad_logits[s : s + chunk] = part
        return grad_logits, None, None


def selected_log_softmax(logits: Tensor, targets: Tensor, temperature: float = 1.0) -> Tensor:
    """`log_softmax(logits / temperature, -1).gather(-1, targets)` for [N, vocab] logits and [N] targets,
    in float32 (float64 for float64 logits) without materialising the [N, vocab] log-softmax."""
    return _SelectedLogSoftmax.apply(logits, targets, float(temperature))


def token_logprobs(logits: Tensor, input_ids: Tensor, temperature: float) -> Tensor:
    """[rows, seq] log-prob of input_ids[:, t] under logits[:, t - 1] / T; 0 at t = 0.

    At the first token of a packed segment the value is meaningless (the previous token
    belongs to another sample); such tokens are prompt tokens, never on the loss mask.
    """
    rows, seq, vocab = logits.shape
    # Score every position against the next token of the flattened batch (a free view of the
    # logits) rather than slicing logits[:, :-1], which would copy them when rows > 1.
    next_ids = torch.roll(input_ids.reshape(-1), -1)
    scored = selected_log_softmax(logits.reshape(rows * seq, vocab), next_ids, temperature).view(rows, seq)
    return torch.nn.functional.pad(scored[:, :-1], (1, 0))


def forward_logprobs(model: torch.nn.Module, input_ids: Tensor, position_ids: Tensor, temperature: float) -> Tensor:
    """Token log-probs of packed rows. No attention_mask: from position_ids restarting at 0,
    transformers builds the block-diagonal causal mask that keeps packed samples apart
    (only without a KV cache, hence use_cache=False)."""
    logits = model(input_ids=input_ids, position_ids=position_ids, use_cache=False).logits
    return token_logprobs(logits, input_ids, temperature)
