"""The `schedule` and `shrink` commands end to end, and the pytest file shrink emits."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.faults.schedule import parse_schedule
from chaosproxy.records import EPISODES_FILE, append_jsonl
from chaosproxy.replay.files import SHRUNK_FILE, read_shrunk
from chaosproxy.replay.rerun import Rerunner

from .episodes import cheapest_flight_episode

EPISODE = "naive~travel-03-cheapest-lon-par~e0~lambda0.0~t1"


def _naive_failure(run_dir: Path) -> None:
    """A run directory with one failed episode of the built-in `naive` agent: a 503 on
    its second search and a truncated hold reply (it retries neither)."""
    record = cheapest_flight_episode("naive")
    schedule = parse_schedule(
        [
            {"tool": "travel/search_flights", "call": 2, "fault": "ServerError"},
            {"tool": "travel/hold_flight", "call": 1, "fault": "ServerError"},
        ]
    )

    async def once() -> None:
        async with Rerunner(record, run_dir=run_dir) as rerunner:
            outcome = await rerunner.run(schedule)
        assert outcome.failed
        append_jsonl(run_dir / EPISODES_FILE, outcome.record)

    asyncio.run(once())


@pytest.mark.timeout(240)  # it runs a pytest session of its own: two more environments
def test_schedule_shrink_and_the_emitted_regression_test(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _naive_failure(run_dir)
    runner = CliRunner()

    shown = runner.invoke(main, ["schedule", str(run_dir), EPISODE, "--json"])
    assert shown.exit_code == 0, shown.output
    received = parse_schedule(json.loads(shown.output))
    assert [(f.tool, f.call, f.fault) for f in received.faults] == [
        ("travel/hold_flight", 1, "ServerError")
    ]

    emitted = tmp_path / "test_regression.py"
    shrunk = runner.invoke(
        main,
        [
            "shrink",
            str(run_dir),
            EPISODE,
            "--json",
            "--budget",
            "10",
            "--emit-pytest",
            str(emitted),
        ],
    )
    assert shrunk.exit_code == 0, shrunk.output
    minimal = parse_schedule(json.loads(shrunk.stdout))
    assert [(f.tool, f.call, f.fault) for f in minimal.faults] == [
        ("travel/hold_flight", 1, "ServerError")
    ]
    assert "run 1/10" in shrunk.stderr
    (row,) = read_shrunk(run_dir)  # recorded for the report
    assert row.source == "shrink" and row.episode == EPISODE
    assert parse_schedule(row.schedule) == minimal
    assert row.group == "ServerError hits the 1st call" and row.where == "travel/hold_flight"

    # the agent as it is (not fixed: the regression test fails) and a fixed one (robust
    # retries: it passes), in one pytest session under the plugin
    source = emitted.read_text()
    tests = tmp_path / "regression"
    tests.mkdir()
    (tests / "test_as_is.py").write_text(source)
    (tests / "test_fixed.py").write_text(
        source.replace("make_agent('naive')", "make_agent('robust')")
    )
    session = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tests),
            "-q",
            "-p",
            "no:cacheprovider",
            "--chaos-run-dir",
            str(tmp_path / "chaos"),
            "--chaos-domains",
            "travel",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    out = session.stdout
    assert session.returncode == 1, out + session.stderr
    assert "1 failed, 1 passed" in out, out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "test_as_is.py::" in failed[0], out
    assert "still fails under the minimal schedule" in out


def test_hunt_and_shrink_from_a_task_without_a_run_directory(tmp_path: Path) -> None:
    """`--task T --agent A`: no run directory; the findings go to --out."""
    out = tmp_path / "found"
    runner = CliRunner()
    hunted = runner.invoke(
        main,
        [
            "hunt",
            "--task",
            "travel-03-cheapest-lon-par",
            "--agent",
            "naive",
            "--fault",
            "ServerError",
            "--no-pairs",
            "--json",
            "--out",
            str(out),
        ],
    )
    assert hunted.exit_code == 0, hunted.output
    document = json.loads(hunted.stdout)
    assert document["fault_free"] == "success" and document["singles"] == 3
    assert [g["pattern"] for g in document["groups"]] == ["ServerError hits the 1st call"]
    assert len(document["groups"][0]["where"]) == 3
    for schedule in document["groups"][0]["schedules"]:
        parse_schedule(schedule)  # each a document --schedule accepts
    assert "single 3/3" in hunted.stderr
    assert {row.source for row in read_shrunk(out)} == {"hunt"}
    assert len(read_shrunk(out)) == 3

    # seed 1 under lambda0.3: naive meets a CascadingFailure on its hold and fails
    shrunk = runner.invoke(
        main,
        [
            "shrink",
            "--task",
            "travel-03-cheapest-lon-par",
            "--agent",
            "naive",
            "--profile",
            "lambda0.3",
            "--seed",
            "1",
            "--budget",
            "10",
            "--json",
            "--out",
            str(out),
        ],
    )
    assert shrunk.exit_code == 0, shrunk.output
    minimal = parse_schedule(json.loads(shrunk.stdout))
    assert [(f.tool, f.fault) for f in minimal.faults] == [
        ("travel/hold_flight", "CascadingFailure")
    ]
    assert minimal.faults[0].params["max_steps"] < 3  # an incident of fewer steps
    assert "run under lambda0.3" in shrunk.stderr
    assert (out / SHRUNK_FILE).read_text().count("\n") == 4
