"""The pytest plugin, driven through pytester: real inner pytest sessions, real environments.

The serial session is run once (module fixture) and read by several tests; the xdist
session runs the same file and must meet the same faults.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import echo_service

from chaosproxy.records import CALLS_FILE, EPISODES_FILE, RunConfig
from chaosproxy.scoring.api import score_runs

pytestmark = pytest.mark.timeout(600)
TASK = "travel-01-book-named-flight"

AGENT_TESTS = f'''
import httpx
import fastmcp
import pytest

from chaosproxy.domains.kit.client import RestToolClient
from chaosproxy.domains.registry import get_domain


def reads(url, times):
    codes = []
    for _ in range(times):
        try:
            reply = httpx.post(url + "/tools/get_itinerary", json={{}}, timeout=10)
            codes.append(reply.status_code)
        except httpx.HTTPError:
            codes.append(0)
    return codes


@pytest.mark.chaos(profiles=["lambda0.0", "lambda0.3"], trials=3)
def test_reads(chaos_episode):
    """Three reads of the itinerary, without retries."""
    assert reads(chaos_episode.url("travel"), 3) == [200, 200, 200]


@pytest.mark.chaos(profiles=["lambda0.0"], trials=2, task="{TASK}")
async def test_task_over_rest(chaos_episode):
    async with RestToolClient(chaos_episode.url()) as client:
        await get_domain("travel").tasks["{TASK}"].solve(client)
    assert chaos_episode.verdict()


@pytest.mark.chaos(profiles=["lambda0.0"], trials=2)
async def test_mcp(chaos_episode):
    async with fastmcp.Client(chaos_episode.mcp_url("travel"), timeout=10) as client:
        result = await client.call_tool("get_itinerary", {{}})
    assert not result.is_error


@pytest.mark.chaos(profiles=["lambda0.0"], trials=2)
def test_lists_tools(chaos_episode):
    """Only reads the tool listing: no tool call, so the service holds no state for it."""
    assert httpx.get(chaos_episode.url("travel") + "/tools", timeout=10).status_code == 200


@pytest.mark.chaos(profiles=["lambda0.0"], trials=2)
def test_skips_a_trial(chaos_episode):
    if chaos_episode.key.endswith("t2"):
        pytest.skip("the second trial is skipped")
    assert reads(chaos_episode.url("travel"), 1) == [200]
'''
INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
chaos_domains = travel
chaos_seed = 11
"""


def _project(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_agent=AGENT_TESTS)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _draws(run_dir: Path) -> list[tuple[Any, ...]]:
    """What the agent met, call by call: independent of timing, worker and order."""
    return sorted(
        (
            c["episode"],
            c["episode_key"],
            c["step"],
            c["tool"],
            c["rpc_method"],
            (c["fault"] or {}).get("name"),
            c["fault_delivered"],
            c["status"],
        )
        for c in _jsonl(run_dir / CALLS_FILE)
    )


@dataclass
class Session:
    returncode: int
    output: str
    run_dir: Path


def run_session(folder: Path, *args: str) -> Session:
    """An inner pytest session in its own process, as a user runs one."""
    (folder / "pytest.ini").write_text(INI)
    (folder / "test_agent.py").write_text(AGENT_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=540,
    )
    return Session(done.returncode, done.stdout + done.stderr, folder / "run")


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """One serial session over AGENT_TESTS, with the gate at 0.5."""
    folder = tmp_path_factory.mktemp("serial")
    return run_session(folder, "--chaos-run-dir", "run", "--chaos-min-pass-k", "0.5")


def wilson_text(c: int, n: int, k: int = 1) -> str:
    """The Wilson 95 % interval of c/n, worked out here from its formula. With k > 1 it is
    pass^k as `chaosproxy score` prints it for one unit of n = k trials: the point is 1 when
    all passed, else 0, and its interval is the Wilson interval of that value over n = 1
    (one unit), which holds the point: [0.21, 1.00] or [0.00, 0.79]."""
    if k > 1:
        return wilson_text(int(c == n), 1)
    z2 = 1.959963984540054**2
    p = c / n
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = (z2**0.5) * (p * (1 - p) / n + z2 / (4 * n * n)) ** 0.5 / (1 + z2 / n)
    low = 0.0 if c == 0 else centre - half
    high = 1.0 if c == n else centre + half
    return f"{p:.2f} [{low:.2f}, {high:.2f}]"


def summary_lines(output: str) -> list[str]:
    section = output.split(" chaosproxy ", 1)[1]
    return [line for line in section.splitlines() if line.startswith("test_agent.py::")]


