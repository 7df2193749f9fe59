"""The real `rl` launcher on a machine it is told has GPUs, each child it starts swapped for a recorder of the
environment it got: `python placed_children.py NUM_GPUS OUT_DIR RL_ARGS...`.

Only the launcher is told the count (torch.cuda.device_count, what `rl` reads to place processes): this machine may
have no GPU. Everything else is `rl` itself: its config, preflight, placement, the commands it builds (torchrun for
several trainer ranks included) and how it spawns them, except that each child's module (`-m composer_prime.X.main`)
is this file (`placed_children.py child X OUT_DIR`), which writes OUT_DIR/X-<pid>.json ({CUDA_VISIBLE_DEVICES,
LOCAL_RANK}); the inference child answers /health on its configured port until stopped, as `rl` waits for it; the
orchestrator and trainer children exit 0, which ends the run.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
import tomllib
from pathlib import Path


def child(name: str, out_dir: str, args: list[str]) -> None:
    seen = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"), "LOCAL_RANK": os.environ.get("LOCAL_RANK")}
    (Path(out_dir) / f"{name}-{os.getpid()}.json").write_text(json.dumps(seen))
    if name != "inference":
        return
    config = tomllib.loads(Path(args[args.index("@") + 1]).read_text())

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    http.server.HTTPServer((config.get("host", "127.0.0.1"), config["port"]), Health).serve_forever()


def launch(num_gpus: int, out_dir: str, rl_args: list[str]) -> None:
    import torch

    from composer_prime.rl import main as rl

    torch.cuda.device_count = lambda: num_gpus
    real = rl.commands

    def recorded(config, config_dir):
        argvs = real(config, config_dir)
        for name, argv in argvs.items():
            at = argv.index(f"composer_prime.{name}.main")
            assert argv[at - 1] == "-m", argv
            argv[at - 1 : at + 1] = [__file__, "child", name, out_dir]
        return argvs

    rl.commands = recorded
    sys.argv = ["rl", *rl_args]
    rl.cli()


if __name__ == "__main__":
    if sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        launch(int(sys.argv[1]), sys.argv[2], sys.argv[3:])
