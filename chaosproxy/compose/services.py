"""Domain services that run on their own (`chaosproxy serve DOMAIN`), named by URL."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from chaosproxy.domains.registry import UnknownDomainError, get_domain
from chaosproxy.errors import ServicesOptionError

ServicesError = ServicesOptionError
"""The name this error had before `chaosproxy.errors` (the same class)."""

ORACLE_TOKEN_ENV = "CHAOSPROXY_ORACLE_TOKEN"


def split_services(values: str | Sequence[str]) -> dict[str, str]:
    """`travel=http://travel:8801,support=http://support:8802` (comma lists, repeatable),
    split into `{domain: URL}`; the names and URLs are checked by whoever uses them
    (`chaosproxy.api.settings` for `up`, `parse_services` for `run --services`)."""
    items = [values] if isinstance(values, str) else list(values)
    services: dict[str, str] = {}
    for item in (part.strip() for value in items for part in value.split(",")):
        if not item:
            continue
        name, sep, url = item.partition("=")
        if not sep or not name:
            raise ServicesOptionError(
                f"--services {item!r}: expected DOMAIN=URL, e.g. travel=http://travel:8801"
            )
        if name in services:
            raise ServicesOptionError(f"--services: {name} is given twice")
        services[name] = url
    return services


def parse_services(values: str | Sequence[str]) -> dict[str, str]:
    """`--services` of `run`, checked: known domains with http(s) URLs."""
    services = split_services(values)
    for name, url in services.items():
        shown = f"{name}={url}"
        if not url.startswith(("http://", "https://")):
            raise ServicesOptionError(
                f"--services {shown!r}: expected DOMAIN=URL, e.g. travel=http://travel:8801"
            )
        try:
            get_domain(name)
        except UnknownDomainError as exc:
            raise ServicesOptionError(f"--services {shown!r}: {exc}") from None
    return {name: url.rstrip("/") for name, url in services.items()}


def oracle_headers(token: str | None = None) -> dict[str, str]:
    """The oracle's bearer token (`--oracle-token` or CHAOSPROXY_ORACLE_TOKEN), if any."""
    token = token or os.environ.get(ORACLE_TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


async def fetch_hints(
    services: Mapping[str, str], token: str | None = None
) -> dict[str, dict[str, Any]]:
    """Each service's health, then its `/_oracle/hints` for the fault engine."""
    hints: dict[str, dict[str, Any]] = {}
    async with httpx.AsyncClient(timeout=10.0, headers=oracle_headers(token)) as client:
        for name, url in services.items():
            try:
                health = await client.get(f"{url}/health")
                health.raise_for_status()
                reply = await client.get(f"{url}/_oracle/hints")
            except httpx.HTTPError as exc:
                raise ServicesOptionError(
                    f"--services {name}={url}: not reachable ({exc})"
                ) from exc
            if reply.status_code in (401, 403):
                raise ServicesOptionError(
                    f"--services {name}={url}: the oracle refused the token "
                    f"(set {ORACLE_TOKEN_ENV} to the services' token)"
                )
            if reply.status_code == 200:
                hints[name] = reply.json()
    return hints
