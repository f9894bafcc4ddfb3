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

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "runner"))
sys.path.insert(0, str(Path(__file__).parent))
from raycluster import HEAD_IP, NODE_IP, REPO, Cluster, leftovers, ray_python
from test_attempts import GRID, chaosproxy, finish, raw_calls, records, snapshot

pytestmark = pytest.mark.timeout(360)


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Ray environment unavailable under CI: {why}")
    pytest.skip(f"{why} (run scripts/ray_env.sh)")


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


PACED = """
import asyncio, sys, time
import ray
from chaosproxy.runner.ray import PACER_NAME, ModelBucket, RayPacer

ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], logging_level="error")
bucket = ray.remote(num_cpus=0)(ModelBucket).options(name=PACER_NAME).remote(120, 60000)

@ray.remote(num_cpus=0)
def calls(n):
    async def go():
        pacer = RayPacer()
        starts = []
        for _ in range(n):
            await pacer.acquire(100)
            starts.append(time.time())
            pacer.settle(100, 100)
        return starts
    return ray.util.get_node_ip_address(), asyncio.run(go())

results = ray.get([
    calls.options(scheduling_strategy=NodeAffinity(node, soft=False)).remote(3)
    for node in sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
])
print("nodes", sorted(ip for ip, _ in results))
print("starts", sorted(t for _, starts in results for t in starts))
print("reserved", ray.get(bucket.count.remote()))
ray.kill(bucket)
"""


def test_the_pacer_is_one_budget_for_the_whole_cluster(cluster: Cluster) -> None:
    """Model calls from two nodes wait on the one named bucket: at 120 requests a minute,
    six calls (three a node, asked at once) start at least 0.5 s apart, cluster-wide."""
    script = PACED.replace(
        "import ray\n",
        "import ray\nfrom ray.util.scheduling_strategies import "
        "NodeAffinitySchedulingStrategy as NodeAffinity\n",
        1,
    )
    done = subprocess.run(
        [str(cluster.python), "-c", script, cluster.address, HEAD_IP],
        capture_output=True, text=True, timeout=180, env=cluster.env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    values = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()}
    assert json.loads(values["nodes"].replace("'", '"')) == [HEAD_IP, NODE_IP]
    starts = json.loads(values["starts"])
    assert len(starts) == 6 and int(values["reserved"]) == 6
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # one budget: 5 gaps of 0.5 s (a budget per node would give 1 s in all), less the
    # jitter of a reply's way back on a loaded machine
    assert starts[-1] - starts[0] >= 2.2, gaps
    assert min(gaps) >= 0.2, gaps


def test_only_the_ray_module_imports_ray() -> None:
    """`ray` is imported by chaosproxy/runner/ray.py and nowhere else in the package."""
    import ast

    importers = []
    for path in sorted((REPO / "chaosproxy").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(name == "ray" or name.startswith("ray.") for name in names):
                importers.append(str(path.relative_to(REPO)))
    assert sorted(set(importers)) == ["chaosproxy/runner/ray.py"]