def test_marker_and_options_parametrise_over_profile_and_trial(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "chaos_profile =\n    lambda0.1\nchaos_trials = 2\n"
    )
    pytester.makepyfile(
        test_ids="""
        import pytest

        def test_default(chaos_episode):
            pass

        @pytest.mark.chaos(profiles=["lambda0.3", "lambda0.0"], trials=3)
        def test_marked(chaos_episode):
            pass

        @pytest.mark.parametrize("n", [1, 2])
        def test_param(chaos_episode, n):
            pass

        def test_plain():
            pass
        """
    )

    def collected(*args: str) -> list[str]:
        result = pytester.runpytest("--collect-only", "-q", *args)
        assert result.ret == 0, result.stdout.str()
        return [line.split("::")[1] for line in result.outlines if "::" in line]

    marked = [f"test_marked[{p}-t{t}]" for p in ("lambda0.3", "lambda0.0") for t in (1, 2, 3)]
    assert collected() == [
        "test_default[lambda0.1-t1]",
        "test_default[lambda0.1-t2]",
        *marked,
        *[f"test_param[lambda0.1-t{t}-{n}]" for t in (1, 2) for n in (1, 2)],
        "test_plain",
    ]
    from_cli = collected("--chaos-profile", "lambda0.2", "--chaos-profile", "adversarial")
    assert from_cli[:2] == ["test_default[lambda0.2-t1]", "test_default[lambda0.2-t2]"]
    assert from_cli[2:4] == ["test_default[adversarial-t1]", "test_default[adversarial-t2]"]
    assert from_cli[4:10] == marked  # the marker wins over the command line
    assert collected("--chaos-trials", "1")[:1] == ["test_default[lambda0.1-t1]"]
    assert len(collected("--chaos-trials", "1")) == 1 + 6 + 2 + 1
    assert not (pytester.path / ".chaosproxy").exists()  # nothing starts for collection


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--chaos-profile", "lambda9"], ["lambda9", "did you mean"]),
        (["--chaos-min-pass-k", "1.5"], ["--chaos-min-pass-k", "[0, 1]"]),
        (["--chaos-trials", "0"], ["--chaos-trials", "at least 1"]),
        (["--chaos-seed", "x"], ["--chaos-seed", "integer"]),
        (["--chaos-upstream", "crm"], ["--chaos-upstream", "NAME=URL"]),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], words: list[str]
) -> None:
    pytester.makepyfile("def test_x(chaos_episode):\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    for word in words:
        assert word in result.stderr.str()


def test_a_run_dir_holding_a_run_is_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "old").mkdir()
    (pytester.path / "old" / EPISODES_FILE).write_text("")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--chaos-run-dir", "old")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "already holds a run" in result.stderr.str()


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (
            "@pytest.mark.chaos(profiles=['nope'])\ndef test_x(chaos_episode):\n    pass\n",
            ["test_x", "nope", "no shipped profile"],
        ),
        (
            "@pytest.mark.chaos(trials=0)\ndef test_x(chaos_episode):\n    pass\n",
            ["test_x", "trials"],
        ),
        (
            "@pytest.mark.chaos(task='travel-99-x')\ndef test_x(chaos_episode):\n    pass\n",
            ["test_x", "travel-99-x"],
        ),
        (
            "@pytest.mark.chaos(profile='lambda0.2')\ndef test_x(chaos_episode):\n    pass\n",
            ["test_x", "profile"],
        ),
        ("@pytest.mark.chaos()\ndef test_x():\n    pass\n", ["test_x", "chaos_episode"]),
    ],
)
def test_bad_markers_are_collection_errors(
    pytester: pytest.Pytester, source: str, words: list[str]
) -> None:
    pytester.makepyfile("import pytest\n\n" + source)
    result = pytester.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # collection errors stop the session
    text = result.stdout.str()
    for word in words:
        assert word in text


