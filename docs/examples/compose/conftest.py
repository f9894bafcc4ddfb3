"""A session fixture that brings docker-compose.yml up in containers for the whole test session.

Run from the repository root (root, podman; Docker users swap in `docker compose up -d --wait`):

    CHAOSPROXY_COMPOSE_TIER=1 .venv/bin/pytest docs/examples/compose -p no:cacheprovider

Every published port is a free one on 127.0.0.1 (CHAOSPROXY_PORT_<NAME>), the tokens are
fresh, and the environment is taken down (containers, network, anonymous volumes) at the end.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "compose_env.sh"
NAMES = ["CODING", "ECOMMERCE", "HEALTHCARE", "LOGISTICS", "MEDICAL_RECORDS"]
NAMES += ["SCHEDULING", "SUPPORT", "TRAVEL", "WEATHER", "PROXY", "CONTROL"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ComposeEnv:
    env: dict[str, str]
    runs: Path

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.env[f'CHAOSPROXY_PORT_{name.upper()}']}"


@pytest.fixture(scope="session")
def compose_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeEnv]:
    if os.environ.get("CHAOSPROXY_COMPOSE_TIER") != "1":
        pytest.skip("set CHAOSPROXY_COMPOSE_TIER=1 to bring the compose environment up")
    runs = tmp_path_factory.mktemp("compose") / "runs"
    runs.mkdir()
    runs.chmod(0o777)  # the proxy container writes here as its non-root user
    env = {
        **os.environ,
        **{f"CHAOSPROXY_PORT_{name}": str(free_port()) for name in NAMES},
        "CHAOSPROXY_CONTROL_TOKEN": secrets.token_hex(16),
        "CHAOSPROXY_ORACLE_TOKEN": secrets.token_hex(16),
        "CHAOSPROXY_RUNS": str(runs),
        "CHAOSPROXY_UID": "10001",
        "CHAOSPROXY_GID": "10001",
        "COMPOSE_PROJECT_NAME": f"chaosproxyexample{os.getpid()}",
    }
    up = subprocess.run(["bash", str(SCRIPT), "up"], env=env, capture_output=True, text=True)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        yield ComposeEnv(env=env, runs=runs)
    finally:
        subprocess.run(["bash", str(SCRIPT), "down"], env=env, capture_output=True, check=False)
