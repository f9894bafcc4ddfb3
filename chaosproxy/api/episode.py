"""One episode of a running Environment: its URLs, its calls and faults, its verdict, its end.

Every method is synchronous and short: URLs are computed, calls are read from the log,
and the oracle is a direct HTTP call to the services (never through the proxy), so the
methods are safe in sync tests, in async tests and on the environment's own loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from chaosproxy.api.errors import NoTaskError, NotRunningError, UnknownDomainError
from chaosproxy.api.verdict import Verdict, judge
from chaosproxy.records import CallRecord
from chaosproxy.types import Endpoints, Journal

if TYPE_CHECKING:
    from chaosproxy.domains.kit import Task
    from chaosproxy.domains.kit.declare import DomainState


@dataclass(frozen=True)
class Fault:
    """A fault the proxy delivered to the agent in this episode."""

    name: str
    domain: str
    tool: str | None
    step: int | None
    stage: str
    recoverable: bool
    params: dict[str, object] = field(default_factory=dict)


EndpointSet = Endpoints
"""The public name of `chaosproxy.types.Endpoints`: where one domain (or upstream) is
reached inside an episode, through the proxy."""


class EpisodeHost(Protocol):
    """What an Episode needs from its Environment."""

    def endpoints_for(self, episode: str) -> Mapping[str, EndpointSet]: ...

    def builtin_domains(self) -> list[str]: ...

    def oracle(self, domain: str, method: str, path: str, body: object = None) -> object: ...

    def calls_of(self, episode: str) -> list[CallRecord]: ...

    def service_errors_of(self, episode: str) -> int: ...

    def end_episode(self, episode: str) -> list[CallRecord]: ...

    async def aend_episode(self, episode: str) -> list[CallRecord]: ...


class Episode:
    """Create with `Environment.episode()`; end with `end()` or by leaving `with episode:`."""

    def __init__(
        self,
        host: EpisodeHost,
        episode_id: str,
        key: str,
        profile: str,
        task: Task[DomainState] | None,
    ) -> None:
        self._host = host
        self.id = episode_id
        self.key = key
        self.profile = profile
        self._task = task
        self._ended: list[CallRecord] | None = None

    def __repr__(self) -> str:
        task = f" task={self.task!r}" if self.task else ""
        return f"<Episode {self.id!r} profile={self.profile!r}{task}>"

    @property
    def task(self) -> str | None:
        """The built-in task id this episode was reset to, if any."""
        return self._task.id if self._task is not None else None

    @property
    def task_text(self) -> str | None:
        """What the task asks the agent to do (give it to your agent as its instruction)."""
        return self._task.description if self._task is not None else None

    @property
    def domain(self) -> str | None:
        """The task's domain, if a task was given."""
        return self._task.domain if self._task is not None else None

    @property
    def ended(self) -> bool:
        return self._ended is not None

    # ---- where the agent goes -------------------------------------------------------

    def _endpoint(self, domain: str | None) -> EndpointSet:
        self._check_live()
        ends = self._host.endpoints_for(self.id)
        name = domain or self.domain or (next(iter(ends)) if len(ends) == 1 else None)
        if name is None:
            raise UnknownDomainError(
                f"name a domain: this environment serves {', '.join(sorted(ends))}"
            )
        if name not in ends:
            raise UnknownDomainError(
                f"{name!r} is not served by this environment; it serves "
                f"{', '.join(sorted(ends)) or '(nothing)'}"
            )
        return ends[name]

    def endpoints(self) -> dict[str, EndpointSet]:
        """Every service of the environment (domains and upstreams) inside this episode."""
        self._check_live()
        return dict(self._host.endpoints_for(self.id))

    def url(self, domain: str | None = None) -> str:
        """REST base inside this episode: POST {url}/tools/{tool} (default: the task's domain)."""
        return self._endpoint(domain).rest

    def mcp_url(self, domain: str | None = None) -> str:
        """The MCP endpoint (streamable HTTP) inside this episode."""
        return self._endpoint(domain).mcp

    def openapi_url(self, domain: str | None = None) -> str:
        """The OpenAPI 3.1 document of the domain's tools."""
        return self._endpoint(domain).openapi

    # ---- what happened --------------------------------------------------------------

    def calls(self) -> list[CallRecord]:
        """Every proxied request of this episode so far, as the log records it."""
        if self._ended is not None:
            return list(self._ended)
        return self._host.calls_of(self.id)

    def service_errors(self) -> int:
        """Upstream 5xx replies in this episode that the proxy did not inject: the service
        failed on its own, so a failure of the agent here may not be the agent's."""
        self._check_live()
        return self._host.service_errors_of(self.id)

    def faults(self) -> list[Fault]:
        """The faults delivered so far, in the order the agent met them."""
        return [
            Fault(
                name=call.fault.name,
                domain=call.domain,
                tool=call.tool,
                step=call.step,
                stage=call.fault.stage,
                recoverable=call.fault.recoverable,
                params=dict(call.fault.params),
            )
            for call in self.calls()
            if call.fault is not None and call.fault_delivered
        ]

    def journal(self, domain: str | None = None) -> Journal:
        """A built-in domain's journal of this episode: each state change, with its step."""
        self._check_live()
        name = domain or self.domain
        if name is None or name not in self._host.builtin_domains():
            served = ", ".join(self._host.builtin_domains()) or "(none)"
            raise UnknownDomainError(
                f"journal: name a built-in domain of this environment ({served}), got {name!r}"
            )
        body = self._host.oracle(name, "GET", f"/episodes/{quote(self.id, safe='')}/journal")
        return Journal.model_validate(body)

    def verdict(self) -> Verdict:
        """Run the task's verifier on the initial and current state of its domain."""
        if self._task is None:
            raise NoTaskError(
                f"episode {self.id!r} has no task; create it with env.episode(task=...)"
            )
        return judge(self._task, self.journal(self._task.domain))

    # ---- the end --------------------------------------------------------------------

    def end(self) -> None:
        """Forget the episode in the proxy and every service (idempotent)."""
        if self._ended is None:
            self._ended = self._host.end_episode(self.id)

    async def aend(self) -> None:
        """`end()` for async code: waits for the services without blocking the event loop."""
        if self._ended is None:
            self._ended = await self._host.aend_episode(self.id)

    def _check_live(self) -> None:
        if self._ended is not None:
            raise NotRunningError(f"episode {self.id!r} has ended")

    def __enter__(self) -> Episode:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.end()

    async def __aenter__(self) -> Episode:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aend()
