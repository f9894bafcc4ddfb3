"""Everything an agent talks to, as one async context manager: services, engine, proxy.

Private: the public `chaosproxy.Environment` (chaosproxy/api/environment.py) checks the
settings and is what `up`, the runner and the pytest plugin construct; this class does the
starting and stopping behind it::

    async with Environment(domains=["travel"], profile="lambda0.2", seed=7, run_dir=d) as env:
        env.endpoints("ep1")["travel"].mcp   # http://127.0.0.1:PORT/e/ep1/travel/mcp
        env.service_urls["travel"]           # direct, for oracle calls
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from chaosproxy.compose.services import fetch_hints
from chaosproxy.errors import SetupError
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.services import DomainServices
from chaosproxy.proxy.settings import ProxyLimits


@dataclass(frozen=True)
class Endpoints:
    """Where an agent finds one domain through the proxy."""

    domain: str
    rest: str
    openapi: str
    mcp: str


class Environment:
    """Domain services (child process) + fault engine + proxy, started and stopped together."""

    def __init__(
        self,
        *,
        domains: Sequence[str] = (),
        upstreams: dict[str, str] | None = None,
        profile: Any = "lambda0.0",
        seed: int = 0,
        port: int = 0,
        host: str = "127.0.0.1",
        run_dir: Path | None = None,
        limits: ProxyLimits | None = None,
        token: str | None = None,
        control_host: str = "127.0.0.1",
        control_port: int | None = None,
        services: dict[str, str] | None = None,
        openapi: dict[str, str] | None = None,
        episode_credentials: bool = False,
    ) -> None:
        from chaosproxy.faults import FaultEngine
        from chaosproxy.profiles import load_profile

        self.domains = list(domains)
        self.upstreams = dict(upstreams or {})
        self.external = dict(services or {})
        clash = sorted(
            (set(self.domains) & set(self.upstreams))
            | (set(self.external) & (set(self.domains) | set(self.upstreams)))
        )
        if clash:
            raise SetupError(f"upstream names clash with built-in domains: {', '.join(clash)}")
        self._check_domains()
        resolved = load_profile(profile) if isinstance(profile, (str, Path)) else profile
        self.engine = FaultEngine(default_profile=resolved, seed=seed)
        self.seed = seed
        self.run_dir = run_dir
        self._services = DomainServices(self.domains, limits)
        self._port, self._host, self._limits, self._token = port, host, limits, token
        self._control_host, self._control_port = control_host, control_port
        self.openapi = dict(openapi or {})
        unknown = sorted(set(self.openapi) - set(self.upstreams))
        if unknown:
            raise SetupError(f"--openapi for unknown upstream(s): {', '.join(unknown)}")
        self.proxy: ProxyServer | None = None
        self.service_urls: dict[str, str] = {}
        self.episode_credentials = episode_credentials

    def _check_domains(self) -> None:
        if not self.domains:
            return
        from chaosproxy.domains.registry import UnknownDomainError, get_domain

        for name in self.domains:
            try:
                get_domain(name)
            except UnknownDomainError as exc:
                raise SetupError(str(exc)) from None

    @property
    def proxy_url(self) -> str:
        if self.proxy is None:
            raise RuntimeError("the environment is not started")
        return self.proxy.url

    @property
    def control_url(self) -> str:
        """The control API's own listener (needs `Authorization: Bearer {token}`)."""
        if self.proxy is None:
            raise RuntimeError("the environment is not started")
        return self.proxy.control_url

    @property
    def token(self) -> str:
        """The control API's bearer token (the given one, or generated at start)."""
        if self.proxy is None:
            raise RuntimeError("the environment is not started")
        return self.proxy.token

    @property
    def oracle_headers(self) -> dict[str, str]:
        """What oracle clients send to the built-in services (their `/_oracle/` needs it)."""
        return self._services.oracle_headers

    @property
    def log_path(self) -> Path | None:
        return self.proxy.log_path if self.proxy else None

    def endpoints(self, episode: str | None = None) -> dict[str, Endpoints]:
        """Per service: REST base, OpenAPI and MCP URLs (with `/e/{episode}` when given, or
        `/e/{credential}` under episode credentials)."""
        segment = self.credential(episode) if episode else None
        base = self.proxy_url + (f"/e/{segment}" if segment else "")
        return {
            name: Endpoints(
                domain=name,
                rest=f"{base}/{name}",
                openapi=f"{base}/{name}/openapi.json",
                mcp=f"{base}/{name}/mcp",
            )
            for name in sorted(self.service_urls)
        }

    def credential(self, episode: str) -> str:
        """What stands for `episode` in its URLs: its credential (issued now if it has none)
        under episode credentials, else its id."""
        credentials = self.proxy.router.credentials if self.proxy is not None else None
        return credentials.issue(episode) if credentials is not None else episode

    def _revoke(self, episode: str) -> None:
        if self.proxy is not None and self.proxy.router.credentials is not None:
            self.proxy.router.credentials.revoke(episode)

    def configure_episode(
        self,
        episode: str,
        profile: Any = None,
        seed: int | None = None,
        key: str | None = None,
        plan_length: int | None = None,
        attempt: str | None = None,
        schedule: Any = None,
        schedule_mode: Any = "replace",
    ) -> None:
        """(Re)start an episode: its own profile, seed and draw key, steps counted from 1;
        `schedule` (a `faults.schedule.Schedule`) replaces or overlays the profile's draws;
        `plan_length` (the task's l_min) times an incident plan's incident within the task;
        `attempt` is stamped on the episode's calls until it is forgotten."""
        from chaosproxy.profiles import load_profile

        resolved = load_profile(profile) if isinstance(profile, (str, Path)) else profile
        self.engine.configure_episode(
            episode,
            profile=resolved,
            seed=seed,
            key=key,
            plan_length=plan_length,
            schedule=schedule,
            schedule_mode=schedule_mode,
        )
        if self.proxy is not None:
            self.proxy.core.book.forget(episode)
            self.credential(episode)
            if attempt is not None:
                self.proxy.core.book.attempts[episode] = attempt

    def forget_episode(self, episode: str) -> None:
        """Drop an ended episode's engine record and step count, so long runs stay small."""
        self.engine.forget_episode(episode)
        self._revoke(episode)
        if self.proxy is not None:
            self.proxy.core.book.forget(episode)

    async def delete_episode(self, episode: str) -> dict[str, int]:
        """Forget an episode in the proxy, the engine and every built-in service's oracle."""
        if self.proxy is None:
            self.engine.forget_episode(episode)
            return {}
        self._revoke(episode)
        return await self.proxy.core.forget_episode(episode)

    def service_errors(self, episode: str) -> int:
        """Upstream 5xx replies in an episode that the proxy did not inject."""
        return self.proxy.core.book.service_errors.get(episode, 0) if self.proxy else 0

    async def start(self) -> Environment:
        try:
            builtin = {**await self._services.start(), **self.external}
            self.service_urls = {**builtin, **self.upstreams}
            hints = {**await self._services.hints(), **await fetch_hints(self.external)}
            for name, domain_hints in hints.items():
                self.engine.set_hints(name, domain_hints)
            self.proxy = ProxyServer(
                engine=self.engine,
                upstreams=self.service_urls,
                run_seed=self.seed,
                run_dir=self.run_dir,
                host=self._host,
                port=self._port,
                limits=self._limits,
                token=self._token,
                control_host=self._control_host,
                control_port=self._control_port,
                oracles=builtin,
                openapi=dict(self.openapi),
                oracle_headers=self._services.oracle_headers,
                episode_credentials=self.episode_credentials,
            )
            await self.proxy.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def stop(self) -> None:
        if self.proxy is not None:
            await self.proxy.stop()
        await self._services.stop()

    async def __aenter__(self) -> Environment:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
