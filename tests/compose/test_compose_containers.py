"""docker-compose.yml in real containers: a small grid driven through the proxy container.

The container tier: runs only with CHAOSPROXY_COMPOSE_TIER=1 (`bash scripts/compose_env.sh test`
builds the images and sets it). Under CI=true with the tier on, containers that cannot start
fail the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from compose_file import COMPOSE
from podman_env import MYAPI, PodmanCompose, missing_requirement

TOKENS = {"CHAOSPROXY_CONTROL_TOKEN": "control-ct", "CHAOSPROXY_ORACLE_TOKEN": "oracle-ct"}
TASKS = "travel-0[1-4]*"

pytestmark = pytest.mark.skipif(
    os.environ.get("CHAOSPROXY_COMPOSE_TIER") != "1",
    reason="container tier: set CHAOSPROXY_COMPOSE_TIER=1 (bash scripts/compose_env.sh test)",
)


def volumes() -> set[str]:
    out = subprocess.run(
        ["podman", "volume", "ls", "-q"], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


@pytest.mark.timeout(480)
def test_a_grid_runs_through_the_containers_and_down_leaves_nothing(tmp_path: Path) -> None:
    reason = missing_requirement()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CHAOSPROXY_COMPOSE_TIER=1 under CI, but {reason}")
        pytest.skip(reason)
    before = volumes()
    # The base file plus the documented example of a user's own REST API behind the proxy.
    env = PodmanCompose(runs=tmp_path / "runs", tokens=TOKENS, files=[COMPOSE, MYAPI])
    try:
        env.up()
        travel = f"http://127.0.0.1:{env.ports['8808']}"
        proxy = f"http://127.0.0.1:{env.ports['8700']}"
        control = f"http://127.0.0.1:{env.ports['8701']}"
        out = tmp_path / "out"
        run = subprocess.run(
            [
                str(Path(sys.executable).parent / "chaosproxy"),
                "run",
                "--agent",
                "robust",
                "--profile",
                "lambda0.2",
                "--domains",
                "travel",
                "--tasks",
                TASKS,
                "--trials",
                "1",
                "--services",
                f"travel={travel}",
                "--proxy",
                proxy,
                "--control",
                control,
                "--proxy-log",
                str(env.runs / "proxy" / "calls.jsonl"),
                "--out",
                str(out),
            ],
            env={**os.environ, **TOKENS},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

        # The user's own API, reached by service name from the proxy container.
        replies = [httpx.get(f"{proxy}/e/myapi-check/myapi/items/1", timeout=30) for _ in range(10)]
        assert any(r.status_code == 200 and r.json()["name"] == "kettle" for r in replies), [
            (r.status_code, r.text[:200]) for r in replies
        ]

        # The oracle needs its token: the runner sent it, a caller without it is refused.
        assert httpx.get(f"{travel}/_oracle/hints", timeout=10).status_code == 401
        granted = httpx.get(
            f"{travel}/_oracle/hints",
            headers={"Authorization": f"Bearer {TOKENS['CHAOSPROXY_ORACLE_TOKEN']}"},
            timeout=10,
        )
        assert granted.status_code == 200

        names = env.containers()
        assert len(names) == 11, names  # nine domain services, myapi, the proxy; not the agent
        for name in names:
            inspect = subprocess.run(
                ["podman", "inspect", name, "--format", "{{json .NetworkSettings.Ports}}"],
                capture_output=True,
                text=True,
                check=True,
            )
            published = json.loads(inspect.stdout).values()
            bindings = [b for per_port in published for b in per_port or []]
            assert bindings and {b["HostIp"] for b in bindings} == {"127.0.0.1"}, (name, bindings)
            uid = subprocess.run(
                ["podman", "exec", name, "id", "-u"], capture_output=True, text=True, check=True
            )
            assert uid.stdout.strip() == "10001", f"{name} runs as uid {uid.stdout.strip()}"
    finally:
        down = env.down()

    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 4
    assert all(episode["error"] is None for episode in episodes), episodes
    assert all(isinstance(episode["success"], bool) for episode in episodes)
    assert {episode["domain"] for episode in episodes} == {"travel"}

    # The proxy container wrote its log on the host volume; faults were drawn and delivered.
    proxy_calls = [
        json.loads(line) for line in (env.runs / "proxy" / "calls.jsonl").read_text().splitlines()
    ]
    travel = [call for call in proxy_calls if call["domain"] == "travel"]
    faulted = [call for call in travel if call["fault"] and call["fault_delivered"]]
    assert faulted, "no fault was injected by the proxy container"
    ours = {episode["episode"] for episode in episodes}
    assert {call["episode"] for call in faulted} <= ours
    assert any(call["domain"] == "myapi" for call in proxy_calls), "myapi calls not logged"
    copied = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert {call["episode"] for call in copied} == ours

    assert down.returncode == 0, down.stdout[-2000:] + down.stderr[-2000:]
    assert env.leftovers() == {"containers": [], "pods": [], "networks": []}
    assert volumes() <= before, f"anonymous volumes left: {volumes() - before}"
