"""docker-compose.yml's commands, as written, run as local processes: one episode end to end.

Every domain service, then the proxy, then the example agent, each started from its
`command:` in the compose file (see compose_file.py for the only things mapped), with the
compose file's own healthchecks deciding when each is up.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

import pytest
from compose_file import LocalCompose

TOKENS = {"CHAOSPROXY_CONTROL_TOKEN": "control-secret", "CHAOSPROXY_ORACLE_TOKEN": "oracle-secret"}


def wait_healthy(
    compose: LocalCompose, name: str, process: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{name} exited {process.returncode}: {log.read_text()[-2000:]}")
        if compose.healthy(name):
            return
        time.sleep(0.5)
    raise AssertionError(f"{name} never became healthy: {log.read_text()[-2000:]}")


@pytest.mark.timeout(400)
def test_the_compose_environment_runs_an_episode_end_to_end(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    compose = LocalCompose(runs=runs, env={**TOKENS, "CHAOSPROXY_SEED": "5"})
    services = compose.data["services"]
    domains = [name for name in services if name not in {"proxy", "agent"}]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        started = {}
        for name in domains:
            log = tmp_path / f"{name}.log"
            started[name] = (compose.start(name, log), log)
            processes.append(started[name][0])
        for name, (process, log) in started.items():
            wait_healthy(compose, name, process, log)
        proxy_log = tmp_path / "proxy.log"
        proxy = compose.start("proxy", proxy_log)
        processes.append(proxy)
        wait_healthy(compose, "proxy", proxy, proxy_log)

        agent = subprocess.run(
            compose.argv(services["agent"]["command"]),
            env=compose.environment("agent"),
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert agent.returncode == 0, agent.stdout[-3000:] + agent.stderr[-3000:]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(15)
            if process.poll() is None:
                process.kill()

    out = runs / "agent-example"
    (episode,) = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert episode["task_id"] == "travel-01-book-named-flight"
    assert episode["error"] is None, episode["error"]
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert calls, "the run's calls were not copied from the proxy's log"
    assert {call["episode"] for call in calls} == {episode["episode"]}
    assert {call["domain"] for call in calls} == {"travel"}
    assert any(call["kind"] == "tool_call" for call in calls)
    proxy_calls = (runs / "proxy" / "calls.jsonl").read_text().splitlines()
    assert len(proxy_calls) == len(calls)
    config = json.loads((runs / "proxy" / "config.json").read_text())
    assert config["seed"] == 5
    assert sorted(config["settings"]["services"]) == sorted(domains)
    assert "report" in agent.stdout or "episodes recorded" in agent.stdout
