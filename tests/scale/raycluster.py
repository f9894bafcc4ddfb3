"""A small Ray cluster on loopback for tests/scale/test_ray.py and benchmarks/scale.py.

A head and N more nodes, each `ray start --block` in a process group (session) of its own,
pinned to 127.0.0.x addresses other than 127.0.0.1 (which Ray replaces by the machine's
own address), with two CPUs and a small object store each. Stopped by pid, never with
`ray stop` (which would stop every Ray on the machine). The Ray environment is the one
scripts/ray_env.sh makes (CHAOSPROXY_RAY_PYTHON overrides).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).parents[2]
START_TIMEOUT_S = 150.0
CPUS_PER_NODE = 2
"""Two workers a node (one CPU each): two runs can share the cluster at once."""
STOP_GRACE_S = 5.0
"""A test cluster holds nothing worth a clean stop: SIGTERM, then SIGKILL after this."""
HEAD_IP, NODE_IP = "127.0.0.2", "127.0.0.3"
NODE_IPS = [HEAD_IP, NODE_IP, "127.0.0.4", "127.0.0.5"]


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


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A head and one more node, each `ray start --block` in a process group of its own."""

    def __init__(self, python: Path, cpus: int = CPUS_PER_NODE) -> None:
        self.python, self.cpus = python, cpus
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
                [str(self.ray), "start", "--block", f"--num-cpus={self.cpus}", *args,
                 "--object-store-memory=80000000", "--disable-usage-stats"],
                stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
            )
        )  # fmt: skip

    def start(self, nodes: int = 2) -> None:
        """The head, then `nodes - 1` more once the head's port answers; returns when all
        are alive in the cluster."""
        self._start(
            "--head", f"--node-ip-address={HEAD_IP}", f"--port={self.port}",
            "--include-dashboard=false", f"--temp-dir={self.temp}",
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(HEAD_IP, self.port):
            self._check(deadline, "the head's port")
            time.sleep(0.2)
        for index in range(1, nodes):
            self._start(f"--address={self.address}", f"--node-ip-address={NODE_IPS[index]}")
        self._wait(nodes, deadline)

    def pids(self) -> list[int]:
        """Every process of the cluster: the sessions its nodes were started in."""
        sessions = {group.pid for group in self.groups}
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getsid(int(entry.name)) in sessions:
                        found.append(int(entry.name))
                except OSError:
                    continue
        return found

    def _check(self, deadline: float, what: str) -> None:
        for group in self.groups:
            if group.poll() is not None:
                raise RuntimeError(f"ray start exited: {self.logs()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Ray cluster: no {what} in {START_TIMEOUT_S:g} s: {self.logs()}")

    def _wait(self, nodes: int, deadline: float) -> None:
        """One probe (a Ray driver) that waits inside until `nodes` nodes are alive."""
        probe = (
            "import ray, sys, time\n"
            "ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], logging_level='error')\n"
            "while sum(n['Alive'] for n in ray.nodes()) < int(sys.argv[3]):\n"
            "    time.sleep(0.2)\n"
            "print('ready')\n"
        )
        try:
            done = subprocess.run(
                [str(self.python), "-c", probe, self.address, HEAD_IP, str(nodes)],
                capture_output=True, text=True, env=self.env,
                timeout=max(1.0, deadline - time.monotonic()),
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            self._check(0.0, f"{nodes} node(s)")
            raise
        if "ready" not in done.stdout:
            raise RuntimeError(f"Ray cluster probe failed: {done.stderr[-2000:]} {self.logs()}")

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in self.temp.glob("*.log"))

    def stop(self) -> None:
        """SIGTERM each group (ray start --block stops its node), then SIGKILL what is left,
        then any process still in their sessions or naming this cluster (by pid)."""
        for group in reversed(self.groups):
            with _suppress():
                os.killpg(group.pid, signal.SIGTERM)
        grace = time.monotonic() + STOP_GRACE_S
        for group in reversed(self.groups):
            with contextlib.suppress(subprocess.TimeoutExpired):
                group.wait(timeout=max(0.1, grace - time.monotonic()))
            with _suppress():
                os.killpg(group.pid, signal.SIGKILL)
        for pid in {*self.pids(), *leftovers(str(self.temp), self.address)}:
            with _suppress():
                os.kill(pid, signal.SIGKILL)
        for group in self.groups:
            with contextlib.suppress(subprocess.TimeoutExpired):
                group.wait(timeout=10)
        shutil.rmtree(self.temp, ignore_errors=True)


def _answers(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


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
