"""Attention over packed rows without a [rows, 1, S, S] mask.

The trainer packs several samples into each row, position ids restarting at 0 at every sample. Through
transformers' SDPA path that becomes a dense block-diagonal mask per row: memory quadratic in the row
length, and no flash kernel (SDPA's flash backend takes no mask). Inside `packed(position_ids)` the
model's attention (registered as `ATTENTION`) skips that mask and attends sample by sample instead:
- on CUDA in half precision, every sample of the micro-batch at once, through torch's variable-length
  flash attention (`torch.nn.attention.varlen.varlen_attn`, sliding windows included);
- elsewhere the samples are gathered into a few batches of equal-length slots, one per power-of-two length
  class (a sample padded at its end to its class's longest: causal attention keeps the padding out of every
  real token's view), and each batch is one causal SDPA, with a window mask of the slot's size where the layer
  has one. A loop of one SDPA per sample was the first form of this path: on CPU its thousands of tiny
  kernels a step (each an OpenMP region) made the quickstart's trainer step 5-7x slower on a loaded
  machine (benchmarks/README.md, "Packed attention on CPU").
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
class Slots:
    """Samples of one length class, gathered: `index[i, j]` is the flat token (row * S + position) at position j
    of the class's sample i, the sample's last token past its end (padding nothing real attends to)."""

    index: torch.Tensor
    length: int


@dataclass(frozen=True)
class Segments:
    """Where each packed sample lies: `cu_seqlens` the sample starts over the flattened rows and their end (int32,
    what varlen attention takes), `longest` the longest sample; `slots` the samples by length class, and `source`
    where each flat token's output lies in the classes' outputs, concatenated and flattened."""

    cu_seqlens: torch.Tensor
    longest: int
    slots: list[Slots]
    source: torch.Tensor


_SEGMENTS: ContextVar[Segments | None] = ContextVar("packed_segments", default=None)


def segments_of(position_ids: torch.Tensor) -> Segments:
    """Samples of [rows, S] position ids: a sample starts wherever the position id is 0."""
    rows, length = position_ids.shape
    starts = (position_ids == 0).cpu()
    starts[:, 0] = True
    cuts = starts.reshape(-1).nonzero().squeeze(1)
    ends = torch.cat([cuts[1:], torch.tensor([rows * length])])  # a row's start ends the row before
    sizes = ends - cuts
    classes = sizes.double().log2().ceil().long()  # sizes in (2^(c-1), 2^c] share class c: padding under 2x
    slots, source = [], torch.empty(rows * length, dtype=torch.long)
    offset = 0
    for c in classes.unique().tolist():
        members = (classes == c).nonzero().squeeze(1)
        width = int(sizes[members].max())
        positions = torch.arange(width)
        index = (cuts[members, None] + torch.minimum(positions, sizes[members, None] - 1))
        real = positions < sizes[members, None]
        source[index[real]] = offset + real.reshape(-1).nonzero().squeeze(1)
        offset += index.numel()
        slots.append(Slots(index=index.to(position_ids.device), length=width))
    cu = torch.cat([cuts, torch.tensor([rows * length])]).to(dtype=torch.int32, device=position_ids.device)
    return Segments(cu_seqlens=cu, longest=int(sizes.max()), slots=slots, source=source.to(position_ids.device))


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
    flat = [x.transpose(1, 2).reshape(rows * length, heads, dim) for x in (query, key, value)]
    if query.is_cuda and query.dtype in (torch.float16, torch.bfloat16):
        from torch.nn.attention.varlen import varlen_attn

        out = varlen_attn(*flat, segments.cu_seqlens, segments.cu_seqlens, segments.longest, segments.longest,
                          scale=scaling, window_size=(window - 1, 0) if window else (-1, 0))
        return out.view(rows, length, heads, dim), None
    outs = []
    for slots in segments.slots:
        q, k, v = (x[slots.index].transpose(1, 2) for x in flat)  # [samples, heads, slot, dim]
        mask = _window_mask(slots.length, window, query.device) if window and slots.length > window else None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=mask is None,
                                             scale=scaling)
        outs.append(out.transpose(1, 2).reshape(-1, heads, dim))
    return torch.cat(outs)[segments.source].view(rows, length, heads, dim), None


def packed_mask(*args, **kwargs) -> torch.Tensor | None:
    """No mask inside `packed` (the attention keeps samples apart itself); SDPA's own mask elsewhere."""
    return None if _SEGMENTS.get() is not None else ALL_MASK_ATTENTION_FUNCTIONS["sdpa"](*args, **kwargs)


AttentionInterface.register(ATTENTION, packed_attention)
AttentionMaskInterface.register(ATTENTION, packed_mask)
