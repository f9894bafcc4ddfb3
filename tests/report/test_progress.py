"""The run's progress display: live per (agent, profile) on a terminal, plain lines elsewhere,
never wider than 100 columns."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.cells import cell_len

from chaosproxy.records import EpisodeRecord
from chaosproxy.runner.grid import EpisodeSpec
from chaosproxy.runner.progress import Progress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _plan() -> list[EpisodeSpec]:
    return [
        EpisodeSpec(agent, f"trv-{t}", "travel", 0.0, profile, trial)
        for agent in ("naive", "robust")
        for profile in ("lambda0.0", "lambda0.2")
        for t in range(5)
        for trial in (1, 2)
    ]


def _record(spec: EpisodeSpec, success: bool, outcome: str = "completed") -> EpisodeRecord:
    return EpisodeRecord.model_validate(
        {
            "episode": spec.episode_id,
            "episode_key": spec.key,
            "task_id": spec.task_id,
            "domain": spec.domain,
            "epsilon": spec.epsilon,
            "profile": spec.profile,
            "trial": spec.trial,
            "agent": spec.agent,
            "transport": "rest",
            "seed": 7,
            "outcome": outcome,
            "success": success if outcome == "completed" else None,
            "started_at": 0.0,
            "duration_s": 0.1,
            "task_text": "x",
        }
    )


def _feed(progress: Progress, plan: list[EpisodeSpec]) -> None:
    for index, spec in enumerate(plan):
        progress.start(spec)
        outcome = "timeout" if index % 13 == 5 else "completed"
        progress.add(_record(spec, success=index % 4 != 0, outcome=outcome))
    progress.close()


def test_plain_lines_off_a_terminal_name_rate_elapsed_eta_and_cell() -> None:
    plan = _plan()
    done = {plan[0].episode_id, plan[1].episode_id}  # a resumed run
    stream = io.StringIO()
    progress = Progress(plan, done, stream, interval_s=0.0)
    _feed(progress, plan[2:])
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()
    # fed: 38 episodes; index % 13 == 5 is infra (3), index % 4 == 0 a failure (10)
    assert lines[0].startswith("3/40 ep · ok 0 fail 1 infra 0 · ")
    assert re.search(r" · [0-9.]+/s · elapsed 0:0\d · ETA –:–– · ", lines[0])
    assert lines[1].endswith(" · now naive/lambda0.0 trv-1 ε0 t2")  # the cell being run
    assert lines[37].startswith("40/40 ep · ok 25 fail 10 infra 3 · ")
    per_cell = [line for line in lines if line.startswith("  ")]
    assert per_cell[0] == "  naive · lambda0.0: 10/10 · ok 5 fail 2 infra 1"
    assert len(per_cell) == 4 and all(cell_len(line) <= 100 for line in lines)


def test_plain_lines_are_periodic() -> None:
    plan = _plan()
    stream = io.StringIO()
    _feed(Progress(plan, (), stream, interval_s=3600.0), plan)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 + 4 and lines[0].startswith("40/40 ep ·")


def test_live_display_one_bar_per_agent_and_profile_within_the_terminal_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # a wide terminal: the display uses it, no more
    plan = _plan()
    stream = io.StringIO()
    progress = Progress(plan, (), stream, live=True)
    for index, spec in enumerate(plan[:-1]):
        progress.start(spec)
        outcome = "timeout" if index % 13 == 5 else "completed"
        progress.add(_record(spec, success=index % 4 != 0, outcome=outcome))
    progress.start(plan[-1])  # still running when the display stops
    progress.close()
    frames = ANSI.sub("", stream.getvalue()).replace("\r", "\n").splitlines()
    assert frames and all(cell_len(line) <= 160 for line in frames)
    last = {line.split("━")[0].strip(): line for line in frames if "━" in line}
    assert set(last) == {
        "naive · lambda0.0",
        "naive · lambda0.2",
        "robust · lambda0.0",
        "robust · lambda0.2",
        "all",
    }
    assert "9/10" in last["robust · lambda0.2"] and "39/40" in last["all"]
    assert re.search(r"[0-9.]+/s +0:00:\d\d ETA 00:0\d", last["all"]), "rate, elapsed, ETA"
    assert re.search(r"10/10 +6✓ +3✗ +1!", last["naive · lambda0.0"]), (
        "ok, failed, infra (0, 4, 8 fail; 5 infra)"
    )
    assert last["robust · lambda0.2"].rstrip().endswith("trv-4 ε0 t2"), "the cell being run"


def test_the_progress_line_uses_the_scorers_infrastructure_rule(tmp_path: Any) -> None:
    """Issue 25 item 12: a crash or timeout right after a delivered fault is a failure in
    the live line, as the scorer counts it; after a clean call it stays infrastructure."""
    from chaosproxy.records import CALLS_FILE, CallRecord, FaultRecord, append_jsonl

    log = tmp_path / CALLS_FILE
    log.write_text("")
    plan = _plan()[:3]
    stream = io.StringIO()
    progress = Progress(plan, stream=stream, live=False, interval_s=1e9, calls_log=log)

    def logged(spec: EpisodeSpec, status: int, fault: str | None) -> None:
        append_jsonl(
            log,
            CallRecord(
                ts=1.0,
                run_seed=7,
                episode=spec.episode_id,
                episode_key=spec.key,
                step=1,
                domain="travel",
                tool="search_flights",
                transport="rest",
                kind="tool_call",
                method="POST",
                path="/travel/tools/search_flights",
                fault=FaultRecord(name=fault, stage="before", recoverable=True) if fault else None,
                fault_delivered=fault is not None,
                status=status,
                outcome="ok" if status < 400 else "http_error",
                latency_ms=1.0,
            ),
        )

    # crashed on a 429 it was shown; timed out after a 503; crashed after a clean call
    logged(plan[0], 429, "SoftRateLimit")
    progress.add(_record(plan[0], False, "agent_crash"))
    logged(plan[1], 503, "ServerError")
    progress.add(_record(plan[1], False, "timeout"))
    logged(plan[2], 200, None)
    progress.add(_record(plan[2], False, "agent_crash"))
    assert (progress.successes, progress.failures, progress.infrastructure) == (0, 2, 1)
    assert "ok 0 fail 2 infra 1" in progress.line()


@pytest.mark.parametrize("columns", ["80", "120"])
def test_live_numbers_are_never_cut_while_a_long_cell_runs(
    monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """Issue 30: at 120 columns a long task id squeezed the numbers to `91/… 5… ETA 00:…`;
    only the cell being run may be cut."""
    monkeypatch.setenv("COLUMNS", columns)
    plan = [
        EpisodeSpec(agent, f"travel-03-cheapest-lon-par-{t}", "travel", 0.0, "lambda0.2", 1)
        for agent in ("naive", "robust")
        for t in range(60)
    ]
    stream = io.StringIO()
    progress = Progress(plan, (), stream, live=True)
    for spec in plan[:-1]:
        progress.start(spec)
        progress.add(_record(spec, success=True))
    progress.start(plan[-1])
    progress.close()
    frames = ANSI.sub("", stream.getvalue()).replace("\r", "\n").splitlines()
    last = {line.split("━")[0].strip(): line for line in frames if "━" in line}
    assert all(cell_len(line) <= int(columns) for line in frames)
    assert re.search(r" 119/120 .*/s +0:00:\d\d ETA \d\d:\d\d", last["all"]), last["all"]
    assert re.search(r" 60/60 +60✓ +0✗ +0!", last["naive · lambda0.2"]), last
    numbers = last["all"].split("ETA")[0]
    assert "…" not in numbers


def test_a_ray_run_shows_each_nodes_throughput(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run --ray`: episodes counted by the node that ran them, as rates since the workers
    started (a fake clock: 10 s after `workers_ready`, 6 and 2 episodes)."""
    clock = [100.0]
    monkeypatch.setattr("chaosproxy.runner.progress.time.monotonic", lambda: clock[0])
    plan = _plan()[:8]
    stream = io.StringIO()
    progress = Progress(plan, (), stream, interval_s=1e9)
    clock[0] = 130.0  # 30 s of start-up do not count
    progress.workers_ready()
    clock[0] = 140.0
    for index, spec in enumerate(plan):
        progress.add(_record(spec, True), node="127.0.0.2" if index % 4 else "127.0.0.3")
    assert progress.node_rates() == "127.0.0.3 0.2/s 127.0.0.2 0.6/s"
    assert progress.line().endswith(" · 127.0.0.3 0.2/s 127.0.0.2 0.6/s")
    clock[0] = 150.0  # stopping the workers does not lower the final rates
    progress.close()
    lines = stream.getvalue().splitlines()
    assert "  node 127.0.0.2: 6 episodes · 0.60/s" in lines
    assert "  node 127.0.0.3: 2 episodes · 0.20/s" in lines
