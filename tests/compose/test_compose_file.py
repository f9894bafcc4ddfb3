"""docker-compose.yml and the Dockerfile, checked as data and by `docker-compose config`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import yaml
from chaosproxy.domains.registry import domain_names
from compose_file import COMPOSE, REPO, load

TOKENS = {"CHAOSPROXY_CONTROL_TOKEN": "control-secret", "CHAOSPROXY_ORACLE_TOKEN": "oracle-secret"}


def test_every_domain_is_a_service_on_its_own_port_with_a_healthcheck() -> None:
    services = load()["services"]
    ports: set[str] = set()
    for domain in domain_names():
        service = services[domain]
        command = service["command"]
        assert command[:3] == ["chaosproxy", "serve", domain]
        assert command[command.index("--host") + 1] == "0.0.0.0"
        port = command[command.index("--port") + 1]
        assert port not in ports, f"{domain} shares port {port}"
        ports.add(port)
        env_port = f"${{CHAOSPROXY_PORT_{domain.upper()}:-{port}}}"
        assert service["ports"] == [f"127.0.0.1:{env_port}:{port}"], "published on loopback only"
        assert f"127.0.0.1:{port}/health" in " ".join(service["healthcheck"]["test"])
        assert "CHAOSPROXY_ORACLE_TOKEN" in service["environment"]
        assert service["build"] == "."


def test_the_proxy_fronts_every_domain_container() -> None:
    services = load()["services"]
    proxy = services["proxy"]
    command = proxy["command"]
    assert command[:2] == ["chaosproxy", "up"]
    mapped = dict(
        item.split("=", 1) for item in command[command.index("--services") + 1].split(",")
    )
    assert sorted(mapped) == sorted(domain_names())
    for domain, url in mapped.items():
        port = services[domain]["command"][services[domain]["command"].index("--port") + 1]
        assert url == f"http://{domain}:{port}"
        assert proxy["depends_on"][domain] == {"condition": "service_healthy"}
    assert command[command.index("--run-dir") + 1].startswith("/runs/")
    assert any(volume.endswith(":/runs") for volume in proxy["volumes"])
    env = proxy["environment"]
    assert env["CHAOSPROXY_CONTROL_TOKEN"].startswith("${CHAOSPROXY_CONTROL_TOKEN:?")
    assert env["CHAOSPROXY_PROFILE"].startswith("${CHAOSPROXY_PROFILE")
    assert env["CHAOSPROXY_SEED"].startswith("${CHAOSPROXY_SEED")
    assert "_chaos/health" in " ".join(proxy["healthcheck"]["test"])
    assert proxy["ports"] == [
        "127.0.0.1:${CHAOSPROXY_PORT_PROXY:-8700}:8700",
        "127.0.0.1:${CHAOSPROXY_PORT_CONTROL:-8701}:8701",
    ]


def test_the_example_agent_runs_one_episode_against_the_proxy() -> None:
    agent = load()["services"]["agent"]
    command = agent["command"]
    assert command[:2] == ["chaosproxy", "run"]
    assert command[command.index("--proxy") + 1] == "http://proxy:8700"
    assert command[command.index("--services") + 1].startswith("travel=http://travel:")
    assert agent["depends_on"] == {"proxy": {"condition": "service_healthy"}}
    assert agent["profiles"] == ["example"]


def test_the_dockerfile_is_slim_non_root_and_installs_the_repository() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, re.M)
    assert re.search(r"^FROM \$\{BASE\}$", text, re.M)
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user and user[-1] not in {"root", "0"}
    assert "pip install /src" in text
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", "runs", "node_modules", ".git"} <= set(ignored)


def _compose(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("docker-compose")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs docker-compose (.ci/run); it is missing")
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CHAOSPROXY_")}
    return subprocess.run(
        [binary, "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        env={**clean, **env},
        cwd=REPO,
        timeout=60,
    )


def test_docker_compose_config_accepts_the_file() -> None:
    done = _compose({**TOKENS, "CHAOSPROXY_SEED": "9"})
    assert done.returncode == 0, done.stderr
    resolved = done.stdout
    assert "CHAOSPROXY_CONTROL_TOKEN: control-secret" in resolved
    assert "CHAOSPROXY_PROFILE: lambda0.2" in resolved
    assert "CHAOSPROXY_SEED: '9'" in resolved or 'CHAOSPROXY_SEED: "9"' in resolved


def test_docker_compose_config_requires_the_tokens() -> None:
    done = _compose({})
    assert done.returncode != 0
    assert "CHAOSPROXY_" in done.stderr and "TOKEN" in done.stderr


def test_the_user_api_example_extends_the_proxy_command_and_publishes_on_loopback() -> None:
    override = yaml.safe_load((REPO / "docs/examples/compose/docker-compose.myapi.yml").read_text())
    base = load()["services"]["proxy"]["command"]
    proxy = override["services"]["proxy"]
    assert proxy["command"] == [*base, "--upstream", "myapi=http://myapi:9000"]
    assert proxy["depends_on"] == {"myapi": {"condition": "service_healthy"}}
    myapi = override["services"]["myapi"]
    assert myapi["ports"] == ["127.0.0.1:${CHAOSPROXY_PORT_MYAPI:-9000}:9000"]
    assert "127.0.0.1:9000/health" in " ".join(myapi["healthcheck"]["test"])
