"""`chaosproxy domains` (what is served) and `chaosproxy serve DOMAIN` (one domain as a service)."""

from __future__ import annotations

import json
from typing import Any

import click

from chaosproxy.domains.kit.declare import Domain
from chaosproxy.domains.registry import UnknownDomainError, all_domains, get_domain


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
    name_width = max(len("domain"), *(len(row["domain"]) for row in rows))
    title_width = max(len("title"), *(len(row["title"]) for row in rows))
    click.echo(f"{'domain':<{name_width}}  {'title':<{title_width}}  {'tasks':>5}  tools")
    for row in rows:
        click.echo(
            f"{row['domain']:<{name_width}}  {row['title']:<{title_width}}  {row['tasks']:>5}  "
            + ", ".join(row["tools"])
        )


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
def serve(domain_name: str, host: str, port: int) -> None:
    """Serve one domain: REST tools, OpenAPI, MCP at /mcp and the oracle, on one port."""
    import uvicorn

    from chaosproxy.domains.kit.testing import bind_socket

    try:
        domain = get_domain(domain_name)
    except UnknownDomainError as error:
        raise click.BadParameter(str(error), param_hint="DOMAIN") from None
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
    config = uvicorn.Config(
        domain.asgi_app(), log_level="warning", lifespan="on", timeout_graceful_shutdown=3
    )
    uvicorn.Server(config).run(sockets=[sock])
