"""A builder for small constructed run directories, written with the records.py models."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    TASKS_FILE,
    CallRecord,
    EpisodeRecord,
    FaultRecord,
    GoalCheck,
    RunConfig,
    TaskMeta,
    append_jsonl,
)


@dataclass
class Episode:
    """One episode under construction; `call` appends its tool calls in log order."""

    builder: RunBuilder
    record: EpisodeRecord
    step: int = 0
    ts: float = 1000.0
    journal_entries: list[dict[str, Any]] = field(default_factory=list)
    has_journal: bool = False

    def journal(self) -> Episode:
        """Write a journal even if no call changed state (as the runner does)."""
        self.has_journal = True
        return self

    def call(
        self,
        tool: str = "search",
        *,
        status: int = 200,
        outcome: str | None = None,
        fault: str | None = None,
        delivered: bool = True,
        recoverable: bool = True,
        params: dict[str, Any] | None = None,
        arguments: dict[str, Any] | None = None,
        forwarded: dict[str, Any] | str | None = "same",
        at: float | None = None,
        latency_ms: float = 0.0,
        retry_after_s: float | None = None,
        upstream_called: bool = True,
        incident: str | None = None,
    ) -> Episode:
        self.step += 1
        self.ts = at if at is not None else self.ts + 1.0
        args = arguments if arguments is not None else {"q": "x"}
        record = CallRecord(
            ts=self.ts,
            run_seed=7,
            episode=self.record.episode,
            episode_key=self.record.episode_key,
            step=self.step,
            domain=self.record.domain,
            tool=tool,
            transport="rest",
            kind="tool_call",
            method="POST",
            path=f"/{self.record.domain}/tools/{tool}",
            arguments=args,
            forwarded_arguments=args if forwarded == "same" else forwarded,
            fault=FaultRecord(
                name=fault,
                stage="before",
                recoverable=recoverable,
                params=params or {},
                incident=incident,
            )
            if fault
            else None,
            fault_delivered=bool(fault) and delivered,
            upstream_called=upstream_called,
            status=status,
            outcome=outcome or ("ok" if status < 400 else "http_error"),
            latency_ms=latency_ms,
            retry_after_s=retry_after_s,
        )
        self.builder.calls.append(record)
        return self

    def model(
        self,
        *,
        status: int = 200,
        fault: str | None = None,
        at: float | None = None,
        latency_ms: float = 0.0,
        retry_after_s: float | None = None,
    ) -> Episode:
        """A model call through the proxy (`kind: "model_call"`): no step, its own faults."""
        self.ts = at if at is not None else self.ts + 1.0
        self.builder.calls.append(
            CallRecord(
                ts=self.ts,
                run_seed=7,
                episode=self.record.episode,
                episode_key=self.record.episode_key,
                step=None,
                domain="llm",
                tool="chat.completions",
                transport="rest",
                kind="model_call",
                method="POST",
                path=f"/e/{self.record.episode}/llm/v1/chat/completions",
                fault=FaultRecord(name=fault, stage="before", recoverable=True) if fault else None,
                fault_delivered=bool(fault),
                upstream_called=not fault,
                status=status,
                outcome="ok" if status < 400 else "http_error",
                latency_ms=latency_ms,
                retry_after_s=retry_after_s,
                model="mock",
            )
        )
        return self

    def write(
        self,
        tool: str,
        arguments: dict[str, Any],
        step: int | None,
        state: dict[str, Any] | None = None,
    ) -> Episode:
        """A journal entry: a state-changing call the service executed."""
        self.journal_entries.append(
            {
                "seq": len(self.journal_entries) + 1,
                "step": step,
                "tool": tool,
                "arguments": arguments,
                "result": {},
                "state_after": state or {},
                "transport": "rest",
            }
        )
        return self


@dataclass
class RunBuilder:
    path: Path
    trials: int = 4
    seed: int = 7
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[str, TaskMeta] = field(default_factory=dict)
    episodes: list[Episode] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)

    def task(
        self,
        task_id: str,
        *,
        l_min: int = 2,
        escalation_acceptable: bool = False,
        tags: list[str] | None = None,
        domain: str = "travel",
    ) -> RunBuilder:
        self.tasks[task_id] = TaskMeta(
            id=task_id,
            domain=domain,
            description="d",
            l_min=l_min,
            difficulty="simple",
            tags=tags or [],
            escalation_acceptable=escalation_acceptable,
        )
        return self

    def episode(
        self,
        task_id: str = "t1",
        *,
        success: bool | None = True,
        profile: str = "lambda0.2",
        epsilon: float = 0.0,
        trial: int | None = None,
        outcome: str = "completed",
        t_success: int | None = None,
        agent: str = "retry",
        escalated: bool = False,
        domain: str | None = None,
        checks: list[tuple[int | None, bool]] | None = None,
        held_initially: bool | None = None,
        non_idempotent: list[str] | None = None,
    ) -> Episode:
        if task_id not in self.tasks:
            self.task(task_id)
        index = len(self.episodes)
        if trial is None:
            trial = 1 + sum(
                1
                for e in self.episodes
                if (e.record.task_id, e.record.profile, e.record.epsilon, e.record.agent)
                == (task_id, profile, epsilon, agent)
            )
        record = EpisodeRecord(
            episode=f"ep{index:03d}",
            episode_key=f"{task_id}~{epsilon}~{profile}~{trial}",
            task_id=task_id,
            domain=domain or self.tasks[task_id].domain,
            epsilon=epsilon,
            profile=profile,
            trial=trial,
            agent=agent,
            transport="rest",
            seed=self.seed,
            outcome=outcome,
            success=success if outcome == "completed" else None,
            t_success=t_success,
            escalated=escalated,
            started_at=1000.0,
            duration_s=1.0,
            task_text="d",
            goal_held_initially=held_initially,
            goal_checks=None
            if checks is None
            else [
                GoalCheck(seq=i + 1, step=step, tool="w", holds=holds)
                for i, (step, holds) in enumerate(checks)
            ],
            non_idempotent_tools=non_idempotent,
        )
        episode = Episode(builder=self, record=record)
        self.episodes.append(episode)
        return episode

    def build(self) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        config = RunConfig(
            kind="run",
            seed=self.seed,
            created_at=1000.0,
            versions={"chaosproxy": "test"},
            profiles=self.profiles,
            agent="retry",
            trials=self.trials,
        )
        (self.path / CONFIG_FILE).write_text(config.model_dump_json(), encoding="utf-8")
        for name in (TASKS_FILE, EPISODES_FILE, CALLS_FILE):
            (self.path / name).write_text("", encoding="utf-8")
        for task in self.tasks.values():
            append_jsonl(self.path / TASKS_FILE, task)
        for episode in self.episodes:
            append_jsonl(self.path / EPISODES_FILE, episode.record)
            if episode.journal_entries or episode.has_journal:
                folder = self.path / EPISODE_DIR / episode.record.episode
                folder.mkdir(parents=True, exist_ok=True)
                journal = {
                    "episode": episode.record.episode,
                    "domain": episode.record.domain,
                    "initial_state": {},
                    "entries": episode.journal_entries,
                    "final_state": episode.journal_entries[-1]["state_after"]
                    if episode.journal_entries
                    else {},
                }
                (folder / JOURNAL_FILE).write_text(json.dumps(journal), encoding="utf-8")
        for call in self.calls:
            append_jsonl(self.path / CALLS_FILE, call)
        return self.path


@pytest.fixture
def run(tmp_path: Path) -> RunBuilder:
    return RunBuilder(path=tmp_path / "run")


def score_dir(path: Path) -> Any:
    """Score a run directory (the scorer reads the directory only). Every scenario also
    checks that the scorer's fast reader of calls.jsonl (msgspec structs) folds into the
    same per-episode facts as the pydantic records do (tests/scoring/test_fast_path.py
    compares whole results)."""
    from chaosproxy.scoring import score_runs
    from chaosproxy.scoring.agentprop import ModelInjection, watch
    from chaosproxy.scoring.calls import collect
    from chaosproxy.scoring.rundir import iter_call_rows, iter_calls

    fast: dict[str, ModelInjection] = {}
    reference: dict[str, ModelInjection] = {}
    assert collect(watch(iter_call_rows(path), fast)) == collect(watch(iter_calls(path), reference))
    assert fast == reference
    return score_runs([path])


def group_of(results: Any, profile: str = "lambda0.2", agent: str = "retry") -> Any:
    return next(g for g in results.groups if g.profile == profile and g.agent == agent)


@pytest.fixture
def score() -> Any:
    return score_dir


@pytest.fixture
def group() -> Any:
    return group_of


@pytest.fixture
def run_at() -> Any:
    """A builder for a run directory at a given path (for two-run comparisons)."""
    return lambda path: RunBuilder(path=path)
