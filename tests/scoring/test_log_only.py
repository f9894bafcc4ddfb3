"""`chaosproxy score` on a run directory with calls.jsonl only (what `chaosproxy up` writes):
what the log supports, computed by hand here, and clear words for what it cannot."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import CONFIG_FILE, EPISODES_FILE, TASKS_FILE, RunConfig, RunDirError
from chaosproxy.report.fmt import MAX_WIDTH
from chaosproxy.scoring import score_runs

PROFILE = {"failure_rate": 0.2, "weights": {"ServerError": 1.0, "ModelRateLimit": 1.0}}


def _up_dir(run: Any, config: bool = True) -> Path:
    """Two episodes' calls, then the files `up` does not write are taken away."""
    # ep000: a 503 on search, the same search again comes back clean (recovered, one retry);
    # a 429 from the model, the next model call clean (recovered). 2 tool, 2 model calls.
    (
        run.episode()
        .call(status=503, fault="ServerError")
        .call()
        .model(status=429, fault="ModelRateLimit")
        .model()
    )
    # ep001: SchemaDrift (persistent: recovered only if the task succeeded, unknown here),
    # then a clean call; one model call. 2 tool, 1 model call.
    run.episode().call(fault="SchemaDrift").call(tool="book").model()
    path = run.build()
    for name in (EPISODES_FILE, TASKS_FILE):
        (path / name).unlink()
    if config:
        up = RunConfig(kind="up", seed=7, created_at=1.0, versions={}, profiles={"flaky": PROFILE})
        (path / CONFIG_FILE).write_text(up.model_dump_json(), encoding="utf-8")
    else:
        (path / CONFIG_FILE).unlink()
    return path


def test_score_reports_what_the_log_supports(run: Any) -> None:
    path = _up_dir(run)
    # the width a pipe gets (an xdist worker printed at 80 columns), so no line below is wrapped
    result = CliRunner().invoke(main, ["score", str(path)], env={"COLUMNS": str(MAX_WIDTH)})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "calls.jsonl only, no episodes.jsonl (kind up): 2 episodes, 4 tool calls, 3 model" in out
    assert "SR, FRR, PEI, pass^k and the tier need episodes with verdicts" in out
    assert "SR [95% CI]" not in out  # no headline table of unmeasurable numbers
    data = json.loads((path / "results.json").read_text())
    [log] = data["log_only"]
    assert log["profile"] == "flaky" and data["groups"] == []
    assert [
        (e["episode"], e["tool_calls"], e["model_calls"], e["faults"], e["model_faults"])
        for e in log["episodes"]
    ] == [("ep000", 2, 2, 1, 1), ("ep001", 2, 1, 1, 0)]
    assert [(e["recovered"], e["retries"]) for e in log["episodes"]] == [(2, 1), (0, 0)]
    d = log["delivery"]
    # tool calls: 2 of 4 carried a delivered fault (ServerError, SchemaDrift): 0.5, Wilson
    # [0.150, 0.850]; the profile weights a tool fault, so its rate is 0.2
    assert (d["tool_calls"], d["delivered"], d["drawn"], d["nominal_rate"]) == (4, 2, 2, 0.2)
    assert d["realised_rate"]["value"] == 0.5
    assert "0.500 [0.150, 0.850]" in out
    # model calls: 1 of 3, against 0.2 (ModelRateLimit's share of the model weights: all)
    m = d["model"]
    assert (m["model_calls"], m["delivered"], m["nominal_rate"]) == (3, 1, 0.2)
    assert m["realised_rate"]["value"] == pytest.approx(1 / 3)
    # recovery: ServerError 1 of 1 (retry rule, Wilson [0.21, 1.00]); SchemaDrift is judged
    # by the task's success: n/a without verdicts, and so the all row
    rows = {r["fault"]: r for r in log["recovery"]}
    assert rows["ServerError"]["recovered"]["value"] == 1.0
    assert rows["ServerError"]["recovered"]["low"] == pytest.approx(0.2065, abs=1e-4)
    assert rows["SchemaDrift"]["recovered"]["value"] is None
    assert rows["SchemaDrift"]["encountered"] == 1 and rows["SchemaDrift"]["rule"] == "adapt"
    assert log["recovery_all"]["recovered"]["value"] is None
    [model] = log["model_recovery"]
    assert (model["fault"], model["encountered"], model["recovered"]["value"]) == (
        "ModelRateLimit",
        1,
        1.0,
    )
    assert "ModelRateLimit" in out and "(model)" in out
    flowing = " ".join(out.split())  # the notes wrap at 100 columns
    assert "a profile set later through the control API is not recorded" in flowing


