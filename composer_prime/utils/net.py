"""Ports on this machine: find a free one, or claim a configured one with a clear error."""

from __future__ import annotations

import socket

from composer_prime.errors import UserError

# How long our servers (inference, broadcast, ServedApp, OpenEnv) keep an idle connection open. httpx's pool reuses
# one for up to 5 s and uvicorn's default closes it after 5 s, so a request sent as the server closes died as
# ReadError: one such drop ended a quickstart at step 217 ("lost the inference server"). A server must outlast its
# clients' pools.
KEEP_ALIVE_S = 75


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def bind(host: str, port: int) -> socket.socket:
    """The bound socket, or a UserError naming the port when something else holds it."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT leftovers are fine; a listener is not
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot bind {host}:{port}: port {port} is already in use ({exc.strerror})") from None
    return sock


def check_port_free(host: str, port: int) -> None:
    bind(host, port).close()
