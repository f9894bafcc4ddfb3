"""The services child of `chaosproxy up` (issue 13 #5, #6): it dies with a `kill -9`-ed
parent, its oracles need the token `up` gave it, and a taken port names its holder."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from chaosproxy.proxy.services import port_holder

CLI = "from chaosproxy.cli import main; main()"
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(child) for child in text]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def listening_ports(pid: int) -> list[int]:
    inodes = {
        os.readlink(fd)[8:-1]
        for fd in Path(f"/proc/{pid}/fd").iterdir()
        if os.readlink(fd).startswith("socket:[")
    }
    ports = []
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:
            ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def start_up(run_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(run_dir),
         "--domains", "travel", "--profile", "lambda0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("chaosproxy http://127.0.0.1:"), line
    return process


@pytest.mark.timeout(120)
def test_kill_9_of_up_takes_the_services_child_with_it(tmp_path: Path) -> None:
    process = start_up(tmp_path)
    spawned = children(process.pid)
    try:
        (child,) = spawned
        assert alive(child)
        (port,) = listening_ports(child)
        # the service's oracle needs the token `up` generated; its tools do not
        oracle = httpx.post(f"http://127.0.0.1:{port}/_oracle/episodes/x/reset", json={})
        assert oracle.status_code == 401
        assert oracle.json()["error"]["field"] == "Authorization"
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), "the services child outlived its kill -9-ed parent"
    finally:
        if process.poll() is None:
            process.kill()
        for pid in spawned:
            if alive(pid):  # only if the test failed: leave no orphan behind
                os.kill(pid, signal.SIGKILL)


def test_a_taken_port_names_the_process_holding_it(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        holder = port_holder(port)
        result = subprocess.run(
            [sys.executable, "-c", CLI, "up", "--port", str(port), "--run-dir", str(tmp_path),
             "--domains", "weather"],
            capture_output=True,
            text=True,
            timeout=90,
        )  # fmt: skip
    assert holder is not None and holder.startswith(f"pid {os.getpid()} (")
    assert result.returncode != 0
    assert re.search(rf"held by pid {os.getpid()} \(", result.stderr), result.stderr
    # said before any service started (issue 30): nothing was served or printed
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert result.stdout == "" and not (tmp_path / "calls.jsonl").exists()


def test_nothing_listening_has_no_holder() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert port_holder(port) is None


async def test_the_environment_passes_the_oracle_token_and_delete_frees_the_episode() -> None:
    from chaosproxy.api.settings import check_settings
    from chaosproxy.proxy.environment import Stack

    settings = check_settings(domains=["weather"], profile="lambda0.0")
    async with Stack(settings) as env, httpx.AsyncClient() as http:
        oracle = f"{env.service_urls['weather']}/_oracle/episodes/tok-ep"
        refused = await http.post(f"{oracle}/reset", json={})
        reset = await http.post(f"{oracle}/reset", json={}, headers=env.oracle_headers)
        statuses = await env.delete_episode("tok-ep")
        after = await http.get(f"{oracle}/state", headers=env.oracle_headers)
    assert refused.status_code == 401
    assert reset.status_code == 200
    assert statuses == {"weather": 200}
    assert after.status_code == 404


def test_the_operators_oracle_token_is_shared_with_the_builtin_services(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chaosproxy.proxy.services import DomainServices

    assert DomainServices(["weather"]).oracle_token != DomainServices(["weather"]).oracle_token
    monkeypatch.setenv("CHAOSPROXY_ORACLE_TOKEN", "operator-token")
    services = DomainServices(["weather"])
    assert services.oracle_headers == {"Authorization": "Bearer operator-token"}
