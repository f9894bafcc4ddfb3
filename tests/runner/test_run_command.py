"""`chaosproxy run` on the command line: clear errors, and the MCP transport end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import CALLS_FILE, EPISODES_FILE, EpisodeRecord, read_jsonl


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "name an agent"),
        (["--agent", "naive", "--agent-cmd", "true"], "either --agent or --agent-cmd"),
        (["--agent", "genius"], "unknown agent 'genius'"),
        (["--agent", "react"], "--agent react needs --model"),
        (["--agent", "naive", "--epsilon", "1.5"], "outside [0, 1]"),
        (["--agent", "naive", "--profile", "lambda9"], "lambda9"),
        (["--agent", "naive", "--suite", "everything"], "unknown suite 'everything'"),
        (["--agent", "naive", "--domains", "coding"], "not in suite"),
        (["--agent", "naive", "--trials", "0"], "--trials"),
    ],
)
def test_bad_flags_get_a_clear_error(tmp_path: Path, arguments: list[str], message: str) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", *arguments, "--out", str(out), "--no-score"])
    assert result.exit_code != 0
    assert message in result.output
    assert not out.exists(), "a refused run must leave nothing behind to block the next one"


def test_scripted_agents_over_mcp_through_faults(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    """The robust agent over MCP (2025-11-25 sessions) at λ0.3, through the proxy."""
    out = tmp_path / "mcp"
    run_grid(
        out,
        agents=["robust"],
        domains=["travel", "support"],
        task_patterns=["travel-0[1-5]*", "support-0[1-5]*"],
        profiles=["lambda0.3"],
        transport="mcp",
    )
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert len(records) == 10
    assert all(r.outcome == "completed" and r.transport == "mcp" for r in records)
    assert sum(bool(r.success) for r in records) >= 7
    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    tool_calls = [c for c in calls if c["kind"] == "tool_call"]
    assert tool_calls and {c["transport"] for c in tool_calls} == {"mcp"}
    assert {c["rpc_method"] for c in tool_calls} == {"tools/call"}
    assert any(c["fault"] for c in tool_calls)


def test_plans_broken_by_faults_are_agent_failures_not_crashes(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    """Corrupted first calls leave reference solutions with nothing to work on: the agent
    fails the task (completed, success False), and the robust agent re-asks more often."""
    out = tmp_path / "p2"
    run_grid(
        out,
        agents=["naive", "robust"],
        suite="agentprop",
        domains=["medical_records", "weather"],
        profiles=["agentprop-p2"],
        concurrency=16,
    )
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert {r.outcome for r in records} == {"completed"}
    rate = {
        agent: sum(bool(r.success) for r in records if r.agent == agent)
        for agent in ("naive", "robust")
    }
    assert rate["robust"] > rate["naive"]


def test_a_profile_given_as_a_path_runs_like_a_shipped_one(tmp_path: Path) -> None:
    """Issue 13: `--profile dir/x.yaml` put the path's `/` into episode ids (all infra_error)."""
    from chaosproxy.runner.grid import profile_label

    folder = tmp_path / "my profiles"
    folder.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "profiles" / "lambda0.2.yaml"
    profile = folder / "x.yaml"
    profile.write_text(shipped.read_text())
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        ["run", "--agent", "naive", "--suite", "reliabilitybench", "--domains", "travel",
         "--tasks", "travel-01*", "--profile", str(profile), "--epsilon", "0",
         "--out", str(out), "--no-score"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert records and {r.outcome for r in records} == {"completed"}
    assert all("/" not in r.episode for r in records)
    assert profile_label(str(profile)) != profile_label(str(tmp_path / "x.yaml"))
    assert profile_label("lambda0.2") == "lambda0.2"
