"""`run --services`: episodes against an environment that is already up (docker compose).

The runner normally starts its own services and proxy; here it only talks to them: each
episode is configured and forgotten through the proxy's control API (bearer token), the
agent gets the proxy's `/e/{episode}/{domain}/` URLs, and the runner's oracle calls go to
the services directly with the oracle token. When the proxy's log is reachable from here
(`--proxy-log`, e.g. the compose volume), the run's own calls are copied into the run
directory at the end, so `chaosproxy score` sees them.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from chaosproxy.compose.services import oracle_headers
from chaosproxy.errors import ChaosError
from chaosproxy.records import CALLS_FILE
from chaosproxy.tracing import EPISODE_TRACEPARENT, NOOP, Tracer
from chaosproxy.types import Endpoints

CONTROL_TOKEN_ENV = "CHAOSPROXY_CONTROL_TOKEN"


class RemoteError(ChaosError, ValueError):
    """The environment is not up, not reachable, or does not serve what the run needs."""


@dataclass(frozen=True)
class RemoteSpec:
    services: dict[str, str]
    """Domain -> the service's URL as reachable from the runner (oracle calls)."""
    proxy_url: str
    control_url: str
    control_token: str | None = None
    oracle_token: str | None = None
    proxy_log: Path | None = None
    """The proxy's calls.jsonl, when this machine can read it."""


@dataclass
class RemoteEnvironment:
    """What an episode needs from its environment, over HTTP to one that is already up."""

    spec: RemoteSpec
    profiles: dict[str, Any]
    domains: list[str]
    episodes: set[str] = field(default_factory=set)
    ended: set[str] = field(default_factory=set)
    service_urls: dict[str, str] = field(default_factory=dict)
    served: set[str] = field(default_factory=set)
    """What the proxy serves (its domains and upstreams), as its health check lists them."""
    credentials: dict[str, str] = field(default_factory=dict)
    """Episode credentials the proxy answered (`up --episode-credentials`), by episode."""
    tracer: Tracer = NOOP
    """The runner's own tracer (`run --services --otlp-endpoint`): its episode spans."""
    _control: httpx.Client | None = None
    _oracle: httpx.AsyncClient | None = None

    def __post_init__(self) -> None:
        self.service_urls = dict(self.spec.services)

    def oracle_headers(self) -> dict[str, str]:
        return oracle_headers(self.spec.oracle_token)

    def _client(self) -> httpx.Client:
        if self._control is None:
            raise RuntimeError("RemoteEnvironment is used outside `async with`")
        return self._control

    def _episode_url(self, episode: str) -> str:
        return f"{self.spec.control_url}/_chaos/episodes/{quote(episode, safe='')}"

    async def __aenter__(self) -> RemoteEnvironment:
        missing = sorted(set(self.domains) - set(self.spec.services))
        if missing:
            raise RemoteError(
                f"--services has no URL for {', '.join(missing)}, which the tasks need"
            )
        headers = {}
        if self.spec.control_token:
            headers["Authorization"] = f"Bearer {self.spec.control_token}"
        self._control = httpx.Client(timeout=10.0, headers=headers)
        try:
            reply = self._control.get(f"{self.spec.control_url}/_chaos/health")
        except httpx.HTTPError as exc:
            self._control.close()
            raise RemoteError(f"the control API {self.spec.control_url} is not up: {exc}") from exc
        if reply.status_code != 200:
            self._control.close()
            raise RemoteError(
                f"the control API {self.spec.control_url} answered {reply.status_code}: "
                f"{reply.text[:300]} (is {CONTROL_TOKEN_ENV} the proxy's token?)"
            )
        served = self.served = set(reply.json().get("services", []))
        unserved = sorted(set(self.domains) - served)
        if unserved:
            self._control.close()
            raise RemoteError(f"the proxy does not serve {', '.join(unserved)}")
        self._oracle = httpx.AsyncClient(timeout=10.0, headers=self.oracle_headers())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._oracle is not None:
            await self._oracle.aclose()
            self._oracle = None
        if self._control is not None:
            for episode in sorted(self.ended):
                with contextlib.suppress(httpx.HTTPError):
                    self._control.delete(self._episode_url(episode))
            self._control.close()
            self._control = None

    def configure_episode(
        self,
        episode: str,
        *,
        profile: str,
        seed: int,
        key: str,
        plan_length: int,
        attempt: str | None = None,
    ) -> None:
        """`attempt` is stamped by the running proxy on the episode's calls."""
        body = {
            "profile": self.profiles[profile].model_dump(mode="json"),
            "seed": seed,
            "key": key,
            "plan_length": plan_length,
        }
        if attempt is not None:
            body["attempt"] = attempt
        parent = EPISODE_TRACEPARENT.get()
        if parent is not None:  # the proxy's spans of this episode nest under the runner's
            body["traceparent"] = parent
        reply = self._client().put(self._episode_url(episode), json=body)
        if reply.status_code != 200:
            raise RemoteError(f"configuring episode {episode}: {reply.status_code} {reply.text}")
        self.episodes.add(episode)
        credential = reply.json().get("credential")
        if isinstance(credential, str):
            self.credentials[episode] = credential

    def endpoints(self, episode: str) -> dict[str, Endpoints]:
        segment = self.credentials.get(episode) or quote(episode, safe="")
        base = f"{self.spec.proxy_url}/e/{segment}"
        return {name: Endpoints.under(base, name) for name in sorted(self.spec.services)}

    def check_model_upstreams(self, upstreams: dict[str, str]) -> None:
        """`--model-via-proxy`: the proxy must serve each model upstream (`llm`, `llm-2`, ...
        one per distinct --base-url, in the order the models are given)."""
        missing = {name: root for name, root in upstreams.items() if name not in self.served}
        if missing:
            wanted = " ".join(f"--upstream {name}={root}" for name, root in missing.items())
            raise RemoteError(
                f"--model-via-proxy: the proxy at {self.spec.proxy_url} has no upstream "
                f"{', '.join(missing)} for the model endpoint; start it with `chaosproxy up "
                f"... {wanted}` (it serves {', '.join(sorted(self.served)) or 'nothing'})"
            )

    def model_url(self, episode: str, upstream: str) -> str:
        """An OpenAI base URL for one episode's model calls through the proxy."""
        return f"{self.spec.proxy_url}/e/{quote(episode, safe='')}/{upstream}/v1"

    def service_errors(self, episode: str) -> int:
        reply = self._client().get(self._episode_url(episode))
        return int(reply.json().get("service_errors", 0)) if reply.status_code == 200 else 0

    async def end_episode(self, episode: str, domain: str) -> None:
        """Frees the episode's state in its service now; the proxy's DELETE (which also
        forgets it in the engine) is sent for every ended episode when the run ends."""
        self.ended.add(episode)
        oracle = f"{self.service_urls[domain]}/_oracle/episodes/{quote(episode, safe='')}"
        if self._oracle is None:
            raise RuntimeError("RemoteEnvironment is used outside `async with`")
        await self._oracle.delete(oracle)


def copy_calls(proxy_log: Path, episodes: set[str], out: Path, since: float) -> int:
    """Append the proxy's log lines of `episodes` since `since` to `out/calls.jsonl`."""
    if not proxy_log.is_file() or not episodes:
        return 0
    copied = 0
    with (
        proxy_log.open(encoding="utf-8") as source,
        (out / CALLS_FILE).open("a", encoding="utf-8") as target,
    ):
        for line in source:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("episode") in episodes and record.get("ts", 0) >= since:
                target.write(line if line.endswith("\n") else line + "\n")
                copied += 1
    return copied
