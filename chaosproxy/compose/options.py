"""`run --services ...`: the flags that point a grid at an environment that is already up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from chaosproxy.compose.remote import CONTROL_TOKEN_ENV, RemoteSpec
from chaosproxy.compose.services import ORACLE_TOKEN_ENV, ServicesOptionError, parse_services

F = TypeVar("F", bound=Callable[..., Any])

OPTIONS = [
    click.option(
        "--services",
        "remote_services",
        multiple=True,
        metavar="DOMAIN=URL,...",
        help="Run against an environment that is already up (docker compose): each domain's "
        "service URL, for the oracle. Needs --proxy, --control and the control token.",
    ),
    click.option(
        "--proxy",
        "remote_proxy",
        default="http://127.0.0.1:8700",
        show_default=True,
        help="With --services: the proxy agents talk to.",
    ),
    click.option(
        "--control",
        "remote_control",
        default="http://127.0.0.1:8701",
        show_default=True,
        help="With --services: the proxy's control API.",
    ),
    click.option(
        "--control-token",
        "remote_control_token",
        envvar=CONTROL_TOKEN_ENV,
        help=f"With --services: the control API's token [env {CONTROL_TOKEN_ENV}].",
    ),
    click.option(
        "--oracle-token",
        "remote_oracle_token",
        envvar=ORACLE_TOKEN_ENV,
        help=f"With --services: the services' oracle token [env {ORACLE_TOKEN_ENV}].",
    ),
    click.option(
        "--proxy-log",
        "remote_proxy_log",
        type=click.Path(dir_okay=False, path_type=Path),
        help="With --services: the proxy's calls.jsonl (e.g. runs/proxy/calls.jsonl of the "
        "compose volume); the run's calls are copied from it for scoring.",
    ),
]


def remote_options(command: F) -> F:
    for option in reversed(OPTIONS):
        command = option(command)
    return command


def remote_spec(
    remote_services: tuple[str, ...],
    remote_proxy: str,
    remote_control: str,
    remote_control_token: str | None,
    remote_oracle_token: str | None,
    remote_proxy_log: Path | None,
) -> RemoteSpec | None:
    """The RemoteSpec of `--services` and its companions, or None without `--services`."""
    if not remote_services:
        return None
    try:
        services = parse_services(remote_services)
    except ServicesOptionError as exc:
        raise click.BadParameter(str(exc), param_hint="--services") from None
    return RemoteSpec(
        services=services,
        proxy_url=remote_proxy.rstrip("/"),
        control_url=remote_control.rstrip("/"),
        control_token=remote_control_token,
        oracle_token=remote_oracle_token,
        proxy_log=remote_proxy_log,
    )