def test_summary_per_test_and_profile_with_the_gate(serial: Session) -> None:
    episodes = _jsonl(serial.run_dir / EPISODES_FILE)
    per_row: dict[tuple[str, str], list[bool]] = {}
    for e in episodes:
        assert e["outcome"] == "completed", e
        per_row.setdefault((e["task_id"].split("::")[1], e["profile"]), []).append(e["success"])
    assert sorted(per_row) == [
        ("test_lists_tools", "lambda0.0"),
        ("test_mcp", "lambda0.0"),
        ("test_reads", "lambda0.0"),
        ("test_reads", "lambda0.3"),
        ("test_skips_a_trial", "lambda0.0"),
        ("test_task_over_rest", "lambda0.0"),
    ]
    assert per_row[("test_reads", "lambda0.0")] == [True] * 3
    assert per_row[("test_task_over_rest", "lambda0.0")] == [True] * 2
    assert per_row[("test_skips_a_trial", "lambda0.0")] == [True]  # the skipped trial: no record
    lines = {tuple(line.split()[:2]): line for line in summary_lines(serial.output)}
    assert per_row[("test_lists_tools", "lambda0.0")] == [True] * 2
    assert len(lines) == 6, serial.output
    for (test, profile), outcomes in per_row.items():
        line = lines[(f"test_agent.py::{test}", profile)]
        k = {"test_reads": 3}.get(test, 2)
        c, n = sum(outcomes), len(outcomes)
        assert f"{n}/{k}" in line
        assert wilson_text(c, n) in line  # SR
        if n == k:
            assert wilson_text(c, n, k) in line  # pass^k
        else:
            assert line.count("n/a") == 1
    calls = _jsonl(serial.run_dir / CALLS_FILE)
    stressed = {e["episode"] for e in episodes if e["profile"] == "lambda0.3"}
    met = Counter(
        c["fault"]["name"] for c in calls if c["episode"] in stressed and c["fault_delivered"]
    )
    expected = ", ".join(f"{name} {n}" for name, n in sorted(met.items())) or "none"
    assert lines[("test_agent.py::test_reads", "lambda0.3")].endswith(expected)
    assert lines[("test_agent.py::test_reads", "lambda0.0")].endswith("none")
    # the gate: pass^k below 0.5, or not measurable (a trial did not complete)
    failing = {"test_skips_a_trial under lambda0.0: pass^2 = n/a"}
    if not all(per_row[("test_reads", "lambda0.3")]):
        failing.add("test_reads under lambda0.3: pass^3 = 0.00")
    assert "reliability gate pass^k >= 0.5: FAILED" in serial.output
    listed = {
        line.strip().removeprefix("test_agent.py::")
        for line in serial.output.splitlines()
        if re.search(r" under lambda0\.\d: pass\^\d = ", line)
    }
    assert listed == failing
    assert serial.returncode == 1


