"""The registry and the `domains` / `serve` commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx
import pytest
from chaosproxy.domains.kit import Domain
from chaosproxy.domains.kit.testing import bind_socket
from chaosproxy.domains.registry import UnknownDomainError, all_domains, domain_names, get_domain
from click.testing import CliRunner

from chaosproxy.commands.domains import domains, serve


def test_registry_lists_domains_sorted_and_by_name() -> None:
    found = all_domains()
    assert found and all(isinstance(domain, Domain) for domain in found)
    assert domain_names() == sorted(domain_names())
    assert "kit" not in domain_names()
    for domain in found:
        assert get_domain(domain.name) is domain


def test_unknown_domain_error_lists_known_names() -> None:
    with pytest.raises(UnknownDomainError) as failure:
        get_domain("atlantis")
    assert "atlantis" in str(failure.value)
    assert all(name in str(failure.value) for name in domain_names())


def test_domains_command_json_and_table() -> None:
    runner = CliRunner()
    as_json = runner.invoke(domains, ["--json"])
    table = runner.invoke(domains, [])
    assert as_json.exit_code == 0 and table.exit_code == 0
    rows = json.loads(as_json.output)
    assert [row["domain"] for row in rows] == domain_names()
    for row in rows:
        domain = get_domain(row["domain"])
        assert row["tasks"] == len(domain.tasks) and row["tools"] == list(domain.tools)
        assert re.search(rf"^{row['domain']}\s+.*\s{row['tasks']}\s", table.output, re.MULTILINE)


def test_serve_unknown_domain_is_a_usage_error() -> None:
    result = CliRunner().invoke(serve, ["atlantis"])
    assert result.exit_code == 2
    assert "unknown domain 'atlantis'" in result.output


def test_serve_port_in_use_is_a_clear_error() -> None:
    sock = bind_socket()
    try:
        result = CliRunner().invoke(
            serve, [domain_names()[0], "--port", str(sock.getsockname()[1])]
        )
    finally:
        sock.close()
    assert result.exit_code == 1
    assert "cannot bind 127.0.0.1" in result.output


def test_serve_runs_a_domain_as_a_service() -> None:
    name = domain_names()[0]
    command = [
        sys.executable,
        "-c",
        "from chaosproxy.cli import main; main()",
        "serve",
        name,
        "--port",
        "0",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(5)]
        match = re.search(r"MCP\s+(http://127\.0\.0\.1:(\d+))/mcp", "".join(lines))
        assert match, lines
        base = match.group(1)
        for _ in range(100):
            try:
                health = httpx.get(f"{base}/health", timeout=20)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert health.json() == {"status": "ok", "domain": name, "episodes": 0}
    finally:
        process.terminate()
        process.wait(timeout=10)
