"""docker-compose.yml read as data, and its services' commands as local processes.

No image can be built or pulled here, so the compose test runs each container's command
as written, with only what a container network would change mapped: service host names and
0.0.0.0 to 127.0.0.1, each published port to a free local port (so parallel tests never
collide), `/runs` to a temporary folder, `chaosproxy`/`python` to this venv's, and
`${VAR:-default}` / `${VAR:?message}` interpolated as compose does.
"""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Seconds one healthcheck try may take before it counts as failed (the retry loop goes on).
HEALTHCHECK_TIMEOUT = 20

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
_VAR = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")


def load() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def interpolate(value: str, env: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, kind, arg = match.group(1), match.group(2), match.group(3) or ""
        if env.get(name):
            return env[name]
        if kind == "?":
            raise KeyError(f"{name}: {arg}")
        return arg if kind == "-" else ""

    return _VAR.sub(one, value)


def free_port() -> int:
    """A free 127.0.0.1 port below the kernel's ephemeral range.

    A port from bind(0) comes out of the ephemeral range, where another test's connection or
    server (the suite runs on two xdist workers) can take it before podman publishes it
    ("address already in use"); below that range only an explicit bind can.
    """
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        chosen: int = sock.getsockname()[1]
        return chosen


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


@dataclass
class LocalCompose:
    """The compose file's services mapped onto this machine."""

    runs: Path
    env: dict[str, str]
    data: dict[str, Any] = field(default_factory=load)
    ports: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for service in self.data["services"].values():
            for published in service.get("ports", []):
                container = published.rsplit(":", 1)[1]
                self.ports.setdefault(container, free_port())

    def _map_text(self, text: str) -> str:
        text = interpolate(text, self.env)
        names = "|".join(re.escape(name) for name in self.data["services"])

        def host_port(match: re.Match[str]) -> str:
            port = match.group(2)
            return f"127.0.0.1:{self.ports.get(port, port)}"

        text = re.sub(rf"\b({names}|127\.0\.0\.1):(\d+)\b", host_port, text)
        text = text.replace("0.0.0.0", "127.0.0.1")
        if text.startswith("/runs"):
            text = str(self.runs) + text[len("/runs") :]
        return self._map_text_port(text)

    def _map_text_port(self, text: str) -> str:
        return str(self.ports[text]) if text in self.ports else text

    def argv(self, command: list[str]) -> list[str]:
        mapped = [self._map_text(str(part)) for part in command]
        bin_dir = Path(sys.executable).parent
        if mapped[0] == "chaosproxy":
            mapped[0] = str(bin_dir / "chaosproxy")
        elif mapped[0] == "python":
            mapped[0] = sys.executable
        return mapped

    def environment(self, name: str) -> dict[str, str]:
        declared = self.data["services"][name].get("environment", {})
        values = {key: interpolate(str(value), self.env) for key, value in declared.items()}
        return {**os.environ, **values, "PYTHONUNBUFFERED": "1"}

    def start(self, name: str, log: Path) -> subprocess.Popen[bytes]:
        command = self.data["services"][name]["command"]
        with log.open("wb") as out:
            return subprocess.Popen(
                self.argv(command),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.environment(name),
            )

    def healthy(self, name: str) -> bool:
        """One run of the service's healthcheck: a check that times out counts as unhealthy.

        A loaded machine (load ~10 on 2 cores) can take longer than any fixed timeout just to
        start the check's Python, so a timeout is one failed try, like a container engine's
        healthcheck, and the caller's retry loop and deadline decide.
        """
        test = self.data["services"][name]["healthcheck"]["test"]
        assert test[0] == "CMD"
        try:
            done = subprocess.run(
                self.argv(test[1:]),
                env=self.environment(name),
                capture_output=True,
                timeout=HEALTHCHECK_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0
