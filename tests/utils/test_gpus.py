"""GPUs the driver reports and why torch cannot use them, read from /proc/driver/nvidia (here a directory laid out
like it): a torch built for CUDA 13 on a driver older than R580 sees no GPU, which must not pass for a CPU machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from composer_prime.utils.gpus import NvidiaDriver, cuda_problem, nvidia_driver

VERSION = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  (dvs-builder@U16-I3-B03-4-3)"
           "  Thu Oct  2 16:18:09 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n")


def proc(tmp_path: Path, version: str, gpus: int) -> Path:
    root = tmp_path / "nvidia"
    (root / "gpus").mkdir(parents=True)
    (root / "version").write_text(VERSION.format(v=version))
    for i in range(gpus):
        (root / "gpus" / f"0000:{i:02x}:00.0").mkdir()
    return root


@pytest.fixture(autouse=True)
def _all_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_reads_the_driver_version_and_its_gpus(tmp_path):
    assert nvidia_driver(proc(tmp_path, "570.195.03", 8)) == NvidiaDriver(version=(570, 195, 3), gpus=8)
    assert nvidia_driver(tmp_path / "absent") == NvidiaDriver(version=None, gpus=0)


def test_a_driver_older_than_torchs_cuda_is_named(tmp_path):
    driver = nvidia_driver(proc(tmp_path, "570.195.03", 2))
    assert cuda_problem("13.0", driver) == (
        "2 NVIDIA GPU(s) are here, but their driver 570.195.03 is older than 580.65.06, which torch's CUDA 13.0 "
        "needs: update the driver, or install a torch built for an older CUDA")
    assert cuda_problem("12.8", driver) is None  # CUDA 12 minor-version compatibility: 525.60.13 and newer


def test_a_cpu_build_of_torch_beside_gpus_is_named(tmp_path):
    assert "the installed torch is a CPU build" in cuda_problem(None, nvidia_driver(proc(tmp_path, "580.82.07", 1)))


def test_no_problem_without_gpus_or_with_them_hidden(tmp_path, monkeypatch):
    assert cuda_problem("13.0", NvidiaDriver(version=None, gpus=0)) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cuda_problem("13.0", nvidia_driver(proc(tmp_path, "550.54.15", 1))) is None


def test_the_trainer_refuses_to_fall_back_to_the_cpu_beside_gpus_it_cannot_use(tmp_path, monkeypatch):
    """torch built for CUDA 13 (this project's lock) on an R570 driver sees no GPU: before, the trainer then trained
    on the CPU in float32 without a word."""
    import torch

    from composer_prime.configs.shared import ModelConfig
    from composer_prime.errors import UserError
    from composer_prime.model.load import resolve_device
    from composer_prime.utils import gpus

    if torch.cuda.is_available() or torch.version.cuda is None:
        pytest.skip("needs a CUDA build of torch that sees no GPU (this CPU machine)")
    monkeypatch.setattr(gpus, "PROC_NVIDIA", proc(tmp_path, "470.256.02", 4))
    with pytest.raises(UserError, match=r"4 NVIDIA GPU\(s\) are here, but their driver 470.256.02 is older than"):
        resolve_device(ModelConfig(path="m"))
    assert resolve_device(ModelConfig(path="m", device="cpu")).type == "cpu"  # asked for: allowed
