"""Issue 26: the services child of `up` keeps no token in its environment and exits at once
when `up` is killed (no graceful drain for a parent that is gone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = "from chaosproxy.cli import main; main()"
SECRET = "operator-oracle-secret-3c1a"
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


@pytest.mark.timeout(120)
def test_services_child_holds_no_token_and_dies_at_once_with_up(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(tmp_path),
         "--domains", "weather", "--profile", "lambda0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "CHAOSPROXY_ORACLE_TOKEN": SECRET,
             "ALSO_THE_TOKEN": SECRET},
    )  # fmt: skip
    spawned: list[int] = []
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("chaosproxy http://127.0.0.1:"), line
        spawned = children(process.pid)
        (child,) = spawned
        # what an agent of the same machine would read (root reads any process's)
        environ = Path(f"/proc/{child}/environ").read_bytes()
        assert SECRET.encode() not in environ
        assert b"CHAOSPROXY_ORACLE_TOKEN" not in environ
        os.kill(process.pid, signal.SIGKILL)
        killed = time.monotonic()
        process.wait(timeout=10)
        while alive(child) and time.monotonic() - killed < 10:
            time.sleep(0.01)
        outlived = time.monotonic() - killed
        assert not alive(child)
        assert outlived < 0.5, f"the services child outlived kill -9 of up by {outlived:.2f} s"
    finally:
        if process.poll() is None:
            process.kill()
        for pid in spawned:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
