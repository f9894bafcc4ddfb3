"""The `--rpm/--tpm/--provider-retries` flags: where they apply, and clear refusals."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from chaosproxy.cli import main


def test_run_rpm_needs_the_model_to_go_through_the_proxy() -> None:
    result = CliRunner().invoke(main, ["run", "--agent", "react", "--rpm", "60"])
    assert result.exit_code == 2
    assert "--rpm paces model calls in the run's proxy: add --model-via-proxy" in result.output


def test_run_with_services_points_at_up_for_pacing() -> None:
    args = ["run", "--agent", "react", "--model-via-proxy", "--tpm", "1000"]
    result = CliRunner().invoke(main, [*args, "--services", "travel=http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert "chaosproxy up --rpm N --tpm N --provider-retries N" in result.output


def test_flags_are_checked_and_offered_by_up_and_run() -> None:
    result = CliRunner().invoke(main, ["run", "--agent", "react", "--rpm", "0"])
    assert result.exit_code == 2 and "--rpm" in result.output
    for command in ("up", "run"):
        text = CliRunner().invoke(main, [command, "--help"]).output
        assert "--rpm N" in text and "--tpm N" in text and "--provider-retries N" in text


def test_up_refuses_pacing_with_no_provider_to_pace(tmp_path: Path) -> None:
    """Without an `--upstream` no call is a model call relayed to a provider, so the flags
    would do nothing: `up` says so before it starts anything."""
    args = ["up", "--port", "0", "--run-dir", str(tmp_path / "run"), "--rpm", "60"]
    result = CliRunner().invoke(main, [*args, "--provider-retries", "2"])
    assert result.exit_code == 2
    assert "--rpm/--provider-retries applies to model calls relayed to a provider" in result.output
    assert "--upstream NAME=URL" in result.output
    assert not (tmp_path / "run").exists()
