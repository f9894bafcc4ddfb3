"""CI gates: `score --fail-under METRIC=VALUE` and regressions between two runs, on run
directories built by hand (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.scoring.gate import GateError, parse_threshold


def _run(builder: Any, successes: int, n: int = 10, profile: str = "lambda0.0") -> Path:
    for index in range(n):
        builder.episode(f"t{index}", success=index < successes, profile=profile, trial=1)
    return Path(builder.build())


@pytest.mark.parametrize(
    ("text", "metric", "minimum", "profile", "k"),
    [
        ("sr=0.9", "sr", 0.9, None, None),
        ("pass^2=0.8", "pass^k", 0.8, None, 2),
        ("FRR@lambda0.2=0.7", "frr", 0.7, "lambda0.2", None),
    ],
)
def test_thresholds_parse(
    text: str, metric: str, minimum: float, profile: str | None, k: int | None
) -> None:
    t = parse_threshold(text)
    assert (t.metric, t.minimum, t.profile, t.k) == (metric, minimum, profile, k)


@pytest.mark.parametrize("text", ["sr", "sr=high", "sr=1.5", "speed=0.2", "pass^0=0.5", "sr=nan"])
def test_bad_thresholds_are_named(text: str) -> None:
    with pytest.raises(GateError, match="--fail-under"):
        parse_threshold(text)


def test_fail_under_exits_1_naming_the_group(run: Any) -> None:
    path = _run(run, successes=4)  # SR 4/10 = 0.4
    below = CliRunner().invoke(main, ["score", "--quiet", str(path), "--fail-under", "sr=0.5"])
    assert below.exit_code == 1
    assert "FAIL sr of retry @ lambda0.0: 0.400 < 0.5" in below.output
    at = CliRunner().invoke(main, ["score", "--quiet", str(path), "--fail-under", "sr=0.4"])
    assert at.exit_code == 0, at.output
    typo = CliRunner().invoke(main, ["score", "--quiet", str(path), "--fail-under", "sr:0.4"])
    assert typo.exit_code == 2 and "METRIC[@PROFILE]=VALUE" in typo.output


def test_a_metric_the_run_cannot_measure_fails_the_gate(run: Any) -> None:
    path = _run(run, successes=10)  # λ0: no fault, FRR n/a
    done = CliRunner().invoke(main, ["score", "--quiet", str(path), "--fail-under", "frr=0.1"])
    assert done.exit_code == 1 and "n/a (not measurable)" in done.output


def test_a_regression_leads_the_comparison_and_fails_the_gate(run_at: Any, tmp_path: Path) -> None:
    before = _run(run_at(tmp_path / "before"), successes=10)
    after = _run(run_at(tmp_path / "after"), successes=2)
    # SR 1.0 → 0.2: Newcombe's interval of 0.8 is [0.44, 0.94] by hand, excluding 0
    done = CliRunner().invoke(
        main, ["score", str(before), str(after), "--fail-on-regression"], env={"COLUMNS": "100"}
    )
    assert done.exit_code == 1
    lines = done.output.splitlines()
    first_table = next(i for i, line in enumerate(lines) if line.startswith("Got worse"))
    assert lines[first_table].rstrip() == "Got worse from before to after"
    assert first_table < next(i for i, line in enumerate(lines) if "evaluable" in line)
    assert "REGRESSED SR of retry @ lambda0.0" in done.output
    better = CliRunner().invoke(
        main, ["score", "--quiet", str(after), str(before), "--fail-on-regression"]
    )
    assert better.exit_code == 0, better.output


def test_json_dash_writes_results_to_stdout_not_a_file(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _run(run, successes=3)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["score", str(path), "--json", "-"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["groups"][0]["sr"]["value"] == pytest.approx(0.3)
    assert not (tmp_path / "-").exists()
