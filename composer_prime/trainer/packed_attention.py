"""Attention over packed rows without a [rows, 1, S, S] mask.

The trainer packs several samples into each row, position ids restarting at 0 at every sample. Through
transformers' SDPA path that becomes a dense block-diagonal mask per row: memory quadratic in the row
length, and no flash kernel (SDPA's flash backend takes no mask). Inside `packed(position_ids)` the
model's attention (registered as `ATTENTION`) skips that mask and attends sample by sample instead:
- on CUDA in half precision, every sample of the micro-batch at once, through torch's variable-length
  flash attention (`torch.nn.attention.varlen.varlen_attn`, sliding windows included);
- elsewhere one causal SDPA per sample, with a window mask of that sample's size where the layer has one.
Either way a token attends to the earlier tokens of its own sample, exactly as the dense mask allowed,
and the numbers are those of SDPA (soft-capping, which transformers' SDPA path does not apply either,
stays unapplied: the sampler runs the same SDPA path). Outside `packed` (hint teacher, preference
forwards, anything with a padding mask) the registered attention is transformers' own SDPA, unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

ATTENTION = "composer_packed"


@dataclass(frozen=True)
class Segments:
    """Where each packed sample lies: `bounds[r]` lists row r's (start, end); `cu_seqlens` the same over the
    flattened rows (int32, what varlen attention takes), `longest` the longest sample."""

    bounds: list[list[tuple[int, int]]]
    cu_seqlens: torch.Tensor
    longest: int


_SEGMENTS: ContextVar[Segments | None] = ContextVar("packed_segments", default=None)


def segments_of(position_ids: torch.Tensor) -> Segments:
    """Samples of [rows, S] position ids: a sample starts wherever the position id is 0."""
    rows, length = position_ids.shape
    bounds, cuts = [], []
    starts_all = (position_ids == 0).cpu()
    starts_all[:, 0] = True
    for r in range(rows):
        starts = starts_all[r].nonzero().squeeze(1).tolist()
        row = list(zip(starts, starts[1:] + [length]))
        bounds.append(row)
        cuts += [r * length + s for s, _ in row]
    cu = torch.tensor(cuts + [rows * length], dtype=torch.int32, device=position_ids.device)
    return Segments(bounds=bounds, cu_seqlens=cu, longest=max(e - s for row in bounds for s, e in row))


@contextmanager
def _within(segments: Segments | None) -> Iterator[None]:
    token = _SEGMENTS.set(segments)
    try:
        yield
    finally:
        _SEGMENTS.reset(token)


def packed(position_ids: torch.Tensor):
    """Forwards run inside attend sample by sample (the model must use `ATTENTION`)."""
    return _within(segments_of(position_ids))


def checkpoint_contexts() -> tuple[object, object]:
    """torch.utils.checkpoint's `context_fn`: a layer recomputed in the backward pass attends over the samples
    its forward did (the backward runs outside `packed`)."""
    return nullcontext(), _within(_SEGMENTS.get())


def _window_mask(length: int, window: int, device: torch.device) -> torch.Tensor:
    """[length, length] bool: causal, and a query sees at most `window` keys, itself included."""
    q = torch.arange(length, device=device)[:, None]
    k = torch.arange(length, device=device)[None, :]
    return (k <= q) & (k > q - window)


def packed_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                     **kwargs) -> tuple[torch.Tensor, None]:
    """transformers' attention interface: [B, H, S, D] query, [B, Hkv, S, D] key/value -> [B, S, H, D]."""
    segments = _SEGMENTS.get()
    if segments is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    groups = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    window = kwargs.get("sliding_window")
    rows, heads, length, dim = query.shape
    if query.is_cuda and query.dtype in (torch.float16, torch.bfloat16):
        from torch.nn.attention.varlen import varlen_attn

        def flat(x: torch.Tensor) -> torch.Tensor:
            return x.transpose(1, 2).reshape(rows * length, heads, dim)

        out = varlen_attn(flat(query), flat(key), flat(value), segments.cu_seqlens, segments.cu_seqlens,
                          segments.longest, segments.longest, scale=scaling,
                          window_size=(window - 1, 0) if window else (-1, 0))
        return out.view(rows, length, heads, dim), None
    out = torch.empty_like(query)
    for r, row in enumerate(segments.bounds):
        for start, end in row:
            part = slice(start, end)
            mask = _window_mask(end - start, window, query.device) if window and end - start > window else None
            out[r, :, part] = F.scaled_dot_product_attention(
                query[r : r + 1, :, part], key[r : r + 1, :, part], value[r : r + 1, :, part], attn_mask=mask,
                dropout_p=dropout, is_causal=mask is None, scale=scaling)[0]
    return out.transpose(1, 2).contiguous(), None


def packed_mask(*args, **kwargs) -> torch.Tensor | None:
    """No mask inside `packed` (the attention keeps samples apart itself); SDPA's own mask elsewhere."""
    return None if _SEGMENTS.get() is not None else ALL_MASK_ATTENTION_FUNCTIONS["sdpa"](*args, **kwargs)


AttentionInterface.register(ATTENTION, packed_attention)
AttentionMaskInterface.register(ATTENTION, packed_mask)
