"""docker-compose.yml brought up in real containers with podman-compose (the container tier).

`scripts/compose_env.sh build` makes the image; this module starts the file's services on free
loopback ports, honours `depends_on: condition: service_healthy` itself and takes it all down.
Why the health order is driven here: podman 4.3 (Debian bookworm) runs healthchecks from
systemd timers, and without systemd (a CI container) no check ever runs on its own; and
podman-compose ignores the condition on podman < 4.6 ("doesn't support healthy"). So the
domain services go up first, each is polled with `podman healthcheck run` (the file's own
check) until healthy, then the proxy goes up and is polled the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from compose_file import COMPOSE, REPO, free_port

PORT_NAMES = {
    "8801": "CODING",
    "8802": "ECOMMERCE",
    "8803": "HEALTHCARE",
    "8804": "LOGISTICS",
    "8805": "MEDICAL_RECORDS",
    "8806": "SCHEDULING",
    "8807": "SUPPORT",
    "8808": "TRAVEL",
    "8809": "WEATHER",
    "8700": "PROXY",
    "8701": "CONTROL",
    "9000": "MYAPI",  # docs/examples/compose/docker-compose.myapi.yml
}
MYAPI = REPO / "docs" / "examples" / "compose" / "docker-compose.myapi.yml"
IMAGE = "localhost/chaosproxy:local"


def podman_compose_binary() -> str | None:
    """PODMAN_COMPOSE (scripts/compose_env.sh sets it), else podman-compose on PATH."""
    chosen = os.environ.get("PODMAN_COMPOSE")
    return shutil.which(chosen) if chosen else shutil.which("podman-compose")


def missing_requirement() -> str | None:
    """Why containers cannot start here, or None."""
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/compose_env.sh build installs it)"
    if podman_compose_binary() is None:
        return "podman-compose is not installed (scripts/compose_env.sh build installs it)"
    if subprocess.run(["podman", "image", "exists", IMAGE], check=False).returncode != 0:
        return f"{IMAGE} is not built (run: bash scripts/compose_env.sh build)"
    return None


@dataclass
class PodmanCompose:
    """One project of docker-compose.yml (plus override files) on free 127.0.0.1 ports."""

    runs: Path
    tokens: dict[str, str]
    project: str = field(default_factory=lambda: f"chaosproxytest{os.getpid()}")
    files: list[Path] = field(default_factory=lambda: [COMPOSE])
    ports: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for container_port in PORT_NAMES:
            self.ports[container_port] = free_port()
        self.runs.mkdir(parents=True, exist_ok=True)
        # The proxy writes /runs/proxy as the image's non-root user (uid 10001).
        os.chmod(self.runs, 0o777)

    def env(self) -> dict[str, str]:
        ports = {f"CHAOSPROXY_PORT_{PORT_NAMES[p]}": str(port) for p, port in self.ports.items()}
        return {
            **os.environ,
            **self.tokens,
            **ports,
            "CHAOSPROXY_RUNS": str(self.runs),
            "CHAOSPROXY_UID": "10001",
            "CHAOSPROXY_GID": "10001",
        }

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        binary = podman_compose_binary()
        assert binary, "podman-compose is not installed"
        argv = [binary, "-p", self.project]
        for file in self.files:
            argv += ["-f", str(file)]
        return subprocess.run(
            [*argv, *args],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def wait_healthy(self, service: str, deadline_s: float = 180) -> None:
        """Run the file's healthcheck until it passes (a failed or slow try is retried)."""
        name = self.container(service)
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            try:
                check = subprocess.run(
                    ["podman", "healthcheck", "run", name],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                continue
            if check.returncode == 0:
                return
            time.sleep(1)
        logs = subprocess.run(
            ["podman", "logs", "--tail", "30", name], capture_output=True, text=True, check=False
        )
        raise AssertionError(f"{name} never became healthy: {logs.stdout}{logs.stderr}")

    def up(self) -> None:
        """Domain services, healthy, then the proxy (depends_on: service_healthy), healthy."""
        proxy_deps: list[str] = []
        for file in self.files:
            proxy = yaml.safe_load(file.read_text())["services"].get("proxy", {})
            proxy_deps += [name for name in proxy.get("depends_on", {}) if name not in proxy_deps]
        done = self.compose("up", "-d", *proxy_deps)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        for service in proxy_deps:
            self.wait_healthy(service)
        done = self.compose("up", "-d", "--no-deps", "proxy")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        self.wait_healthy("proxy")

    def containers(self) -> list[str]:
        listed = subprocess.run(
            ["podman", "ps", "-a", "--format", "{{.Names}}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return [name for name in listed.stdout.split() if name.startswith(f"{self.project}_")]

    def down(self) -> subprocess.CompletedProcess[str]:
        """Containers (with their anonymous volumes: `podman rm -v`), networks, pods."""
        return self.compose("--podman-rm-args=-v", "down", "-v", "-t", "5")

    def leftovers(self) -> dict[str, list[str]]:
        """What of this project is still there after `down`."""

        def names(*argv: str) -> list[str]:
            out = subprocess.run(["podman", *argv], capture_output=True, text=True, check=True)
            return [name for name in out.stdout.split() if self.project in name]

        return {
            "containers": self.containers(),
            "pods": names("pod", "ls", "--format", "{{.Name}}"),
            "networks": names("network", "ls", "--format", "{{.Name}}"),
        }
