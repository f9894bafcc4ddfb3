"""`kill -9` of `chaosproxy up` under load (issue 13): every reply a client received is in
calls.jsonl, the services child dies with its parent, and the ports are free again.

Clients are real HTTP clients in threads, each sequential in its own episode, so the k-th
reply a client received is step k of its episode: that is how a reply is found in the log.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from chaosproxy.records import CALLS_FILE, CallRecord, read_jsonl

CLI = "from chaosproxy.cli import main; main()"
CLIENTS = 4
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def refuses(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) != 0


def client(url: str, episode: str, received: list[tuple[int, int]], stop: threading.Event) -> None:
    """Call until the proxy dies; keep (step, status) of every reply received in full."""
    with httpx.Client(timeout=30) as http:
        step = 0
        while not stop.is_set():
            step += 1
            try:
                reply = http.post(f"{url}/e/{episode}/weather/tools/list_cities", json={})
                reply.read()
            except httpx.HTTPError:
                return
            received.append((step, reply.status_code))


@pytest.mark.timeout(120)
def test_kill_9_under_load_loses_no_reply_and_leaves_no_orphan(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(tmp_path),
         "--domains", "weather", "--profile", "lambda0.0", "--idle-episodes", "64"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    spawned: list[int] = []
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.match(r"chaosproxy (http://127\.0\.0\.1:(\d+))", line)
        assert match is not None, line
        url, port = match.group(1), int(match.group(2))
        spawned = children(process.pid)
        assert len(spawned) == 1
        # --idle-episodes bounds the proxy (config.json) and the services child (its env)
        config = json.loads((tmp_path / "config.json").read_text())
        assert config["settings"]["idle_episodes"] == 64
        environ = Path(f"/proc/{spawned[0]}/environ").read_bytes().split(b"\0")
        assert b"CHAOSPROXY_MAX_IDLE_EPISODES=64" in environ
        # the first call warms the service up (seconds on a loaded machine): not under test
        warm = httpx.post(f"{url}/e/warmup/weather/tools/list_cities", json={}, timeout=60)
        assert warm.status_code == 200
        received: dict[str, list[tuple[int, int]]] = {f"crash{i}": [] for i in range(CLIENTS)}
        stop = threading.Event()
        threads = [
            threading.Thread(target=client, args=(url, episode, replies, stop), daemon=True)
            for episode, replies in received.items()
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while sum(map(len, received.values())) < 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)  # mid-load: clients are waiting on replies
        process.wait(timeout=10)
        stop.set()
        for thread in threads:
            thread.join(timeout=10)

        logged = {
            (r.episode, r.step): r.status for r in read_jsonl(tmp_path / CALLS_FILE, CallRecord)
        }
        seen = [(e, step, status) for e, replies in received.items() for step, status in replies]
        assert len(seen) >= 200, "the load did not get going before the kill"
        missing = [(e, step) for e, step, status in seen if logged.get((e, step)) != status]
        assert missing == [], f"replies a client received but the log does not have: {missing}"

        (child,) = spawned
        until = time.monotonic() + 10
        while alive(child) and time.monotonic() < until:
            time.sleep(0.05)
        assert not alive(child), "the services child outlived its kill -9-ed parent"
        assert refuses(port), "the proxy's port still accepts connections"
    finally:
        if process.poll() is None:
            process.kill()
        for pid in spawned:
            if alive(pid):  # only if the test failed: leave no orphan behind
                os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(120)
def test_a_taken_control_port_names_its_holder(tmp_path: Path) -> None:
    """`up` names whoever holds the port it could not bind, the control port included."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-c", CLI, "up", "--port", "0", "--control-port", str(port),
             "--run-dir", str(tmp_path), "--domains", "none", "--upstream", "x=http://127.0.0.1:9"],
            capture_output=True,
            text=True,
            timeout=90,
        )  # fmt: skip
    assert result.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr, result.stderr
    assert re.search(rf"held by pid {os.getpid()} \(", result.stderr), result.stderr
