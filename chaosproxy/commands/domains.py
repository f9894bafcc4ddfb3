"""`chaosproxy domains` (what is served) and `chaosproxy serve DOMAIN` (one domain as a service)."""

from __future__ import annotations

import ipaddress
import json
import secrets
from typing import Any

import click

from chaosproxy.domains.kit.declare import Domain
from chaosproxy.domains.kit.oracle import ORACLE_TOKEN_ENV
from chaosproxy.domains.kit.store import IDLE_TTL_ENV, MAX_IDLE_ENV, EpisodeLimits
from chaosproxy.domains.registry import UnknownDomainError, all_domains, get_domain
from chaosproxy.report.fmt import text_table


def _summary(domain: Domain[Any]) -> dict[str, Any]:
    return {
        "domain": domain.name,
        "title": domain.title,
        "tools": list(domain.tools),
        "tasks": len(domain.tasks),
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def domains(as_json: bool) -> None:
    """List the domains, their tools and how many tasks each has."""
    rows = [_summary(domain) for domain in all_domains()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no domains found")
        return
    headers = ["domain", "title", "tasks", "tools"]
    cells = [[r["domain"], r["title"], str(r["tasks"]), ", ".join(r["tools"])] for r in rows]
    click.echo(text_table(headers, cells, left=4))


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def oracle_token_for(host: str, given: str | None) -> tuple[str | None, bool]:
    """The oracle's token and whether it was generated: off loopback one is always required
    (issue 13: a reset from the LAN worked); on loopback only a given one is enforced."""
    if given:
        return given, False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(24), True


@click.command()
@click.argument("domain_name", metavar="DOMAIN")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    default=8800,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: any free one).",
)
@click.option(
    "--oracle-token",
    envvar=ORACLE_TOKEN_ENV,
    default=None,
    help=f"Bearer token for /_oracle/ (env {ORACLE_TOKEN_ENV}); generated when --host is "
    "not loopback. On loopback the oracle is open unless a token is given.",
)
@click.option(
    "--max-idle-episodes",
    type=click.IntRange(1),
    default=None,
    help=f"Idle episodes kept before the least recently used is evicted "
    f"(env {MAX_IDLE_ENV}; default {EpisodeLimits().max_idle}).",
)
@click.option(
    "--episode-idle-ttl",
    type=click.FloatRange(0),
    default=None,
    help=f"Seconds an idle episode is kept; 0: no time limit (env {IDLE_TTL_ENV}; default 0).",
)
def serve(
    domain_name: str,
    host: str,
    port: int,
    oracle_token: str | None,
    max_idle_episodes: int | None,
    episode_idle_ttl: float | None,
) -> None:
    """Serve one domain: REST tools, OpenAPI, MCP at /mcp and the oracle, on one port."""
    import uvicorn

    from chaosproxy.domains.kit.testing import bind_socket

    try:
        domain = get_domain(domain_name)
    except UnknownDomainError as error:
        raise click.BadParameter(str(error), param_hint="DOMAIN") from None
    try:
        limits = EpisodeLimits.from_env()
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    limits = EpisodeLimits(
        max_idle=max_idle_episodes or limits.max_idle,
        idle_ttl_s=limits.idle_ttl_s if episode_idle_ttl is None else episode_idle_ttl,
    )
    oracle_token, generated = oracle_token_for(host, oracle_token)
    try:
        sock = bind_socket(host, port)
    except OSError as error:
        raise click.ClickException(
            f"cannot bind {host}:{port}: {error.strerror or error}"
        ) from None
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    base = f"http://{shown_host}:{bound_port}"
    click.echo(
        f"serving domain {domain.name!r} ({domain.title}): "
        f"{len(domain.tools)} tools, {len(domain.tasks)} tasks"
    )
    click.echo(f"  REST     {base}/tools/{{name}}   (list: GET {base}/tools)")
    click.echo(f"  OpenAPI  {base}/openapi.json")
    click.echo(f"  MCP      {base}/mcp")
    click.echo(f"  oracle   {base}/_oracle/   (health: {base}/health)")
    if oracle_token:
        shown = oracle_token if generated else "(as given)"
        click.echo(f"  oracle token  {shown}   (Authorization: Bearer ... on /_oracle/)")
    click.echo(
        f"  episodes  at most {limits.max_idle} idle"
        + (f", evicted after {limits.idle_ttl_s:g} s idle" if limits.idle_ttl_s else "")
    )
    config = uvicorn.Config(
        domain.asgi_app(limits, oracle_token=oracle_token or None),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=3,
    )
    uvicorn.Server(config).run(sockets=[sock])
