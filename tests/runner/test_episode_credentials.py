"""Issue 26 #4: an agent acts only in its own episode.

Episode ids are predictable (`{agent}~{task}~e{ε}~{profile}~t{trial}`), so under `run`, the
pytest plugin and `up --episode-credentials` an episode is reached only through an
unguessable credential in its URLs, issued when it is configured and revoked at its end.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from chaosproxy import Environment
from chaosproxy.records import CALLS_FILE, EPISODE_DIR, EPISODES_FILE, EpisodeRecord, read_jsonl

TASK = "travel-14-escalate-no-flight"

ATTACKER = r"""
import json, os, urllib.error, urllib.request

own = os.environ["CHAOS_REST_BASE"]
proxy = own.split("/e/")[0]
episode = os.environ["CHAOS_EPISODE"]
sibling = episode[:-1] + ("2" if episode.endswith("1") else "1")

def post(url, headers=None):
    request = urllib.request.Request(url, data=json.dumps({"reason": "x"}).encode(),
        method="POST", headers={"Content-Type": "application/json", **(headers or {})})
    try:
        return urllib.request.urlopen(request).status
    except urllib.error.HTTPError as error:
        return error.code

tool = "/travel/tools/escalate_to_human"
print(json.dumps({
    "sibling_by_url": post(f"{proxy}/e/{sibling}{tool}"),
    "sibling_by_header": post(f"{proxy}{tool}", {"X-Chaos-Episode": sibling}),
    "default_episode": post(f"{proxy}{tool}"),
    "own": post(own + "/tools/escalate_to_human"),
}))
"""


def test_under_run_an_agent_cannot_write_into_its_sibling_trial(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    script = tmp_path / "attacker.py"
    script.write_text(ATTACKER)
    out = tmp_path / "run"
    run_grid(
        out,
        agents=["attacker"],
        agent_command=f"{sys.executable} {script}",
        domains=["travel"],
        task_patterns=[TASK],
        trials=2,
    )
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert len(records) == 2
    for record in records:
        printed = (out / EPISODE_DIR / record.episode / "stdout.txt").read_text()
        statuses = json.loads(printed)
        assert statuses == {
            "sibling_by_url": 403,
            "sibling_by_header": 403,
            "default_episode": 403,
            "own": 200,
        }, record.episode
        assert record.success is True
    # the log names episodes by their readable ids, and no credential is in it
    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    assert {c["episode"] for c in calls} == {r.episode for r in records}
    for call in calls:
        assert call["path"] == f"/e/{call['episode']}/travel/tools/escalate_to_human"


def test_api_credentials_are_issued_checked_and_revoked(tmp_path: Path) -> None:
    with (
        Environment(
            domains=["travel"], profile="lambda0.0", run_dir=tmp_path, episode_credentials=True
        ) as env,
        httpx.Client() as http,
    ):
        episode = env.episode(task=TASK, id="readable-ep")
        url = episode.url()
        credential = url.split("/e/")[1].split("/")[0]
        assert credential != "readable-ep" and len(credential) >= 32
        tool = "/tools/escalate_to_human"
        assert http.post(url + tool, json={"reason": "mine"}).status_code == 200
        by_id = http.post(f"{env.url}/e/readable-ep/travel{tool}", json={"reason": "x"})
        assert by_id.status_code == 403 and "credential" in by_id.json()["error"]["message"]
        guessed = http.post(f"{env.url}/e/k{'0' * 36}/travel{tool}", json={"reason": "x"})
        assert guessed.status_code == 403
        # a client that can only set a header (the forward proxy's) sends the credential
        header = http.post(
            f"{env.url}/travel{tool}",
            json={"reason": "header"},
            headers={"X-Chaos-Episode": credential},
        )
        assert header.status_code == 200
        assert episode.verdict().success
        calls = episode.calls()
        assert [c.episode for c in calls] == ["readable-ep", "readable-ep"]
        assert [c.path for c in calls] == [
            "/e/readable-ep/travel/tools/escalate_to_human",
            "/travel/tools/escalate_to_human",
        ]
        episode.end()
        assert http.post(url + tool, json={"reason": "late"}).status_code == 403

        # `up --episode-credentials`: the operator's PUT answers the credential
        control = {"Authorization": f"Bearer {env.token}"}
        put = http.put(f"{env.control_url}/_chaos/episodes/mine", json={}, headers=control)
        answer = put.json()
        assert put.status_code == 200 and answer["prefix"] == f"/e/{answer['credential']}"
        through = http.post(f"{env.url}{answer['prefix']}/travel{tool}", json={"reason": "y"})
        assert through.status_code == 200
        http.delete(f"{env.control_url}/_chaos/episodes/mine", headers=control)
        revoked = http.post(f"{env.url}{answer['prefix']}/travel{tool}", json={"reason": "z"})
        assert revoked.status_code == 403


def test_without_credentials_up_keeps_user_chosen_episode_ids(tmp_path: Path) -> None:
    with Environment(domains=["travel"], profile="lambda0.0", run_dir=tmp_path) as env:
        reply = httpx.post(
            f"{env.url}/e/chosen/travel/tools/escalate_to_human", json={"reason": "r"}
        )
        assert reply.status_code == 200
        assert env.episode(id="named").url().endswith("/e/named/travel")


def test_up_with_episode_credentials_refuses_chosen_ids(tmp_path: Path) -> None:
    import os
    import re
    import subprocess

    process = subprocess.Popen(
        [sys.executable, "-c", "from chaosproxy.cli import main; main()", "up", "--port", "0",
         "--run-dir", str(tmp_path), "--domains", "weather", "--profile", "lambda0.0",
         "--episode-credentials"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        match = re.match(r"chaosproxy (http://127\.0\.0\.1:\d+)", process.stdout.readline())
        assert match, "up did not start"
        proxy = match.group(1)
        access = json.loads((tmp_path / "control.json").read_text())
        control = {"Authorization": f"Bearer {access['token']}"}
        tool = "/weather/tools/list_cities"
        assert httpx.post(f"{proxy}/e/mine{tool}", json={}).status_code == 403
        put = httpx.put(f"{access['url']}/_chaos/episodes/mine", json={}, headers=control)
        assert httpx.post(f"{proxy}{put.json()['prefix']}{tool}", json={}).status_code == 200
        assert httpx.post(f"{proxy}/e/mine{tool}", json={}).status_code == 403
    finally:
        process.terminate()
        process.wait(timeout=30)
