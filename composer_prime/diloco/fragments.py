"""Cut a model into contiguous fragments of about equal parameter count.

Streaming DiLoCo syncs one fragment at a time, which spreads the bytes over the H inner steps
instead of one burst. A fragment is a module that holds the model's own Parameter objects (not
copies), so torchft's DiLoCo reads and writes the model through it. A parameter shared by two
modules (tied embeddings) is in exactly one fragment, so it is never updated twice.
"""

from __future__ import annotations

import torch
from torch import nn


class Fragment(nn.Module):
    def __init__(self, named: list[tuple[str, nn.Parameter]]):
        super().__init__()
        for name, param in named:
            # Parameter names may not contain dots; the original name stays recoverable.
            self.register_parameter(name.replace(".", "__"), param)


def split_fragments(model: nn.Module, count: int) -> list[Fragment]:
    named = list(model.named_parameters())  # named_parameters() already yields a tied parameter once
    if count < 1 or count > len(named):
        raise ValueError(f"cannot cut {len(named)} parameters into {count} fragments")
    total = sum(p.numel() for _, p in named)
    fragments: list[list[tuple[str, nn.Parameter]]] = [[]]
    seen = 0
    for index, (name, param) in enumerate(named):
        remaining_params = len(named) - index
        remaining_fragments = count - len(fragments)
        boundary = total * len(fragments) / count
        # Start the next fragment once this one has its share, but keep at least one parameter for each later one.
        if fragments[-1] and remaining_fragments > 0 and (seen >= boundary or remaining_params <= remaining_fragments):
            fragments.append([])
        fragments[-1].append((name, param))
        seen += param.numel()
    return [Fragment(group) for group in fragments]


def flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])
