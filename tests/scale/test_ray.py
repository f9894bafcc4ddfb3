"""`chaosproxy run --ray` on a real two-node Ray cluster equals a plain run (issue 27).

A head (127.0.0.2) and a second node (127.0.0.3) are started once for the module, on
loopback (Ray replaces 127.0.0.1 by the machine's own address, so other 127.0.0.x are
pinned), each with two CPUs and a small object store. `chaosproxy run --ray ADDRESS` runs a
small scripted grid on one worker per node; its records, calls and journals (without
wall-clock fields) and results.json (without latency and the timing-dependent retry-storm
flags) must equal a plain `chaosproxy run` of the same seed (run in the Ray environment,
which also shows that a plain run never imports Ray). A model-driven run with `--rpm` is
paced by one budget across both nodes. A worker killed (kill -9) mid-run must lose
nothing and count nothing twice. To keep the module short, the plain run starts while the
cluster does, and the first two Ray runs share the cluster at the same time.

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
from test_attempts import GRID, raw_calls, records, snapshot

pytestmark = pytest.mark.timeout(420)

PROBE = """
import sys
from chaosproxy.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    assert not done.code, done.code
ours = ("ray.", "chaosproxy.runner.ray")
loaded = sorted(m for m in sys.modules if m == "ray" or m.startswith(ours))
print("loaded:", loaded)
"""
"""`chaosproxy run` in the Ray environment, then the modules it loaded that are Ray's."""


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Ray environment unavailable under CI: {why}")
    pytest.skip(f"{why} (run scripts/ray_env.sh)")


def _python() -> Path:
    python = ray_python()
    if not python.is_file():
        _unavailable(f"no Ray environment at {python}")
    return python


def _spawn(python: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(python), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env, start_new_session=True,
    )  # fmt: skip


def _finish(process: subprocess.Popen[str], timeout: float = 300) -> str:
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.Popen[str]]:
    """The plain run, started (in the Ray environment) before the cluster."""
    out = tmp_path_factory.mktemp("plain") / "run"
    return out, _spawn(_python(), "-c", PROBE, "run", *GRID, "--out", str(out))


@pytest.fixture(scope="module")
def cluster(plain_run: tuple[Path, subprocess.Popen[str]]) -> Iterator[Cluster]:
    made = Cluster(_python())
    try:
        made.start()
        yield made
    finally:
        made.stop()
    assert not leftovers(made.address), "Ray processes left running"


@pytest.fixture(scope="module")
def plain(plain_run: tuple[Path, subprocess.Popen[str]]) -> tuple[Path, dict[str, Any], str]:
    out, process = plain_run
    output = _finish(process)
    return out, snapshot(out), output


@pytest.fixture(scope="module")
def mock_model() -> Iterator[str]:
    """`chaosproxy mock-model` on a free loopback port (the hosted model's stand-in)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "chaosproxy.cli", "mock-model", "--port", "0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "serving on" in line, f"mock-model did not start: {line!r}"
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(10)


def on_ray(cluster: Cluster, out: Path, *args: str) -> subprocess.Popen[str]:
    command = ["-m", "chaosproxy.cli", "run", *args, "--ray", cluster.address, "--out", str(out)]
    return _spawn(cluster.python, *command, env=cluster.env)


@pytest.fixture(scope="module")
def launched(
    cluster: Cluster, mock_model: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, subprocess.Popen[str]]]:
    """The scripted grid and the paced model-driven one, on the cluster at the same time."""
    base = tmp_path_factory.mktemp("ray")
    paced = [
        "--agent", "react", "--model", "mock", "--base-url", mock_model, "--model-via-proxy",
        "--domains", "travel", "--tasks", "travel-0[1-4]*", "--profile", "lambda0.0",
        "--concurrency", "2", "--no-score", "--rpm", "120",
    ]  # fmt: skip
    return {
        "equal": (base / "equal", on_ray(cluster, base / "equal", *GRID)),
        "paced": (base / "paced", on_ray(cluster, base / "paced", *paced)),
    }


def _nodes(output: str) -> dict[str, int]:
    return {ip: int(n) for ip, n in re.findall(r"node (127\.0\.0\.\d): (\d+) episodes", output)}


def test_a_ray_run_equals_the_plain_run(
    launched: dict[str, tuple[Path, subprocess.Popen[str]]],
    plain: tuple[Path, dict[str, Any], str],
) -> None:
    out, process = launched["equal"]
    output = _finish(process)
    assert "2 worker(s) on 2 node(s)" in output, output
    nodes = _nodes(output)
    assert set(nodes) == {HEAD_IP, NODE_IP}, output  # both nodes took episodes
    assert sum(nodes.values()) == len(plain[1]["records"])
    assert json.loads((out / "config.json").read_text())["settings"]["ray"]["address"]
    mine = snapshot(out)
    for part in ("records", "calls", "journals", "results"):
        assert mine[part] == plain[1][part], part


def test_rpm_paces_the_model_calls_of_every_worker_together(
    launched: dict[str, tuple[Path, subprocess.Popen[str]]],
) -> None:
    """`--ray --rpm 120`: the workers' proxies ask the cluster's one pacer, so the model
    calls of both nodes go upstream at least 0.5 s apart (a pacer per worker would let two
    go at once), and the wait is on their records (`paced_ms`)."""
    out, process = launched["paced"]
    output = _finish(process)
    assert len(_nodes(output)) == 2, output
    model_calls = [c for c in raw_calls(out) if c.kind == "model_call"]
    assert len(model_calls) >= 4 and all(c.paced_ms is not None for c in model_calls)
    sent = sorted(c.ts + (c.paced_ms or 0) / 1000 for c in model_calls)
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert min(gaps) >= 0.5 - 0.15, gaps  # one budget; the jitter of a loaded machine aside
    assert sum(c.paced_ms or 0 for c in model_calls) > 0


def test_a_plain_run_never_imports_ray(plain: tuple[Path, dict[str, Any], str]) -> None:
    """Without --ray, chaosproxy's runner never loads Ray (nor the module that imports it),
    even where Ray is installed."""
    assert "loaded: []" in plain[2], plain[2]
    assert (ray_python().parent / "ray").is_file()  # Ray was there to be imported


def test_a_killed_worker_loses_nothing_and_counts_nothing_twice(
    cluster: Cluster, plain: tuple[Path, dict[str, Any], str], tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    process = on_ray(cluster, out, *GRID)
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
    output = "".join(lines) + _finish(process)
    assert "lost:" in output and "back on the queue" in output, output
    written = [r.episode for r in records(out)]
    assert sorted(written) == sorted(plain[1]["records"])  # each once: none lost, none twice
    attempts = {r.attempt for r in records(out)}
    assert {c.attempt for c in raw_calls(out)} <= attempts  # no lost attempt's call
    mine = snapshot(out)
    for part in ("records", "calls", "journals", "results"):
        assert mine[part] == plain[1][part], part


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