def test_without_config_the_seed_comes_from_the_log(run: Any) -> None:
    path = _up_dir(run, config=False)
    results = score_runs([path]).results
    [log] = results.log_only
    assert results.runs[0].seed == 7 and log.profile is None
    assert log.delivery.nominal_rate is None  # no profile recorded: n/a, not 0


def test_neither_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=r"episodes.jsonl: missing, and so is calls.jsonl"):
        score_runs([tmp_path])
    result = CliRunner().invoke(main, ["score", str(tmp_path)])
    assert result.exit_code == 1 and "is this a run directory?" in result.output


def test_report_says_it_needs_episodes(run: Any) -> None:
    path = _up_dir(run)
    result = CliRunner().invoke(main, ["report", str(path)])
    assert result.exit_code == 1
    assert "calls.jsonl but no episodes.jsonl" in result.output
    assert f"chaosproxy score {path}" in result.output
    assert not (path / "report.html").exists()


def _start_up(args: list[str], run_dir: Path) -> tuple[subprocess.Popen[str], str]:
    cli = [sys.executable, "-c", "from chaosproxy.cli import main; main()", "up"]
    process = subprocess.Popen(
        [*cli, "--port", "0", "--run-dir", str(run_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.match(r"chaosproxy (http://127\.0\.0\.1:\d+)", line)
    if match is None:
        process.kill()
        raise AssertionError(f"unexpected first line {line!r}: {process.communicate()[1]}")
    return process, match.group(1)


@pytest.mark.timeout(90)
def test_a_real_up_session_scores(tmp_path: Path) -> None:
    """`chaosproxy up` with a profile that fails every tool call with a 5xx, two identical
    calls from one episode, then `chaosproxy score` on its directory."""
    profile = tmp_path / "always-503.yaml"
    profile.write_text("name: always-503\nfailure_rate: 1.0\nweights: {ServerError: 1.0}\n")
    run_dir = tmp_path / "up"
    process, url = _start_up(["--profile", str(profile), "--domains", "travel"], run_dir)
    try:
        with httpx.Client(timeout=10) as client:
            for _ in range(2):
                reply = client.post(
                    f"{url}/e/u1/travel/tools/escalate_to_human", json={"reason": "test"}
                )
                assert reply.status_code >= 500, reply.text  # a ServerError: 500/502/503
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    result = CliRunner().invoke(main, ["score", str(run_dir)])
    assert result.exit_code == 0, result.output
    [log] = json.loads((run_dir / "results.json").read_text())["log_only"]
    # 2 tool calls, both ServerError: rate 2/2 = 1.000, Wilson [0.342, 1.000], against
    # the profile's 1.000; none recovered (no later clean call): 0/2, Wilson [0.000, 0.658];
    # the second call repeats the failed first: one retry
    assert [
        (e["episode"], e["tool_calls"], e["faults"], e["retries"]) for e in log["episodes"]
    ] == [("u1", 2, 2, 1)]
    assert "1.000 [0.342, 1.000]" in result.output
    [row] = log["recovery"]
    assert (row["fault"], row["encountered"], row["recovered"]["value"]) == ("ServerError", 2, 0.0)
    assert row["recovered"]["high"] == pytest.approx(0.6576, abs=1e-4)
    assert log["profile"] == "always-503" and log["kind"] == "up"
