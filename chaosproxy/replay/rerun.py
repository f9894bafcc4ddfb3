"""Re-running one episode in-process: same task, text, agent, seed and draw key, and a
schedule in place of the profile's draws.

`Rerunner` starts one Environment (the episode's domain, a scratch run directory) and
runs the episode as often as asked, each time a fresh attempt of the same episode id, so
the engine sees the same key and the agent the same text; it returns the new episode
record and the calls it made.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from chaosproxy.agents.base import Agent
from chaosproxy.agents.registry import make_agent
from chaosproxy.api import Environment
from chaosproxy.api.environment import find_task
from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.faults.schedule import Schedule, ScheduleMode
from chaosproxy.profiles import load_profile
from chaosproxy.records import CALLS_FILE, CallRecord, EpisodeRecord, read_jsonl
from chaosproxy.runner.episode import EpisodeSettings, new_attempt, run_episode
from chaosproxy.runner.grid import EpisodeSpec
from chaosproxy.runner.perturb import Perturbed
from chaosproxy.runner.run import _EnvironmentAdapter


@dataclass(frozen=True)
class Outcome:
    """One re-run: the episode's record and its calls, in log order."""

    record: EpisodeRecord
    calls: list[CallRecord]

    @property
    def failed(self) -> bool:
        """The agent failed: finished without the task done, crashed or timed out (an
        infrastructure error is not the agent's failure)."""
        if self.record.outcome == "infra_error":
            return False
        return self.record.outcome != "completed" or not self.record.success

    def verdict(self) -> str:
        if self.record.outcome != "completed":
            return f"{self.record.outcome}: {self.record.error or ''}".strip()
        return "success" if self.record.success else "task failed (verifier: goal not met)"


class Rerunner:
    """Runs one recorded episode again, in-process, under any schedule."""

    def __init__(
        self,
        original: EpisodeRecord,
        agent: Agent | None = None,
        run_dir: Path | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.original = original
        self.agent = agent
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if run_dir is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="chaosproxy-rerun-")
            run_dir = Path(self._scratch.name)
        self.run_dir = run_dir
        self.timeout_s = timeout_s
        self.runs = 0
        self._profile = load_profile(original.profile)
        self._env: Environment | None = None
        self._http: httpx.AsyncClient | None = None

    async def __aenter__(self) -> Rerunner:
        self._env = Environment(
            domains=[self.original.domain],
            profile=self._profile,
            seed=self.original.seed,
            run_dir=self.run_dir,
        )
        await self._env.astart()
        self._http = httpx.AsyncClient(timeout=30.0)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._env is not None:
            await self._env.aclose()
        if self._scratch is not None:
            self._scratch.cleanup()

    async def run(
        self,
        schedule: Schedule | None,
        mode: ScheduleMode = "replace",
        attempt: str | None = None,
        original: EpisodeRecord | None = None,
    ) -> Outcome:
        """The episode once more under `schedule` (None: the profile's own draws, as in a
        run); `attempt` (default: fresh) is stamped on
        its record and calls. `original`: another episode of the same domain, seed and
        profile to run instead (its agent by name unless one was given)."""
        assert self._env is not None and self._http is not None, "use `async with`"
        original = original or self.original
        agent = self.agent if self.agent is not None else make_agent(original.agent)
        spec = EpisodeSpec(
            agent=original.agent,
            task_id=original.task_id,
            domain=original.domain,
            epsilon=original.epsilon,
            profile=original.profile,
            trial=original.trial,
        )
        if spec.episode_id != original.episode or spec.key != original.episode_key:
            spec = _Named(
                spec.agent,
                spec.task_id,
                spec.domain,
                spec.epsilon,
                spec.profile,
                spec.trial,
                given_id=original.episode,
                given_key=original.episode_key,
            )
        adapter = _EnvironmentAdapter(self._env, {original.profile: self._profile}, schedule, mode)
        settings = EpisodeSettings(
            self.run_dir, original.seed, original.transport, self.timeout_s, None
        )
        attempt = attempt or new_attempt()
        text = Perturbed(original.task_text, tuple(original.perturbations))
        record = await run_episode(spec, text, agent, adapter, settings, self._http, attempt)
        self.runs += 1
        calls = [
            call
            for call in read_jsonl(self.run_dir / CALLS_FILE, CallRecord)
            if call.episode == original.episode and call.attempt == attempt
        ]
        return Outcome(record, calls)


@dataclass(frozen=True)
class _Named(EpisodeSpec):
    """An episode spec whose id and key are given (an episode of a run whose ids were not
    built by this version's grid)."""

    given_id: str = ""
    given_key: str = ""

    @property
    def key(self) -> str:
        return self.given_key

    @property
    def episode_id(self) -> str:
        return self.given_id


def task_episode(
    agent: str,
    task_id: str,
    profile: str,
    seed: int = DEFAULT_SEED,
    transport: str = "rest",
    trial: int = 1,
) -> EpisodeRecord:
    """The record of a task's episode as `chaosproxy run` would name it (ε 0, the task's
    own text), for re-running it without a run directory: `shrink --task`, `hunt --task`."""
    task = find_task(task_id)
    spec = EpisodeSpec(agent, task.id, task.domain, 0.0, profile, trial)
    return EpisodeRecord(
        episode=spec.episode_id,
        episode_key=spec.key,
        task_id=task.id,
        domain=task.domain,
        epsilon=0.0,
        profile=profile,
        trial=trial,
        agent=agent,
        transport=transport,
        seed=seed,
        outcome="completed",
        started_at=0.0,
        duration_s=0.0,
        task_text=task.description,
    )
