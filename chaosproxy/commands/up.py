"""`chaosproxy up`: serve the domains (and any --upstream) behind the fault proxy until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import platform
import signal
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from chaosproxy import eventloop
from chaosproxy.api import (
    ControlSettings,
    Environment,
    ForwardSettings,
    PortInUseError,
    ProfileError,
    SetupError,
    StartError,
    UnknownDomainError,
)
from chaosproxy.api.options import parse_openapi, parse_upstreams
from chaosproxy.commands.pacing_options import pacing_options
from chaosproxy.compose.services import ServicesOptionError, split_services
from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.domains.kit.testing import bind_socket
from chaosproxy.pacing import make_pacer
from chaosproxy.proxy.controlfile import CONTROL_FILE
from chaosproxy.proxy.episodes import DEFAULT_EPISODE_CALLS
from chaosproxy.proxy.services import port_holder
from chaosproxy.records import CONFIG_FILE, RunConfig
from chaosproxy.report.fmt import render, terminal_width
from chaosproxy.tracing.cli import otlp_options


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("chaosproxy", "aiohttp", "fastmcp", "mcp"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out


def _domains_flag(value: str | None) -> list[str] | None:
    """--domains as the Environment takes it: None (all, or none when services come from
    elsewhere), [] for 'none', else the names (checked by the Environment)."""
    if value is None:
        return None
    if value.strip().lower() == "none":
        return []
    return [name.strip() for name in value.split(",") if name.strip()]


def endpoint_table(env: Environment) -> str:
    """Every service's URLs, whole (never wrapped: people copy them). OpenAPI and MCP only
    where they exist: a built-in domain has both; your upstream (REST, MCP, model or a
    forwarded host) has its own paths under its base, and an OpenAPI line only when its
    document was given or found."""
    builtin = set(env.builtin_domains())
    documents = env.api_documents()
    rows = [
        [name, e.rest, e.openapi, e.mcp]
        if name in builtin
        else [name, e.rest, documents.get(name, "-"), "-"]
        for name, e in env.endpoints().items()
    ]
    wide = render(["service", "base URL", "OpenAPI", "MCP"], rows, right_from=4)
    if max(len(line) for line in wide.splitlines()) <= terminal_width():
        return wide
    # Narrower than a row of whole URLs: each service's URLs one under another, still whole.
    lines: list[str] = []
    for name, rest, openapi, mcp in rows:
        lines.append(name)
        labelled = [("REST", rest), ("OpenAPI", openapi), ("MCP", mcp)]
        lines += [f"  {label:<8} {url}" for label, url in labelled if url != "-"]
    return "\n".join(lines)


def grouping_line(calls: int) -> str:
    """How calls without an episode id are grouped, said at start (they are most calls of
    an agent simply pointed at the proxy)."""
    if calls <= 0:
        return (
            "          calls without one: a single endless episode 'default' (a persistent "
            "fault, once drawn, stays)"
        )
    return (
        f"          calls without one: rolling episodes of {calls} tool calls "
        "(--default-episode-calls), each with fresh fault draws; persistent faults end with "
        "their episode; log episode_key default, default~2, ..."
    )


def write_config(run_dir: Path, env: Environment, settings: dict[str, Any]) -> None:
    config = RunConfig(
        kind="up",
        seed=env.seed,
        created_at=time.time(),
        versions=_versions(),
        profiles={env.profile.name: env.profile.model_dump(mode="json")},
        domains=env.domains,
        settings=settings,
    )
    (run_dir / CONFIG_FILE).write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")


async def _serve(env: Environment, run_dir: Path, settings: dict[str, Any]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with env:
        write_config(run_dir, env, settings)
        control = run_dir / CONTROL_FILE
        click.echo(f"chaosproxy {env.url}  profile {env.profile.name}  seed {env.seed}")
        click.echo(endpoint_table(env))
        if env.episode_credentials:
            click.echo(
                "episodes: PUT /_chaos/episodes/{id} answers the episode's credential; "
                "agents use /e/{credential}/..."
            )
        else:
            click.echo(
                "episodes: prefix a path with /e/{episode}/ or send the X-Chaos-Episode header"
            )
            click.echo(grouping_line(env.default_episode_calls))
        click.echo(f"control:  {env.control_url}/_chaos/health  /_chaos/metrics  (operator only)")
        click.echo(f"token:    {env.token}  (Authorization: Bearer ...; also in {control})")
        click.echo(f"log:      {env.log_path}")
        if env.tracer.describe() is not None:
            click.echo(f"traces:   {env.tracer.describe()}")
        if env.model_pacer is not None:
            click.echo(f"pacing:   model calls upstream by {env.model_pacer!r}")
        for line in env.forward_settings():
            click.echo(line)
        click.echo("Ctrl-C to stop.", nl=True)
        await stop.wait()
        click.echo("stopping...")
    click.echo(f"stopped; {run_dir / 'calls.jsonl'} is complete")


def _check_pacing_has_a_provider(
    rpm: int | None, tpm: int | None, provider_retries: int | None, has_provider: bool
) -> None:
    """Pacing and re-sends apply to model calls relayed to a provider; without one they would
    be silently unused, so say so instead."""
    flags = [
        flag
        for flag, value in (
            ("--rpm", rpm),
            ("--tpm", tpm),
            ("--provider-retries", provider_retries),
        )
        if value is not None
    ]
    if flags and not has_provider:
        raise click.UsageError(
            f"{'/'.join(flags)} applies to model calls relayed to a provider, and this proxy "
            "has none: add --upstream NAME=URL for the model provider"
        )


@click.command()
@click.option(
    "--profile",
    default="lambda0.2",
    show_default=True,
    envvar="CHAOSPROXY_PROFILE",
    help="A shipped profile name (see `chaosproxy profiles`) or a YAML file.",
)
@click.option(
    "--seed",
    type=int,
    default=DEFAULT_SEED,
    show_default=True,
    envvar="CHAOSPROXY_SEED",
    help="Run seed for fault draws.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8700,
    show_default=True,
    help="Proxy port (0: any free port).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address the agent-facing proxy listens on.",
)
@click.option(
    "--control-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Control-API port (default: --port + 1, or any free port when taken or --port 0).",
)
@click.option(
    "--control-host",
    default="127.0.0.1",
    show_default=True,
    help="Address the control API listens on (it always requires the token).",
)
@click.option(
    "--domains",
    default=None,
    help="Comma-separated built-in domains (default: all; 'none' for only --upstream).",
)
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    metavar="NAME=URL",
    help="Put your own HTTP/MCP service behind the proxy under /NAME/. Repeatable.",
)
@click.option(
    "--openapi",
    "openapis",
    multiple=True,
    metavar="NAME=FILE_OR_URL",
    help="The OpenAPI 3.x document of upstream NAME, JSON or YAML (default: its "
    "/openapi.json, if it is one): tool names come from its operationIds; one that cannot "
    "be used stops the start. Repeatable.",
)
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the log and config go (default: runs/up-<time>).",
)
@click.option(
    "--token",
    default=None,
    envvar="CHAOSPROXY_CONTROL_TOKEN",
    help="Control-API bearer token (default: generated, printed and written to "
    "RUN_DIR/control.json, mode 0600).",
)
@click.option(
    "--services",
    "services",
    multiple=True,
    metavar="DOMAIN=URL,...",
    help="Domains already served elsewhere (`chaosproxy serve`, docker compose): proxy them "
    "instead of starting them. Oracle token from CHAOSPROXY_ORACLE_TOKEN.",
)
@click.option(
    "--forward-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Also run a forward (HTTP_PROXY/HTTPS_PROXY) proxy on this port (0: any free port).",
)
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="HOST[:PORT][=ADDR:PORT]",
    help="A host the forward proxy lets through (repeatable; also `allow:` in the profile).",
)
@click.option(
    "--upstream-ca",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="PEM file of extra CAs trusted for https upstreams.",
)
@click.option(
    "--idle-episodes",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Most idle episodes (no request in flight) kept by the proxy, and by the built-in "
    "services unless CHAOSPROXY_MAX_IDLE_EPISODES is set; the least recently used beyond it "
    "is forgotten and starts afresh if it comes back (its first log line says so).",
)
@click.option(
    "--default-episode-calls",
    type=click.IntRange(min=0),
    default=DEFAULT_EPISODE_CALLS,
    show_default=True,
    help="Calls without an episode id form rolling episodes of this many tool calls (about "
    "one task), each with fresh fault draws; persistent faults (drift, stale data, hard rate "
    "limits) end with their episode. 0: one endless episode.",
)
@click.option(
    "--episode-idle-ttl",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Also forget an episode idle this many seconds (0: no time limit).",
)
@click.option(
    "--episode-credentials",
    is_flag=True,
    help="Reach an episode only through the credential PUT /_chaos/episodes/{id} answers "
    "(/e/{credential}/...): agents cannot act in each other's episodes (docs/security.md).",
)
@otlp_options
@pacing_options
def up(
    profile: str,
    seed: int,
    port: int,
    host: str,
    control_port: int | None,
    control_host: str,
    domains: str | None,
    upstreams: tuple[str, ...],
    openapis: tuple[str, ...],
    run_dir: Path | None,
    token: str | None,
    services: tuple[str, ...],
    forward_port: int | None,
    allow: tuple[str, ...],
    upstream_ca: Path | None,
    idle_episodes: int,
    episode_idle_ttl: float,
    episode_credentials: bool,
    otlp_endpoint: str | None,
    otlp_content: str | None,
    default_episode_calls: int,
    rpm: int | None,
    tpm: int | None,
    provider_retries: int | None,
) -> None:
    """Start the domain services behind the fault proxy and print their endpoints."""
    try:
        external = split_services(services)
    except ServicesOptionError as exc:
        raise click.BadParameter(str(exc), param_hint="--services") from None
    parsed = _flag(parse_upstreams, upstreams, "--upstream")
    _check_pacing_has_a_provider(
        rpm, tpm, provider_retries, bool(parsed) or forward_port is not None
    )
    documents = _flag(parse_openapi, openapis, "--openapi")
    run_dir = run_dir or Path("runs") / time.strftime("up-%Y%m%d-%H%M%S")
    try:
        env = Environment(
            domains=_domains_flag(domains),
            upstreams=parsed,
            profile=profile,
            seed=seed,
            port=port,
            host=host,
            run_dir=run_dir,
            services=external,
            openapi=documents,
            upstream_ca=upstream_ca,
            idle_episodes=idle_episodes,
            episode_idle_ttl=episode_idle_ttl,
            default_episode_calls=default_episode_calls,
            control=ControlSettings(
                host=control_host, port=control_port, token=token, write_file=True
            ),
            forward=ForwardSettings(forward_port, allow)
            if forward_port is not None or allow
            else None,
            episode_credentials=episode_credentials,
            otlp_endpoint=otlp_endpoint,
            otlp_content=otlp_content,
            model_pacer=make_pacer(rpm, tpm),
            provider_retries=provider_retries,
        )
    except ProfileError as exc:
        raise click.BadParameter(str(exc), param_hint="--profile") from None
    except UnknownDomainError as exc:
        hint = "--services" if services and domains is None else "--domains"
        raise click.BadParameter(str(exc), param_hint=hint) from None
    except SetupError as exc:
        raise click.UsageError(str(exc)) from None
    run_dir.mkdir(parents=True, exist_ok=True)
    for warning in unused_routes(env):
        click.echo(warning, err=True)
    settings = {
        "host": host,
        "port": port,
        "control_host": control_host,
        "control_port": control_port,
        "upstreams": dict(env.upstreams),
        "openapi": documents,
        "profile_arg": profile,
        "forward": {"port": forward_port, "allow": env.forward_allow},
        "services": external,
        "idle_episodes": idle_episodes,
        "episode_idle_ttl_s": episode_idle_ttl,
        "episode_credentials": episode_credentials,
        "default_episode_calls": default_episode_calls,
        "rpm": rpm,
        "tpm": tpm,
        "provider_retries": provider_retries,
    }
    _check_ports_free([(host, port), (control_host, control_port), (host, forward_port)])
    try:
        eventloop.run(_serve(env, run_dir, settings))
    except PortInUseError as exc:
        cause = exc.__cause__
        held = getattr(cause, "port", None) or port
        holder = port_holder(held) or "another chaosproxy?"
        raise click.ClickException(
            f"{exc.__cause__ or exc}; held by {holder}; try --port 0"
        ) from None
    except StartError as exc:
        raise click.ClickException(str(exc)) from None


def _check_ports_free(wanted: Sequence[tuple[str, int | None]]) -> None:
    """Fail before any service starts when a port asked for is taken (starting every
    service first took 33 s on a loaded machine before saying so)."""
    for bind_host, bind_port in wanted:
        if not bind_port:
            continue
        try:
            bind_socket(bind_host, bind_port).close()
        except OSError as taken:
            holder = port_holder(bind_port) or "another program"
            raise click.ClickException(
                f"cannot listen on {bind_host}:{bind_port}: {taken.strerror or taken}; "
                f"held by {holder}; try --port 0"
            ) from None


def unused_routes(env: Environment) -> list[str]:
    """Warnings for the profile's `routes:` of names that are no upstream here (a profile
    may be shared by setups with other upstreams, so not an error)."""
    served = ", ".join(sorted(env.upstreams)) or "none"
    return [
        f"warning: profile {env.profile.name!r} has routes: for {name!r}, which is not an "
        f"upstream here (upstreams: {served}); those routes are not used"
        for name in sorted(set(env.profile.routes) - set(env.upstreams))
    ]


def _flag(
    parse: Callable[[Sequence[str]], dict[str, str]], specs: Sequence[str], hint: str
) -> dict[str, str]:
    """A repeatable NAME=VALUE flag, or click's error naming it."""
    try:
        return parse(specs)
    except SetupError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None
