"""`--agent-cmd`: any program, any language, through environment variables and exit codes."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import CALLS_FILE, EPISODE_DIR, EPISODES_FILE, EpisodeRecord, read_jsonl

REPO = Path(__file__).resolve().parents[2]
NODE_AGENT = REPO / "agents" / "examples" / "escalating_agent.mjs"
ESCALATION_TASK = "travel-14-escalate-no-flight"
BOOKING_TASK = "travel-01-book-named-flight"


def records(out: Path) -> dict[str, EpisodeRecord]:
    return {r.task_id: r for r in read_jsonl(out / EPISODES_FILE, EpisodeRecord)}


@pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "node_modules/@modelcontextprotocol/sdk").exists(),
    reason="node or the MCP SDK is not installed (scripts/install.sh runs npm ci)",
)
def test_node_agent_over_mcp(tmp_path: Path, run_grid: Callable[..., Any]) -> None:
    out = tmp_path / "node"
    run_grid(
        out,
        agents=["node-escalate"],
        agent_command=f"node {NODE_AGENT}",
        domains=["travel"],
        task_patterns=[ESCALATION_TASK, BOOKING_TASK],
        transport="mcp",
    )
    found = records(out)
    assert {r.outcome for r in found.values()} == {"completed"}
    assert all(r.exit_code == 0 and r.escalated for r in found.values())
    assert found[ESCALATION_TASK].success is True
    assert found[BOOKING_TASK].success is False
    stdout = (out / EPISODE_DIR / found[BOOKING_TASK].episode / "stdout.txt").read_text()
    events = [json.loads(line) for line in stdout.splitlines()]
    assert events[0]["event"] == "tools" and "hold_flight" in events[0]["tools"]
    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    steps = [c for c in calls if c["episode"] == found[BOOKING_TASK].episode and c["step"]]
    assert [(c["step"], c["tool"], c["transport"]) for c in steps] == [
        (1, "escalate_to_human", "mcp")
    ]


def python_agent(tmp_path: Path, body: str) -> str:
    script = tmp_path / "agent.py"
    script.write_text(body)
    return f"{sys.executable} {script}"


def test_environment_contract_and_rest_calls(tmp_path: Path, run_grid: Callable[..., Any]) -> None:
    command = python_agent(
        tmp_path,
        "import json, os, urllib.request\n"
        "keys = sorted(k for k in os.environ if k.startswith('CHAOS_'))\n"
        "print(json.dumps({k: os.environ[k] for k in keys}))\n"
        "url = os.environ['CHAOS_REST_BASE'] + '/tools/escalate_to_human'\n"
        "request = urllib.request.Request(url,\n"
        "    data=json.dumps({'reason': 'python agent'}).encode(), method='POST',\n"
        "    headers={'Content-Type': 'application/json'})\n"
        "print(urllib.request.urlopen(request).status)\n",
    )
    out = tmp_path / "py"
    run_grid(
        out,
        agents=["py"],
        agent_command=command,
        domains=["travel"],
        task_patterns=[ESCALATION_TASK],
    )
    record = records(out)[ESCALATION_TASK]
    assert record.outcome == "completed" and record.success is True
    lines = (out / EPISODE_DIR / record.episode / "stdout.txt").read_text().splitlines()
    seen = json.loads(lines[0])
    assert lines[1] == "200"
    assert seen["CHAOS_TASK_ID"] == ESCALATION_TASK and seen["CHAOS_DOMAIN"] == "travel"
    assert seen["CHAOS_TASK"] == record.task_text
    # the episode is reached through its credential, never its guessable id (issue 26 #4)
    assert seen["CHAOS_REST_BASE"].endswith("/travel") and "/e/k" in seen["CHAOS_REST_BASE"]
    assert record.episode not in seen["CHAOS_REST_BASE"]
    assert seen["CHAOS_MCP_URL"] == seen["CHAOS_REST_BASE"] + "/mcp"
    assert set(json.loads(seen["CHAOS_ENDPOINTS"])) == {"travel"}


@pytest.mark.parametrize(
    ("body", "timeout", "outcome", "exit_code"),
    [
        ("import sys; sys.exit(3)\n", 30.0, "agent_crash", 3),
        ("import time; time.sleep(60)\n", 1.5, "timeout", None),
    ],
)
def test_crashes_and_timeouts_are_infrastructure_outcomes(
    tmp_path: Path,
    run_grid: Callable[..., Any],
    body: str,
    timeout: float,
    outcome: str,
    exit_code: int | None,
) -> None:
    out = tmp_path / "bad"
    summary = run_grid(
        out,
        agents=["bad"],
        agent_command=python_agent(tmp_path, body),
        domains=["travel"],
        task_patterns=[BOOKING_TASK],
        timeout_s=timeout,
    )
    assert summary.recorded == 1
    record = records(out)[BOOKING_TASK]
    assert record.outcome == outcome
    if exit_code is not None:
        assert record.exit_code == exit_code
    assert record.duration_s < 30
