"""`chaosproxy score` on one run, two runs, and a broken run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import CALLS_FILE


def _run(builder: Any, ok: list[bool], agent: str = "retry") -> Path:
    for success in ok:
        builder.episode(profile="lambda0.0", success=True, agent=agent).call()
        (
            builder.episode(profile="lambda0.2", success=success, t_success=2, agent=agent)
            .call(status=503, fault="ServerError")
            .call()
        )
    builder.episode(profile="lambda0.2", outcome="agent_crash", agent=agent)
    return builder.build()


def test_score_prints_the_headline_and_writes_files(run: Any) -> None:
    path = _run(run, [True, True, False, False])
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "9 episodes, 8 evaluable; 1 infrastructure (1 agent_crash) counted apart" in out
    assert "4/5" in out and "0.50 [0.15, 0.85]" in out  # SR at λ0.2 with its Wilson interval
    assert "Δ_rel [95% CI]" in out and "+0.50 [" in out  # the verdict table
    assert "ServerError" in out and "n/a" in out  # FRR at λ0 is n/a, not 0
    data = json.loads((path / "results.json").read_text())
    assert data["schema_id"] == "chaosproxy.results/1"
    assert data["metrics_version"] == 2  # issue 25: definitions changed (docs/metrics.md)
    assert (path / "episodes.csv").read_text().count("\n") == 10


def test_score_two_runs_compares_them(tmp_path: Path, run: Any, run_at: Any) -> None:
    a = _run(run, [True, True, True, True])
    b = _run(run_at(tmp_path / "other"), [True, False, False, False])
    combined = tmp_path / "combined.json"
    result = CliRunner().invoke(main, ["score", str(a), str(b), "--json", str(combined)])
    assert result.exit_code == 0, result.output
    assert "retry@run" in result.output and "retry@other" in result.output
    data = json.loads(combined.read_text())
    sr = next(
        c
        for c in data["comparisons"]
        if c["metric"] == "SR" and c["a"] != c["b"] and c["profile_a"] == "lambda0.2"
    )
    assert sr["diff"]["value"] == 0.75 and sr["diff"]["method"] == "newcombe"
    assert (a / "results.json").exists() and (b / "results.json").exists()


def test_score_a_bad_line_names_file_and_line(run: Any) -> None:
    path = _run(run, [True])
    with (path / CALLS_FILE).open("a") as handle:
        handle.write("garbage\n{}\n")
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == 1
    assert f"{CALLS_FILE}:4: not valid JSON" in result.output


def test_two_runs_with_long_names_print_every_number_and_name_whole(
    tmp_path: Path, run_at: Any
) -> None:
    """What `chaosproxy score runs/quickstart-*` printed when the glob also caught the -mock
    run: agents labelled agent@run, and rich cut numbers and names short (`0.…`, `robu…`)."""
    paths = []
    for name in ("quickstart-20261124-075500", "quickstart-20261124-075500-mock"):
        builder = run_at(tmp_path / name)
        for success in (True, True, False, False):
            for profile in ("lambda0.0", "adversarial-injection"):
                builder.episode(profile=profile, success=success, agent="robust").call()
        paths.append(str(builder.build()))
    result = CliRunner().invoke(main, ["score", *paths])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "…" not in out
    assert max(len(line) for line in out.splitlines() if "wrote" not in line) <= 100
    # SR 2/4 = 0.50, Wilson [0.15, 0.85], whole in every row: 2 runs × 2 profiles
    assert out.count("0.50 [0.15, 0.85]") >= 4
    # the labels fold onto a second line rather than lose their ends
    joined = "".join(line.split()[0] if line.strip() else "" for line in out.splitlines())
    assert "robust@quickstart-20261124-075500-mock" in joined
