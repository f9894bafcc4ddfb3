"""The reverse proxy's lifecycle: bind both listeners, serve, stop cleanly.

The agent port is chaosproxy's own lean HTTP/1.1 server (`listener.py`); the control API,
which is not on any call's path, is an aiohttp app.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
from pathlib import Path
from typing import Any

from aiohttp import web

from chaosproxy.errors import PortInUseError
from chaosproxy.faults import FaultEngine
from chaosproxy.proxy.apimap import ApiMap, OpenApiError, not_openapi
from chaosproxy.proxy.calllog import CallLog
from chaosproxy.proxy.control import ControlApi
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.episodes import EpisodeBook
from chaosproxy.proxy.handler import ProxyHandler
from chaosproxy.proxy.listener import LISTEN_BACKLOG, AgentPort
from chaosproxy.proxy.metrics import Metrics
from chaosproxy.proxy.routing import DEFAULT_EPISODE, EpisodeCredentials, Router
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.proxy.upstream import DocumentError, Upstream

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


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
        error = PortInUseError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}")
        error.port = port
        raise error from exc
    sock.listen(LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


class ProxyServer:
    """The fault-injecting reverse proxy in front of `upstreams` (name -> base URL).

    Two listeners: the agent-facing proxy on `host:port`, and the control API on
    `control_host:control_port` (default: the next port, or any free one when that is
    taken or `port` is 0), which always needs `token` (generated when not given).
    `oracles` are the built-in services' direct URLs, told to forget deleted episodes;
    every other upstream is a REST API, identified by its OpenAPI document (`openapi`:
    name -> document, file or URL; default for a loopback upstream: `{URL}/openapi.json`,
    used when it is 3.x).
    """

    def __init__(
        self,
        *,
        engine: FaultEngine,
        upstreams: dict[str, str],
        run_seed: int,
        run_dir: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: ProxyLimits | None = None,
        token: str | None = None,
        control_host: str = "127.0.0.1",
        control_port: int | None = None,
        oracles: dict[str, str] | None = None,
        openapi: dict[str, Any] | None = None,
        oracle_headers: dict[str, str] | None = None,
        episode_credentials: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.control_host = control_host
        self.control_port = control_port
        self.limits = limits or ProxyLimits()
        self.control_api: ControlApi | None = None
        self.router = Router(upstreams, EpisodeCredentials() if episode_credentials else None)
        self.token = token or secrets.token_urlsafe(24)
        self.core = Core(
            engine=engine,
            upstream=Upstream(self.limits),
            log=CallLog(run_dir),
            metrics=Metrics(),
            book=EpisodeBook(
                max_idle=self.limits.max_idle_episodes, idle_ttl_s=self.limits.episode_idle_ttl_s
            ),
            run_seed=run_seed,
            limits=self.limits,
            oracles=dict(oracles or {}),
            oracle_headers=dict(oracle_headers or {}),
        )
        engine.roll_episode(DEFAULT_EPISODE, self.limits.default_episode_calls)
        self._runners: list[web.AppRunner] = []
        self._agent_port: AgentPort | None = None
        self._openapi = dict(openapi or {})
        self.apis: dict[str, ApiMap] = {}

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    @property
    def control_url(self) -> str:
        if self.control_port is None:
            raise RuntimeError("the proxy is not started")
        return _url(self.control_host, self.control_port)

    @property
    def log_path(self) -> Path | None:
        return self.core.log.path

    def build_agent_port(self) -> AgentPort:
        """The agent-facing listener: only the proxy's handler, no control endpoint at all.

        Group commit: before any reply byte, the log lines written so far reach the OS.
        """
        handler = ProxyHandler(self.core, self.router, frozenset(self.core.oracles), apis=self.apis)
        return AgentPort(handler, before_reply=self.core.log.flush, limits=self.limits)

    def build_control_app(self) -> web.Application:
        control = ControlApi(
            self.core, sorted(self.router.upstreams), self.token, self.router.credentials
        )
        self.control_api = control
        app = web.Application(client_max_size=1024 * 1024, middlewares=[control.guard])
        app.add_routes(control.routes())
        return app

    def _bind_control(self) -> socket.socket:
        if self.control_port is not None:
            return bind_socket(self.control_host, self.control_port)
        if self.port != 0 and self.port < 65535:
            try:
                return bind_socket(self.control_host, self.port + 1)
            except PortInUseError:
                pass
        return bind_socket(self.control_host, 0)

    async def _serve(self, app: web.Application, sock: socket.socket) -> None:
        runner = web.AppRunner(
            app,
            handler_cancellation=True,
            access_log=None,
            keepalive_timeout=self.limits.idle_timeout_s,
            max_line_size=self.limits.max_line_size,
            max_field_size=self.limits.max_line_size,
            max_headers=self.limits.max_headers,
            shutdown_timeout=2.0,
        )
        await runner.setup()
        self._runners.append(runner)
        # SockSite listens again with its own backlog (128 by default): ask for ours.
        await web.SockSite(runner, sock, backlog=LISTEN_BACKLOG).start()

    async def start(self) -> None:
        sock = bind_socket(self.host, self.port)
        self.port = sock.getsockname()[1]
        try:
            control_sock = self._bind_control()
        except BaseException:
            sock.close()
            raise
        self.control_port = control_sock.getsockname()[1]
        await self.core.upstream.start()
        try:
            await self._describe_apis()
        except BaseException:
            sock.close()
            control_sock.close()
            await self.core.upstream.close()
            raise
        self._agent_port = self.build_agent_port()
        await self._agent_port.start(sock)
        await self._serve(self.build_control_app(), control_sock)

    async def _describe_apis(self) -> None:
        """Read each REST upstream's OpenAPI document: tool identities and critical args.

        A document given explicitly must be usable (OpenApiError otherwise); the probed
        `{URL}/openapi.json` of a loopback upstream is used only when it is OpenAPI 3.x.
        """
        given: dict[str, Any] = {}
        probed: dict[str, str] = {}
        for name, url in self.router.upstreams.items():
            if name in self.core.oracles:
                continue
            if name in self._openapi:
                given[name] = self._openapi[name]
            elif url.host in LOOPBACK:
                # only local services are asked unprompted: a forwarded public host is not
                probed[name] = f"{url}/openapi.json"
        documents = await asyncio.gather(
            *(self._given_document(name, source) for name, source in given.items()),
            *(self._probed_document(source) for source in probed.values()),
        )
        for name, document in zip([*given, *probed], documents, strict=True):
            api = ApiMap.from_openapi(document)
            if api is None:
                continue
            self.apis[name] = api
            if api.critical:
                self.core.engine.add_inferred_hints(name, {"critical_args": api.critical})

    async def _given_document(self, name: str, source: Any) -> Any:
        document = source
        if isinstance(source, str):
            try:
                document = await self.core.upstream.fetch_document(source)
            except DocumentError as exc:
                raise OpenApiError(
                    f"OpenAPI document of upstream {name!r} ({source}): {exc}"
                ) from None
        problem = not_openapi(document)
        if problem is not None:
            shown = source if isinstance(source, str) else "inline"
            raise OpenApiError(f"OpenAPI document of upstream {name!r} ({shown}): {problem}")
        return document

    async def _probed_document(self, url: str) -> Any:
        try:
            return await self.core.upstream.fetch_document(url)
        except DocumentError:
            return None

    async def stop(self) -> None:
        if self._agent_port is not None:
            await self._agent_port.stop()
            self._agent_port = None
        while self._runners:
            await self._runners.pop().cleanup()
        await self.core.upstream.close()
        self.core.log.close()
