"""The Environment's operator settings (control API, forward proxy) and the CLI's
`name=VALUE` parsers, which only split a flag: its values are checked with every other
setting in chaosproxy/api/settings.py, so a flag and a keyword meet the same check."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chaosproxy.api.errors import SetupError


@dataclass(frozen=True)
class ControlSettings:
    """The operator's control API (`/_chaos/...`): its own listener, always behind a token.

    `host`/`port`: where it listens (`port=None`: the proxy's port + 1 when that is free,
    else any free port); `token`: its bearer token (None: generated at start, read it from
    `Environment.token`); `write_file`: also write RUN_DIR/control.json (mode 0600) with
    the URL and token, for tools started beside the environment (what `up` does).
    """

    host: str = "127.0.0.1"
    port: int | None = None
    token: str | None = None
    write_file: bool = False

    def __post_init__(self) -> None:
        if self.port is not None and not 0 <= self.port <= 65535:
            raise SetupError(f"control port must be 0-65535, got {self.port}")
        if self.token is not None and not self.token.strip():
            raise SetupError("control token must not be empty")


@dataclass(frozen=True)
class ForwardSettings:
    """A forward proxy (HTTP_PROXY/HTTPS_PROXY, TLS interception by mitmproxy) beside the
    reverse one, for agents that call fixed hosts (a hosted model, a SaaS API).

    Only the `allow`ed hosts pass (`HOST[:PORT][=ADDR:PORT]`; the profile's `allow:` adds
    to them); each becomes an upstream with the same faults and log. `port`: its port
    (0: any free port; None: no forward proxy, which `up` passes when --allow comes without
    --forward-port, so that the one check of chaosproxy/api/settings.py refuses it).
    """

    port: int | None = 0
    allow: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.port is not None and not 0 <= self.port <= 65535:
            raise SetupError(f"forward port must be 0-65535, got {self.port}")
        if isinstance(self.allow, str):
            raise SetupError("forward allow: give a list of hosts, not one string")


def parse_pair(spec: str, flag: str, example: str) -> tuple[str, str]:
    """`NAME=VALUE` as given to a repeatable flag such as --upstream or --openapi."""
    name, sep, value = spec.partition("=")
    if not sep or not name or not value:
        raise SetupError(f"{flag} {spec!r}: expected {example}")
    return name, value


def parse_upstreams(specs: Sequence[str]) -> dict[str, str]:
    """Repeated `--upstream NAME=URL` flags, split (the Environment checks names and URLs)."""
    example = "name=URL, e.g. crm=http://127.0.0.1:9000"
    return dict(parse_pair(spec, "--upstream", example) for spec in specs)


def parse_openapi(specs: Sequence[str]) -> dict[str, str]:
    """Repeated `--openapi NAME=FILE_OR_URL` flags."""
    return dict(parse_pair(spec, "--openapi", "name=FILE_OR_URL") for spec in specs)
