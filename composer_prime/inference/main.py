"""`uv run inference @ file.toml`: serve a model over HTTP until SIGTERM / SIGINT (then exit 0).

Startup order puts the cheap checks first: the port is bound before the model loads (and
that socket is the one served), the tokenizer and its chat template are checked before the
weights. Each failure is one `error: ...` line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket

from composer_prime.cli import run_cli
from composer_prime.configs.inference import InferenceConfig
from composer_prime.utils.net import KEEP_ALIVE_S, bind


async def serve(config: InferenceConfig, sock: socket.socket) -> None:
    # Imported here, after the port check: torch, transformers and fastapi take seconds to import.
    import uvicorn

    from composer_prime.inference.backend import make_backend
    from composer_prime.inference.server import create_app
    from composer_prime.utils.metrics import MetricsLogger

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            # uvicorn re-raises a captured SIGTERM/SIGINT after shutting down, which would turn
            # a clean stop into exit 130 or death by signal; the loop's handlers below stop it.
            yield

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    backend = make_backend(config)
    metrics = MetricsLogger(config.output_dir, "inference", config.log.wandb_project) if config.output_dir else None
    server = _Server(uvicorn.Config(
        create_app(backend, metrics), log_level=config.log.level, access_log=config.log.level == "debug",
        timeout_keep_alive=KEEP_ALIVE_S,
    ))
    try:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done() and not stop.is_set():
            await asyncio.sleep(0.05)
        if server.started:
            print(f"inference ready on http://{config.host}:{config.port}", flush=True)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([serving, stopping], return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        stopping.cancel()
        await serving
    finally:
        await backend.close()
        if metrics is not None:
            metrics.close()


def main(config: InferenceConfig) -> None:
    logging.basicConfig(level=config.log.level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    sock = bind(config.host, config.port)
    try:
        asyncio.run(serve(config, sock))
    finally:
        sock.close()


def cli() -> None:
    run_cli(InferenceConfig, main)


if __name__ == "__main__":
    cli()
