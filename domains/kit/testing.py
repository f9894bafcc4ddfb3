"""Serve an ASGI app on a real 127.0.0.1 port for tests and local tools.

The server runs in its own thread with its own event loop, so it outlives any one test's
loop (module-scoped fixtures) and behaves like a separate service.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket with TCP_NODELAY; port 0 picks a free one. OSError if the port is taken.

    Without TCP_NODELAY on the listening socket, uvicorn serving it answered every request
    ~40 ms late on loopback (Nagle against delayed ACK).
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


@contextmanager
def serve_app(app: Any, host: str = "127.0.0.1", *, startup_timeout: float = 10.0) -> Iterator[str]:
    """Serve `app` on a free port of `host`; yields the base URL (no trailing slash)."""
    sock = bind_socket(host)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the test server on {host}:{port} did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
