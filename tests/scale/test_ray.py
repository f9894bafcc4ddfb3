"""`chaosproxy run --ray` on a real two-node Ray cluster equals a plain run (issue 27).

A head (127.0.0.2) and a second node (127.0.0.3) are started once for the module, on
loopback (Ray replaces 127.0.0.1 by the machine's own address, so other 127.0.0.x are
pinned), each with one CPU and a small object store. `chaosproxy run --ray ADDRESS` runs a
small scripted grid on one worker per node; its records, calls and journals (without
wall-clock fields) and results.json (without latency and the timing-dependent retry-storm
flags) must equal a plain `chaosproxy run` of the same seed. A worker killed (kill -9)
mid-run must lose nothing and count nothing twice.

Ray (≈300 MB) lives in its own environment, made by scripts/ray_env.sh and cached by the
lock file's hash; this test runs the CLI and Ray in it. Without that environment the test
skips, except under CI=true, where it fails. The cluster runs in its own process group
and temp dir and is stopped by pid (never `ray stop`, which stops every Ray on the machine).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "runner"))
from test_attempts import GRID, chaosproxy, finish, raw_calls, records, snapshot

pytestmark = pytest.mark.timeout(360)

REPO = Path(__file__).parents[2]
START_TIMEOUT_S = 150.0
HEAD_IP, NODE_IP = "127.0.0.2", "127.0.0.3"


def ray_python() -> Path:
    """The Ray environment's python, found as scripts/ray_env.sh makes it."""
    override = os.environ.get("CHAOSPROXY_RAY_PYTHON")
    if override:
        return Path(override)
    locks = (REPO / "constraints.txt").read_bytes() + (
        REPO / "scripts" / "ray_requirements.txt"
    ).read_bytes()
    digest = hashlib.sha256(locks).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "chaosproxy" / f"ray-env-{digest}" / "bin" / "python"


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Ray environment unavailable under CI: {why}")
    pytest.skip(f"{why} (run scripts/ray_env.sh)")


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A head and one more node, each `ray start --block` in a process group of its own."""

    def __init__(self, python: Path) -> None:
        self.python = python
        self.ray = python.parent / "ray"
        self.temp = Path(tempfile.mkdtemp(prefix="cpray-", dir="/tmp"))  # short: unix sockets
        self.port = _free_port(HEAD_IP)
        self.address = f"{HEAD_IP}:{self.port}"
        self.groups: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}

    def _start(self, *args: str) -> None:
        log = (self.temp / f"node{len(self.groups)}.log").open("wb")
        self.groups.append(
            subprocess.Popen(
                [str(self.ray), "start", "--block", "--num-cpus=1", *args,
                 "--object-store-memory=80000000", "--disable-usage-stats"],
                stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
            )
        )  # fmt: skip

    def start(self) -> None:
        self._start(
            "--head", f"--node-ip-address={HEAD_IP}", f"--port={self.port}",
            "--include-dashboard=false", f"--temp-dir={self.temp}",
        )  # fmt: skip
        self._wait(1)
        self._start(f"--address={self.address}", f"--node-ip-address={NODE_IP}")
        self._wait(2)

    def _wait(self, nodes: int) -> None:
        probe = (
            "import ray,sys; ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], "
            "logging_level='error'); print(sum(n['Alive'] for n in ray.nodes()))"
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for group in self.groups:
                if group.poll() is not None:
                    raise RuntimeError(f"ray start exited: {self.logs()}")
            try:
                alive = subprocess.run(
                    [str(self.python), "-c", probe, self.address, HEAD_IP],
                    capture_output=True, text=True, timeout=60, env=self.env,
                ).stdout.strip().splitlines()  # fmt: skip
            except subprocess.TimeoutExpired:
                alive = []
            if alive and alive[-1].isdigit() and int(alive[-1]) >= nodes:
                return
            time.sleep(1)
        raise RuntimeError(f"Ray cluster did not reach {nodes} node(s): {self.logs()}")

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in self.temp.glob("*.log"))

    def stop(self) -> None:
        """SIGTERM each group (ray start --block stops its node), then SIGKILL what is left,
        then any process still naming this cluster's temp dir (by pid)."""
        for group in reversed(self.groups):
            with _suppress():
                os.killpg(group.pid, signal.SIGTERM)
        for group in reversed(self.groups):
            try:
                group.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with _suppress():
                    os.killpg(group.pid, signal.SIGKILL)
            with _suppress():
                os.killpg(group.pid, signal.SIGKILL)
        for pid in leftovers(str(self.temp), self.address):
            with _suppress():
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.temp, ignore_errors=True)


