"""Everything an agent talks to, as one async context manager: services, engine, proxy.

Private: the public `chaosproxy.Environment` (chaosproxy/api/environment.py) checks the
settings once (`chaosproxy.api.settings.check_settings`) and is what `up`, the runner and
the pytest plugin construct; this class takes those checked settings and does the
starting and stopping behind it, checking nothing again::

    async with Stack(check_settings(domains=["travel"], seed=7), run_dir=d) as env:
        env.endpoints("ep1")["travel"].mcp   # http://127.0.0.1:PORT/e/ep1/travel/mcp
        env.service_urls["travel"]           # direct, for oracle calls
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from chaosproxy.compose.services import fetch_hints
from chaosproxy.faults import FaultEngine
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.services import DomainServices
from chaosproxy.types import Endpoints

if TYPE_CHECKING:
    from chaosproxy.api.settings import EnvironmentSettings
    from chaosproxy.faults.profile import Profile
    from chaosproxy.faults.schedule import Schedule, ScheduleMode


class Stack:
    """Domain services (child process) + fault engine + proxy, started and stopped together:
    what a running `chaosproxy.Environment` holds (one class per name: the public one is
    the Environment)."""

    def __init__(self, settings: EnvironmentSettings, run_dir: Path | None = None) -> None:
        self.settings = settings
        self.run_dir = run_dir if run_dir is not None else settings.run_dir
        self.engine = FaultEngine(default_profile=settings.profile, seed=settings.seed)
        self._services = DomainServices(settings.domains, settings.limits)
        self.proxy: ProxyServer | None = None
        self.service_urls: dict[str, str] = {}

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
        return {name: Endpoints.under(base, name) for name in sorted(self.service_urls)}

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
        profile: Profile | None = None,
        seed: int | None = None,
        key: str | None = None,
        plan_length: int | None = None,
        attempt: str | None = None,
        schedule: Schedule | None = None,
        schedule_mode: ScheduleMode = "replace",
    ) -> None:
        """(Re)start an episode: its own profile, seed and draw key, steps counted from 1;
        `schedule` replaces or overlays the profile's draws; `plan_length` (the task's
        l_min) times an incident plan's incident within the task; `attempt` is stamped on
        the episode's calls until it is forgotten."""
        self.engine.configure_episode(
            episode,
            profile=profile,
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

    async def start(self) -> Stack:
        settings = self.settings
        try:
            builtin = {**await self._services.start(), **settings.services}
            self.service_urls = {**builtin, **settings.upstreams}
            hints = {**await self._services.hints(), **await fetch_hints(settings.services)}
            for name, domain_hints in hints.items():
                self.engine.set_hints(name, domain_hints)
            self.proxy = ProxyServer(
                engine=self.engine,
                upstreams=self.service_urls,
                run_seed=settings.seed,
                run_dir=self.run_dir,
                host=settings.host,
                port=settings.port,
                limits=settings.limits,
                token=settings.control.token,
                control_host=settings.control.host,
                control_port=settings.control.port,
                oracles=builtin,
                openapi=dict(settings.openapi),
                oracle_headers=self._services.oracle_headers,
                episode_credentials=settings.episode_credentials,
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

    async def __aenter__(self) -> Stack:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
