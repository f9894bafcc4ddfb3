"""Issue 26 #3: an `--agent-cmd` agent must not reach the operator's tokens.

Each test performs the attack: the agent dumps its own environment and every
/proc/<pid>/environ it can read (the services child's among them) and the test looks for
the tokens in what it printed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chaosproxy.agents.base import AgentContext, Endpoints

from chaosproxy.records import EPISODE_DIR, EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.runner.command_agent import AgentIsolation, inherited_environment, run_command

TASK = "travel-14-escalate-no-flight"
ORACLE_SECRET = "oracle-secret-5f1d9c"
CONTROL_SECRET = "control-secret-77ab02"

SNOOP = """#!/bin/sh
echo "== env"
env
echo "== proc"
for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f" 2>/dev/null; done
echo "== done"
"""


@pytest.fixture
def snoop_agent() -> Iterator[str]:
    """The attacking agent as a shell script any user can run (outside root's tmp dirs)."""
    folder = Path(tempfile.mkdtemp(prefix="chaos-snoop-"))
    folder.chmod(0o755)
    script = folder / "snoop.sh"
    script.write_text(SNOOP)
    script.chmod(0o755)
    try:
        yield f"/bin/sh {script}"
    finally:
        script.unlink()
        folder.rmdir()


@pytest.fixture
def operator_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAOSPROXY_ORACLE_TOKEN", ORACLE_SECRET)
    monkeypatch.setenv("CHAOSPROXY_CONTROL_TOKEN", CONTROL_SECRET)
    monkeypatch.setenv("MY_COPY_OF_THE_TOKEN", f"Bearer {ORACLE_SECRET}")
    monkeypatch.setenv("CHAOS_TEST_MARKER", "kept")


def agent_output(out: Path) -> tuple[EpisodeRecord, str]:
    (record,) = read_jsonl(out / EPISODES_FILE, EpisodeRecord)
    return record, (out / EPISODE_DIR / record.episode / "stdout.txt").read_text()


def test_the_agent_inherits_no_token_by_any_name_nor_finds_one_in_proc(
    tmp_path: Path,
    run_grid: Callable[..., Any],
    snoop_agent: str,
    operator_tokens: None,
) -> None:
    out = tmp_path / "run"
    run_grid(
        out, agents=["snoop"], agent_command=snoop_agent, domains=["travel"], task_patterns=[TASK]
    )
    record, printed = agent_output(out)
    assert record.outcome == "completed", record.error
    own = printed.split("== proc")[0]
    assert "CHAOS_TEST_MARKER=kept" in own and "CHAOS_REST_BASE=" in own
    assert "CHAOSPROXY_" not in own and "MY_COPY_OF_THE_TOKEN" not in own
    # the services child got the oracle token on its stdin, not in its environment
    assert ORACLE_SECRET not in printed and CONTROL_SECRET not in printed


async def test_agent_env_only_gives_a_clean_environment(
    tmp_path: Path, snoop_agent: str, operator_tokens: None
) -> None:
    context = AgentContext(
        episode="ep",
        domain="travel",
        task_id=TASK,
        task_text="t",
        endpoints={"travel": Endpoints("http://127.0.0.1:9/travel", "o", "m")},
        transport="rest",
        seed=1,
    )
    isolation = AgentIsolation(env_only=("PATH", "CHAOSPROXY_ORACLE_TOKEN"))
    outcome = await run_command(snoop_agent, context, tmp_path, isolation)
    assert outcome.exit_code == 0
    own = (tmp_path / "stdout.txt").read_text().split("== proc")[0].split("== env")[1]
    names = {line.split("=", 1)[0] for line in own.splitlines() if "=" in line}
    # only the named variables and the CHAOS_* contract (sh adds PWD itself); a named
    # CHAOSPROXY_ variable is passed, since the operator asked for it by name
    contract = {n for n in names if n.startswith("CHAOS_")}
    assert "CHAOS_TASK_ID" in contract and "CHAOS_TEST_MARKER" not in contract
    assert names - {"PWD"} == {"PATH", "CHAOSPROXY_ORACLE_TOKEN", *contract}


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run the agent as another user")
def test_as_root_agent_user_keeps_the_agent_out_of_the_operators_processes(
    tmp_path: Path, run_grid: Callable[..., Any], snoop_agent: str, operator_tokens: None
) -> None:
    out = tmp_path / "user"
    run_grid(
        out,
        agents=["snoop"],
        agent_command=snoop_agent + "; id -u; cat /proc/1/environ && echo READ-PID-1; true",
        domains=["travel"],
        task_patterns=[TASK],
        agent_isolation=AgentIsolation(user="nobody"),
    )
    record, printed = agent_output(out)
    assert record.outcome == "completed", record.error
    lines = printed.splitlines()
    assert "65534" in lines and "READ-PID-1" not in printed
    assert ORACLE_SECRET not in printed and CONTROL_SECRET not in printed
    # a process of another uid: not one root-owned environ was readable
    proc = printed.split("== proc")[1].split("== done")[0]
    assert "HOME=/root" not in proc


def test_an_unknown_agent_user_is_refused_before_the_run(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    from chaosproxy.runner.run import RunError

    with pytest.raises(RunError, match="no such user"):
        run_grid(
            tmp_path / "x",
            agents=["a"],
            agent_command="true",
            domains=["travel"],
            task_patterns=[TASK],
            agent_isolation=AgentIsolation(user="no-such-user-chaos"),
        )
    assert not (tmp_path / "x").exists()


def test_inherited_environment_drops_operator_variables_and_copies_of_their_values() -> None:
    source = {
        "PATH": "/bin",
        "CHAOSPROXY_ORACLE_TOKEN": "s3cret",
        "CHAOSPROXY_EMPTY": "",
        "COPY": "x s3cret y",
        "OPENAI_API_KEY": "sk-agent",
    }
    assert inherited_environment(source, AgentIsolation()) == {
        "PATH": "/bin",
        "OPENAI_API_KEY": "sk-agent",
    }
    assert inherited_environment(source, AgentIsolation(env_only=("COPY", "NOPE"))) == {
        "COPY": "x s3cret y"
    }
