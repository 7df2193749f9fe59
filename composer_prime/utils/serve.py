"""An ASGI app served by uvicorn in a thread with its own event loop (a free 127.0.0.1 port by default).

For tests, benchmarks and processes that host a small HTTP app beside their main loop (the
orchestrator's worker coordinator); `with ServedApp(app) as s:` starts it and stops it on exit.
"""

from __future__ import annotations

import asyncio
import threading
import time

import uvicorn

from composer_prime.utils.net import KEEP_ALIVE_S, free_port


class ServedApp:
    def __init__(self, app, start_timeout_s: float = 5.0, host: str = "127.0.0.1", port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://{host}:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=self.port, log_level="warning",
                                                   timeout_keep_alive=KEEP_ALIVE_S))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve()), daemon=True)
        self._timeout_s = start_timeout_s

    def start(self) -> ServedApp:
        self.thread.start()
        for _ in range(int(self._timeout_s / 0.01)):
            if self.server.started:
                return self
            if not self.thread.is_alive():
                break
            time.sleep(0.01)
        raise RuntimeError(f"server on {self.url} did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def __enter__(self) -> ServedApp:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