def test_the_run_directory_scores_as_a_run(serial: Session) -> None:
    config = RunConfig.model_validate_json((serial.run_dir / "config.json").read_text())
    assert (config.kind, config.seed, config.trials, config.agent) == ("run", 11, 3, "pytest")
    assert {"lambda0.0", "lambda0.3"} <= set(config.profiles)
    episodes = _jsonl(serial.run_dir / EPISODES_FILE)
    keys = {e["episode_key"] for e in episodes}
    assert "test_agent.py::test_reads~lambda0.3~t2" in keys
    task_runs = [e for e in episodes if e["builtin_task"] == TASK]
    assert len(task_runs) == 2
    for e in task_runs:
        assert (serial.run_dir / "episodes" / e["episode"] / "journal.json").is_file()
        assert e["domain"] == "travel" and e["t_success"] is not None
    assert {e["transport"] for e in episodes if "test_mcp" in e["task_id"]} == {"mcp"}
    tasks = {t["id"].split("::")[1]: t for t in _jsonl(serial.run_dir / "tasks.jsonl")}
    assert tasks["test_reads"]["domain"] == "travel"  # known once the test called
    assert tasks["test_reads"]["description"] == "Three reads of the itinerary, without retries."
    assert tasks["test_task_over_rest"]["builtin_task"] == TASK
    assert tasks["test_task_over_rest"]["l_min"] > 0
    scored = score_runs([serial.run_dir])
    groups = {g.profile: g for g in scored.results.groups}
    nominal = [e for e in episodes if e["profile"] == "lambda0.0"]
    assert groups["lambda0.0"].sr.n == len(nominal)
    assert groups["lambda0.0"].sr.value == pytest.approx(
        sum(e["success"] for e in nominal) / len(nominal)
    )
    assert (serial.run_dir / "results.json").is_file()  # written by the session itself
    cli = subprocess.run(
        [sys.executable, "-m", "chaosproxy.cli", "score", str(serial.run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert "pytest" in cli.stdout and "lambda0.3" in cli.stdout


def test_xdist_workers_meet_the_same_faults_and_write_one_run(
    serial: Session, tmp_path: Path
) -> None:
    parallel = run_session(
        tmp_path, "-n", "2", "--chaos-run-dir", "run", "--chaos-min-pass-k", "0.5"
    )
    assert "gw1" in parallel.output or "2 workers" in parallel.output
    assert _draws(parallel.run_dir) == _draws(serial.run_dir)
    outcomes = {e["episode_key"]: e["success"] for e in _jsonl(serial.run_dir / EPISODES_FILE)}
    assert {
        e["episode_key"]: e["success"] for e in _jsonl(parallel.run_dir / EPISODES_FILE)
    } == outcomes
    config = RunConfig.model_validate_json((parallel.run_dir / "config.json").read_text())
    assert config.settings["xdist_workers"] == 2
    assert summary_lines(parallel.output) == summary_lines(serial.output)
    assert parallel.returncode == serial.returncode == 1


def test_the_gate_alone_fails_a_session_with_no_failed_test(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_agent=AGENT_TESTS)
    gated = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "task_over_rest or skips", "--chaos-min-pass-k", "0.9"
    )
    gated.assert_outcomes(passed=3, skipped=1)
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(
        [
            "*reliability gate pass^k >= 0.9: FAILED*",
            "*test_skips_a_trial under lambda0.0: pass^2 = n/a*",
        ]
    )
    runs = list((pytester.path / ".chaosproxy" / "runs").iterdir())
    assert len(runs) == 1  # the default run directory
    assert len(_jsonl(runs[0] / EPISODES_FILE)) == 3  # the skipped trial is not recorded


def test_the_documented_example_runs(tmp_path: Path) -> None:
    """docs/examples/pytest as a user runs it: without faults its agent books every time."""
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pytest"
    for name in ("booking_agent.py", "test_booking.py", "test_booking_mcp.py", "pytest.ini"):
        (tmp_path / name).write_text((example / name).read_text())
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--chaos-run-dir", "run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=540,
    )
    section = re.split(r"=+ chaosproxy =+", done.stdout)[-1]  # the summary, not a failure's faults
    rows = [line for line in section.splitlines() if line.startswith("test_booking")]
    assert len(rows) == 4, done.stdout
    for row in rows:
        if " lambda0.0 " in row:
            assert "3/3     1.00 [0.44, 1.00]  1.00 [0.21, 1.00]  none" in row
    assert len(_jsonl(tmp_path / "run" / EPISODES_FILE)) == 12
    assert done.returncode in (0, 1)  # under lambda0.2 this small agent may fail a trial


def test_an_upstream_instead_of_built_in_domains(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_crm="""
        import httpx

        def test_search(chaos_episode):
            reply = httpx.post(chaos_episode.url("crm") + "/tools/search", json={"q": 1})
            assert reply.json()["got"] == {"q": 1}
        """
    )
    with echo_service() as url:
        result = pytester.runpytest_subprocess(
            *("-p", "no:cacheprovider", "--chaos-domains", "none", "--chaos-upstream"),
            *(f"crm={url}", "--chaos-profile", "lambda0.0", "--chaos-trials", "2"),
            *("--chaos-run-dir", "run", "--chaos-min-pass-k", "0.9"),
        )
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*reliability gate pass^k >= 0.9: passed (1 checked)*"])
    [row] = [line for line in result.outlines if line.startswith("test_crm.py::test_search ")]
    assert row.split()[:3] == ["test_crm.py::test_search", "lambda0.0", "2/2"]
    assert wilson_text(2, 2) in row and wilson_text(2, 2, 2) in row
    records = _jsonl(pytester.path / "run" / EPISODES_FILE)
    assert [(r["domain"], r["success"]) for r in records] == [("crm", True), ("crm", True)]
    config = RunConfig.model_validate_json((pytester.path / "run" / "config.json").read_text())
    assert config.domains == ["crm"] and config.settings["upstreams"] == {"crm": url}


def test_an_interrupted_session_stops_what_it_started(tmp_path: Path) -> None:
    """Ctrl-C in the middle of a chaos test: pytest tears the session down, and the
    environment stops its services child process."""
    (tmp_path / "test_long.py").write_text(
        "import pathlib, time\n\n"
        "def test_long(chaos, chaos_episode):\n"
        "    services = chaos._running()._services._process\n"
        "    pathlib.Path('pid').write_text(str(services.pid))\n"
        "    time.sleep(120)\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nchaos_domains = travel\n")
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--chaos-run-dir", "run"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    pid_file = tmp_path / "pid"
    deadline = time.monotonic() + 240
    while not pid_file.is_file() and inner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pid_file.is_file(), inner.communicate()[0] if inner.poll() is not None else ""
    time.sleep(0.3)  # the pid is written just before the sleep starts
    services = int(pid_file.read_text())
    os.kill(services, 0)  # running
    inner.send_signal(signal.SIGINT)
    output, _ = inner.communicate(timeout=120)
    assert inner.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    with pytest.raises(ProcessLookupError):
        os.kill(services, 0)


def test_a_session_without_chaos_tests_loads_nothing_heavy(pytester: pytest.Pytester) -> None:
    """Installed, the plugin is in every pytest session: it must cost nothing when unused."""
    pytester.makeconftest(
        """
        import sys

        def pytest_unconfigure(config):
            heavy = ("chaosproxy.api", "chaosproxy.scoring", "chaosproxy.records", "pydantic")
            print("LOADED", [name for name in heavy if name in sys.modules])
        """
    )
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["LOADED []"])
    assert not (pytester.path / ".chaosproxy").exists()
