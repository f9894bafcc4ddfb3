"""The reverse proxy's lifecycle: build the aiohttp app, bind, serve, stop cleanly."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import Any

from aiohttp import web

from chaosproxy.proxy.calllog import CallLog
from chaosproxy.proxy.control import ControlApi
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.episodes import EpisodeBook
from chaosproxy.proxy.handler import ProxyHandler
from chaosproxy.proxy.metrics import Metrics
from chaosproxy.proxy.routing import Router
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.proxy.upstream import Upstream

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class PortInUseError(OSError):
    """The port is taken; the message says which."""


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind first, so a taken port is a clear error and port 0 gives the real port at once.

    The protocol must be IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted
    connections only then, and without it Nagle + delayed ACK add ~40 ms per reply.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortInUseError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class ProxyServer:
    """The fault-injecting reverse proxy in front of `upstreams` (name -> base URL)."""

    def __init__(
        self,
        *,
        engine: Any,
        upstreams: dict[str, str],
        run_seed: int,
        run_dir: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: ProxyLimits | None = None,
        token: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.limits = limits or ProxyLimits()
        self.router = Router(upstreams)
        self.token = token
        if self.token is None and host not in LOOPBACK:
            self.token = secrets.token_urlsafe(24)
        self.core = Core(
            engine=engine,
            upstream=Upstream(self.limits),
            log=CallLog(run_dir),
            metrics=Metrics(),
            book=EpisodeBook(),
            run_seed=run_seed,
            limits=self.limits,
        )
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self.core.log.path

    def build_app(self) -> web.Application:
        control = ControlApi(self.core, sorted(self.router.upstreams), self.token)
        app = web.Application(
            client_max_size=self.limits.max_body_bytes, middlewares=[control.guard]
        )
        app.add_routes(control.routes())
        app.router.add_route("*", "/{tail:.*}", ProxyHandler(self.core, self.router))
        return app

    async def start(self) -> None:
        sock = bind_socket(self.host, self.port)
        self.port = sock.getsockname()[1]
        await self.core.upstream.start()
        self._runner = web.AppRunner(
            self.build_app(),
            handler_cancellation=True,
            access_log=None,
            keepalive_timeout=self.limits.idle_timeout_s,
            max_line_size=self.limits.max_line_size,
            max_field_size=self.limits.max_line_size,
            max_headers=self.limits.max_headers,
            shutdown_timeout=2.0,
        )
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.core.upstream.close()
        self.core.log.close()
