"""Which hosts the forward proxy lets an agent reach, and how each maps onto the reverse proxy.

An entry is `[http://|https://]HOST[:PORT][=ADDR:PORT]`: an origin (https and port 443 by
default) and, optionally, the address to connect to instead of resolving HOST (like curl's
`--resolve`, for test servers on loopback). Each allowed host becomes a reverse-proxy
upstream named after the host, so a forwarded call is routed, faulted and logged exactly
as `/{host}/...` on the reverse proxy would be.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from chaosproxy.errors import ChaosError

_HOST = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)
DEFAULT_PORTS = {"http": 80, "https": 443}
RESERVED_NAMES = frozenset({"e", "_chaos", "localhost"})


class AllowError(ChaosError, ValueError):
    """A bad `--allow` entry; the message names it and says what is expected."""


@dataclass(frozen=True)
class AllowEntry:
    """One allowed origin and where the reverse proxy connects for it."""

    scheme: str
    host: str
    port: int
    connect_to: tuple[str, int] | None = None

    @property
    def origin(self) -> str:
        default = DEFAULT_PORTS[self.scheme] == self.port
        return f"{self.scheme}://{self.host}" + ("" if default else f":{self.port}")

    @property
    def name(self) -> str:
        """The reverse proxy's upstream name, hence the log's `domain`: the host itself."""
        return self.host


def _port(text: str, spec: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise AllowError(f"--allow {spec!r}: {text!r} is not a port (1-65535)")
    return int(text)


def parse_allow(spec: str) -> AllowEntry:
    """Parse one `--allow` / profile `allow:` entry."""
    text = spec.strip()
    origin, _, target = text.partition("=")
    scheme = "https"
    for candidate in DEFAULT_PORTS:
        if origin.lower().startswith(candidate + "://"):
            scheme, origin = candidate, origin[len(candidate) + 3 :]
    origin = origin.rstrip("/")
    host, sep, port_text = origin.rpartition(":") if ":" in origin else (origin, "", "")
    host = host.lower()
    if not host or not (_HOST.match(host) or _is_ipv4(host)):
        raise AllowError(
            f"--allow {spec!r}: expected [https://]HOST[:PORT][=ADDR:PORT], "
            "e.g. api.example.com or api.example.test=127.0.0.1:8443"
        )
    if host in RESERVED_NAMES:
        raise AllowError(f"--allow {spec!r}: {host!r} cannot be allowed")
    port = _port(port_text, spec) if sep else DEFAULT_PORTS[scheme]
    connect_to = None
    if target:
        address, colon, target_port = target.rpartition(":")
        if not colon or not address:
            raise AllowError(f"--allow {spec!r}: the part after '=' must be ADDR:PORT")
        connect_to = (address.strip("[]"), _port(target_port, spec))
    return AllowEntry(scheme=scheme, host=host, port=port, connect_to=connect_to)


def _is_ipv4(host: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(host), ipaddress.IPv4Address)
    except ValueError:
        return False


class Allowlist:
    """The allowed origins, at most one per host."""

    def __init__(self, specs: list[str] | tuple[str, ...]) -> None:
        self.entries: list[AllowEntry] = []
        seen: dict[str, str] = {}
        for spec in specs:
            entry = parse_allow(spec)
            if entry.host in seen:
                raise AllowError(
                    f"--allow {spec!r}: {entry.host} is already allowed as {seen[entry.host]!r}; "
                    "allow each host once"
                )
            seen[entry.host] = spec
            self.entries.append(entry)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def upstreams(self) -> dict[str, str]:
        """Reverse-proxy upstreams: host name -> origin URL."""
        return {entry.name: entry.origin for entry in self.entries}

    def resolve_map(self) -> dict[str, str]:
        """`host:port` -> `addr:port` for the entries that say where to connect."""
        return {
            f"{entry.host}:{entry.port}": f"{entry.connect_to[0]}:{entry.connect_to[1]}"
            for entry in self.entries
            if entry.connect_to is not None
        }

    def origins(self) -> list[str]:
        return [entry.origin for entry in self.entries]