def leftovers(*marks: str) -> list[int]:
    """Pids of processes whose command line names one of `marks` (this cluster's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(mark in command for mark in marks) and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], (ProcessLookupError, PermissionError))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    python = ray_python()
    if not python.is_file():
        _unavailable(f"no Ray environment at {python}")
    made = Cluster(python)
    try:
        made.start()
        yield made
    finally:
        made.stop()
    assert not leftovers(made.address), "Ray processes left running"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("plain") / "run"
    finish(chaosproxy("run", *GRID, out=out))
    return out, snapshot(out)


def on_ray(cluster: Cluster, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(cluster.python), "-m", "chaosproxy.cli", "run", *GRID, "--ray", cluster.address,
         *extra, "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cluster.env,
        start_new_session=True,
    )  # fmt: skip


def test_a_ray_run_equals_the_plain_run(
    cluster: Cluster, plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    process = on_ray(cluster, out)
    output, _ = process.communicate(timeout=240)
    assert process.returncode == 0, output
    assert "2 worker(s) on 2 node(s)" in output, output
    nodes = set(re.findall(r"node (127\.0\.0\.\d): (\d+) episodes", output))
    assert {ip for ip, _ in nodes} == {HEAD_IP, NODE_IP}, output  # both nodes took episodes
    assert sum(int(n) for _, n in nodes) == len(plain[1]["records"])
    assert json.loads((out / "config.json").read_text())["settings"]["ray"]["address"]
    mine = snapshot(out)
    for part in ("records", "calls", "journals", "results"):
        assert mine[part] == plain[1][part], part


def test_a_killed_worker_loses_nothing_and_counts_nothing_twice(
    cluster: Cluster, plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    process = on_ray(cluster, out)
    assert process.stdout is not None
    lines = []
    pids: list[int] = []
    for line in process.stdout:
        lines.append(line)
        if "worker(s) on" in line:
            pids = [int(p) for p in re.findall(r"pid (\d+)", line)]
            break
    assert pids, "".join(lines)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not records(out):
        time.sleep(0.02)
    os.kill(pids[-1], signal.SIGKILL)  # a worker dies with a batch in hand
    rest, _ = process.communicate(timeout=240)
    output = "".join(lines) + rest
    assert process.returncode == 0, output
    assert "lost:" in output and "back on the queue" in output, output
    written = [r.episode for r in records(out)]
    assert sorted(written) == sorted(plain[1]["records"])  # each once: none lost, none twice
    attempts = {r.attempt for r in records(out)}
    assert {c.attempt for c in raw_calls(out)} <= attempts  # no lost attempt's call
    mine = snapshot(out)
    for part in ("records", "calls", "journals", "results"):
        assert mine[part] == plain[1][part], part


def test_a_plain_run_never_imports_ray(tmp_path: Path) -> None:
    """Without --ray, chaosproxy's runner never loads Ray (nor the module that imports it),
    even where Ray is installed."""
    python = ray_python()
    if not python.is_file():
        _unavailable(f"no Ray environment at {python}")
    probe = (
        "import sys\n"
        "from chaosproxy.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "loaded = sorted(m for m in sys.modules if m == 'ray' or m.startswith(('ray.', "
        "'chaosproxy.runner.ray')))\n"
        "print('loaded:', loaded)\n"
    )
    args = ["run", "--agent", "naive", "--domains", "travel", "--tasks", "travel-01*",
            "--profile", "lambda0.0", "--no-score", "--out", str(tmp_path / "run")]  # fmt: skip
    done = subprocess.run(
        [str(python), "-c", probe, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "loaded: []" in done.stdout, done.stdout
    assert (python.parent / "ray").is_file()  # Ray was there to be imported
