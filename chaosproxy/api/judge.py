"""Judging episodes under `chaosproxy up`: an episode that names a built-in task starts at
that task's initial state, and a verdict request runs the task's verifier and records the
episode in RUN_DIR/episodes.jsonl, so `chaosproxy score` of an `up` directory reports SR,
FRR and pass^k for those episodes, as it does for `run`.

The control API (chaosproxy/proxy/control.py) calls this through its `EpisodeJudge`
protocol, on the proxy's event loop: everything here is async and talks to the services'
oracles directly (never through the proxy), with the operator's oracle token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx

from chaosproxy.api.errors import ChaosError
from chaosproxy.api.verdict import Verdict, find_task, judge, non_idempotent_tools
from chaosproxy.domains.kit import Journal
from chaosproxy.proxy.control import JudgeError
from chaosproxy.records import (
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    TASKS_FILE,
    EpisodeRecord,
    TaskMeta,
    append_jsonl,
)


@dataclass
class _Started:
    task_id: str
    domain: str
    agent: str
    profile: str
    key: str
    started_at: float
    trial: int


@dataclass
class UpJudge:
    """Starts episodes at a task's initial state and records their verdicts (once each)."""

    run_dir: Path
    service_urls: dict[str, str]
    oracle_headers: dict[str, str]
    seed: int
    started: dict[str, _Started] = field(default_factory=dict)
    recorded: set[str] = field(default_factory=set)
    trials: dict[tuple[str, str, str], int] = field(default_factory=dict)
    tasks_written: set[str] = field(default_factory=set)

    async def _oracle(self, domain: str, method: str, path: str, body: object = None) -> object:
        url = f"{self.service_urls[domain]}/_oracle{path}"
        async with httpx.AsyncClient(timeout=30.0) as client:
            try:
                reply = await client.request(method, url, json=body, headers=self.oracle_headers)
            except httpx.HTTPError as failed:
                raise JudgeError(502, f"the {domain} service's oracle: {failed!r}") from failed
        if reply.status_code == 404:
            raise JudgeError(409, f"{domain} holds no state for this episode: {reply.text[:200]}")
        if not reply.is_success:
            raise JudgeError(502, f"{method} {url}: HTTP {reply.status_code}: {reply.text[:300]}")
        return reply.json()

    async def start(
        self, episode: str, task_id: str, agent: str | None, profile: str, key: str
    ) -> dict[str, object]:
        """Reset the task's domain to its initial state in this episode; the task's text
        and plan length go back to the operator, who hands the text to the agent."""
        try:
            task = find_task(task_id)
        except ChaosError as unknown:
            raise JudgeError(400, str(unknown), field="task") from None
        if task.domain not in self.service_urls:
            served = ", ".join(sorted(self.service_urls)) or "none"
            raise JudgeError(
                400,
                f"task {task_id!r} is in domain {task.domain!r}, which this proxy does not "
                f"serve (it serves {served})",
                field="task",
            )
        path = f"/episodes/{quote(episode, safe='')}/reset"
        await self._oracle(task.domain, "POST", path, {"task_id": task.id})
        name = agent or "up"
        unit = (name, task.id, profile)
        self.trials[unit] = self.trials.get(unit, 0) + 1
        self.started[episode] = _Started(
            task.id, task.domain, name, profile, key, time.time(), self.trials[unit]
        )
        self.recorded.discard(episode)
        return {
            "task": task.id,
            "domain": task.domain,
            "text": task.description,
            "l_min": task.l_min,
        }

    async def verdict(self, episode: str) -> dict[str, object]:
        """The verifier on the episode's journal; recorded in episodes.jsonl the first time."""
        begun = self.started.get(episode)
        if begun is None:
            raise JudgeError(
                409,
                f"episode {episode!r} named no task: PUT /_chaos/episodes/{episode} with "
                '{"task": TASK_ID} first',
            )
        path = f"/episodes/{quote(episode, safe='')}/journal"
        journal = Journal.model_validate(await self._oracle(begun.domain, "GET", path))
        task = find_task(begun.task_id)
        judged = judge(task, journal)
        recorded = episode not in self.recorded
        if recorded:
            self._record(episode, begun, journal, judged, non_idempotent_tools(begun.domain))
            self.recorded.add(episode)
        return {
            "episode": episode,
            "task": task.id,
            "success": judged.success,
            "t_success": judged.t_success,
            "escalated": judged.escalated,
            "recorded": recorded,
        }

    def _record(
        self,
        episode: str,
        begun: _Started,
        journal: Journal,
        judged: Verdict,
        non_idempotent: list[str],
    ) -> None:
        task = find_task(begun.task_id)
        if task.id not in self.tasks_written:
            append_jsonl(self.run_dir / TASKS_FILE, TaskMeta.model_validate(task.metadata()))
            self.tasks_written.add(task.id)
        folder = self.run_dir / EPISODE_DIR / episode
        folder.mkdir(parents=True, exist_ok=True)
        (folder / JOURNAL_FILE).write_text(journal.model_dump_json(indent=1), encoding="utf-8")
        transports = {entry.transport for entry in journal.entries}
        record = EpisodeRecord(
            episode=episode,
            episode_key=begun.key,
            task_id=task.id,
            domain=task.domain,
            epsilon=0.0,
            profile=begun.profile,
            trial=begun.trial,
            agent=begun.agent,
            transport="mcp" if "mcp" in transports else "rest",
            seed=self.seed,
            outcome="completed",
            success=judged.success,
            t_success=judged.t_success,
            escalated=judged.escalated,
            started_at=begun.started_at,
            duration_s=round(time.time() - begun.started_at, 4),
            task_text=task.description,
            goal_held_initially=judged.held_initially,
            goal_checks=judged.checks,
            non_idempotent_tools=non_idempotent,
        )
        append_jsonl(self.run_dir / EPISODES_FILE, record)
