"""Which service and episode a request is for: only configured names are reachable."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal
from urllib.parse import quote, unquote

from yarl import URL

from chaosproxy.errors import ChaosError

EPISODE_HEADER = "X-Chaos-Episode"
STEP_HEADER = "X-Chaos-Step"
DEFAULT_EPISODE = "default"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.~-]{0,127}$")
_TOOL_PATH = re.compile(r"^/tools/([A-Za-z0-9_.-]+)/?$")
ROUTE_CACHE_SIZE = 4096
"""Resolved routes kept per (path, episode header); the cache starts over when full."""


def with_raw_query(url: URL, query_string: str) -> URL:
    """`url` with an already encoded query, kept byte for byte.

    (`URL.with_query` takes decoded text: it would encode the `%` of `%20` once more.)
    """
    return URL(f"{url}?{query_string}", encoded=True) if query_string else url


@lru_cache(maxsize=ROUTE_CACHE_SIZE)
def _service_url(upstream: URL, subpath: str) -> URL:
    """The service URL of a path, shared by every episode's route to it (a new episode id
    makes a new `Route`; building the URL is most of what that costs)."""
    base = str(upstream).rstrip("/")
    return URL(base + quote(subpath, safe="/:@!$&'()*+,;=-._~%"), encoded=True)


CREDENTIAL_BYTES = 18
"""144 random bits per episode credential: not guessable, not enumerable."""


class EpisodeCredentials:
    """Unguessable per-episode credentials: with them, an agent can act only in the episode
    whose credential it was given, not in a sibling whose readable id it can work out.

    The credential takes the episode id's place in the URL (`/e/{credential}/{domain}/...`);
    the proxy maps it back, so logs, the engine and the services still see the readable
    id. Issued when the operator configures an episode (the API, the runner, the plugin,
    `PUT /_chaos/episodes/{id}`) and revoked when it ends.
    """

    def __init__(self) -> None:
        self._episodes: dict[str, str] = {}
        self._credentials: dict[str, str] = {}

    def issue(self, episode: str) -> str:
        """The episode's credential, made on first use (the same one until revoked)."""
        credential = self._credentials.get(episode)
        if credential is None:
            credential = "k" + secrets.token_hex(CREDENTIAL_BYTES)
            self._credentials[episode] = credential
            self._episodes[credential] = episode
        return credential

    def revoke(self, episode: str) -> None:
        credential = self._credentials.pop(episode, None)
        if credential is not None:
            self._episodes.pop(credential, None)

    def episode_of(self, credential: str) -> str | None:
        return self._episodes.get(credential)

    def __len__(self) -> int:
        return len(self._credentials)


class RouteError(ChaosError, ValueError):
    """A request for something the proxy does not serve; the message says what."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def valid_name(name: str) -> bool:
    """Domain, upstream and episode names: URL-safe, short, no path tricks."""
    return bool(_NAME.match(name)) and name not in {".", ".."}


@dataclass(frozen=True)
class Route:
    """A resolved request: the public prefix it came in on and where it goes."""

    domain: str
    episode: str
    episode_source: Literal["url", "header", "default"]
    prefix: str
    subpath: str
    upstream: URL

    @cached_property
    def _target(self) -> URL:
        return _service_url(self.upstream, self.subpath)

    def target(self, query_string: str) -> URL:
        """The service URL for this request (the prefix is stripped, the query kept)."""
        return with_raw_query(self._target, query_string)

    @cached_property
    def _rest_tool(self) -> str | None:
        # as the service will read it: `/tools/add%5Fnote` is `/tools/add_note` there
        match = _TOOL_PATH.match(unquote(self.subpath) if "%" in self.subpath else self.subpath)
        return match.group(1) if match else None

    def rest_tool(self) -> str | None:
        """The tool name when this is a REST `POST /tools/{name}` path."""
        return self._rest_tool


class Router:
    """Maps `/{domain}/...` and `/e/{episode}/{domain}/...` onto configured services."""

    def __init__(
        self, upstreams: dict[str, str], credentials: EpisodeCredentials | None = None
    ) -> None:
        for name in upstreams:
            if not valid_name(name) or name in {"e", "_chaos"}:
                raise ValueError(f"invalid service name {name!r}")
        self.upstreams = {name: URL(url) for name, url in upstreams.items()}
        self.credentials = credentials
        """When set, every request must name a live episode credential: `/e/{credential}/`."""
        self._cache: dict[tuple[str, str | None], Route] = {}

    def _check_credential(
        self, path: str, episode_header: str | None, credentials: EpisodeCredentials
    ) -> None:
        """A live credential in the URL (`/e/{credential}/...`) or, for clients that can
        only set a header (the forward proxy's), in the episode header."""
        given = path[3:].split("/", 1)[0] if path.startswith("/e/") else episode_header
        if not given or credentials.episode_of(given) is None:
            raise RouteError(
                403,
                "this proxy requires an episode credential: use the URLs you were given "
                f"(/e/{{credential}}/{{service}}/...) or send it as {EPISODE_HEADER}; an "
                "episode id or no episode reaches nothing",
            )

    def resolve(self, path: str, episode_header: str | None) -> Route:
        """The route of a request; the same path and header give the same (immutable) Route.

        With credentials, the credential is checked on every request (a revoked one stops
        working at once); the route it maps to never changes, so it is cached as usual."""
        if self.credentials is not None:
            self._check_credential(path, episode_header, self.credentials)
        key = (path, episode_header)
        route = self._cache.get(key)
        if route is None:
            route = self._resolve(path, episode_header)
            if len(self._cache) >= ROUTE_CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = route
        return route

    def _resolve(self, path: str, episode_header: str | None) -> Route:
        parts = path.split("/", 3) if path.startswith("/e/") else None
        if parts is not None:
            # ["", "e", episode, "domain/rest..."]
            if len(parts) < 4 or not parts[3]:
                raise RouteError(404, "use /e/{episode}/{domain}/...")
            episode = parts[2]
            named = self.credentials.episode_of(episode) if self.credentials else None
            if named is not None:
                episode = named
            elif not valid_name(episode):
                raise RouteError(400, f"invalid episode id {episode!r} in the URL")
            domain, _, rest = parts[3].partition("/")
            prefix = f"/e/{parts[2]}/{domain}"
            source: Literal["url", "header", "default"] = "url"
        else:
            domain, _, rest = path.lstrip("/").partition("/")
            prefix = f"/{domain}"
            if episode_header is None or episode_header == "":
                episode, source = DEFAULT_EPISODE, "default"
            else:
                named = self.credentials.episode_of(episode_header) if self.credentials else None
                if named is None and not valid_name(episode_header):
                    raise RouteError(400, f"invalid {EPISODE_HEADER} header {episode_header!r}")
                episode, source = named or episode_header, "header"
        upstream = self.upstreams.get(domain)
        if upstream is None:
            known = ", ".join(sorted(self.upstreams)) or "none"
            raise RouteError(404, f"no service named {domain!r} behind this proxy (known: {known})")
        return Route(
            domain=domain,
            episode=episode,
            episode_source=source,
            prefix=prefix,
            subpath="/" + rest,
            upstream=upstream,
        )
