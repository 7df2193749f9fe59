"""NVIDIA GPUs as the kernel driver reports them, and why torch may fail to use them, without touching CUDA.

A process that queries CUDA and then forks (vLLM starting its engine) leaves the child unable to use
CUDA, so nothing here calls `torch.cuda`: the driver lists its version and its GPUs under
/proc/driver/nvidia whatever torch makes of them. That is how a torch built for a newer CUDA than the
driver supports is told apart from a machine without GPUs: torch sees no GPU either way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

# The oldest Linux driver for each CUDA major version: under CUDA's minor version compatibility any 12.x
# build runs on 525.60.13 or newer and any 13.x build on 580.65.06 or newer (CUDA Toolkit release notes,
# "CUDA Driver": the minimum required driver for minor version compatibility).
MIN_DRIVER = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580, 65, 6)}
PROC_NVIDIA = Path("/proc/driver/nvidia")


@dataclass(frozen=True)
class NvidiaDriver:
    version: tuple[int, ...] | None
    """The kernel module's version (e.g. (550, 54, 15)); None without an NVIDIA driver."""
    gpus: int
    """GPUs the driver manages, whatever CUDA_VISIBLE_DEVICES shows a process."""


def nvidia_driver(root: Path | None = None) -> NvidiaDriver:
    root = root or PROC_NVIDIA
    try:
        text = (root / "version").read_text()
    except OSError:
        return NvidiaDriver(version=None, gpus=0)
    found = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", text)
    gpus = len([p for p in (root / "gpus").iterdir() if p.is_dir()]) if (root / "gpus").is_dir() else 0
    return NvidiaDriver(version=tuple(int(x) for x in found.group(1).split(".")) if found else None, gpus=gpus)


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(f"{v:02d}" if i == 2 else str(v) for i, v in enumerate(version))


def cuda_problem(torch_cuda: str | None | bool = False, driver: NvidiaDriver | None = None) -> str | None:
    """Why torch cannot use this machine's NVIDIA GPUs, in one sentence; None when there are none to use
    (no driver, or CUDA_VISIBLE_DEVICES hides them all) or nothing wrong can be seen from here.

    `torch_cuda` is the CUDA version torch was built for (default: the installed torch's; None: a CPU build)."""
    driver = driver or nvidia_driver()
    if driver.gpus == 0 or os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1"):
        return None
    if torch_cuda is False:
        import torch

        torch_cuda = torch.version.cuda
    here = f"{driver.gpus} NVIDIA GPU(s) are here"
    if torch_cuda is None:
        return f"{here}, but the installed torch is a CPU build: install a CUDA build of torch"
    need = MIN_DRIVER.get(int(str(torch_cuda).split(".")[0]))
    if need is not None and driver.version is not None and driver.version < need:
        return (f"{here}, but their driver {_dotted(driver.version)} is older than {_dotted(need)}, which torch's "
                f"CUDA {torch_cuda} needs: update the driver, or install a torch built for an older CUDA")
    return None
