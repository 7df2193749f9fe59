"""Start torchft's lighthouse (the quorum service sites join) as a child process.

The binary ships in the torchft wheel as `torchft_lighthouse`, next to this Python.
"""

from __future__ import annotations

from pathlib import Path

from composer_prime.utils.processes import Child, find_binary, spawn


def start_lighthouse(bind: str, min_replicas: int, log_dir: Path, join_timeout_ms: int = 1000,
                     heartbeat_timeout_ms: int = 2000) -> Child:
    """`bind` is host:port; a short join timeout lets a quorum form as soon as min_replicas sites are there."""
    binary = find_binary("torchft_lighthouse", "it ships in the torchft wheel")
    return spawn("lighthouse", [binary, "--min_replicas", str(min_replicas), "--bind", bind,
                                "--join_timeout_ms", str(join_timeout_ms), "--heartbeat_timeout_ms",
                                str(heartbeat_timeout_ms)], log_dir)
