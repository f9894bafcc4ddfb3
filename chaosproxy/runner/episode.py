"""One episode: reset the state, run the agent, collect the journal, judge the end state.

Failures are sorted on the way out: an agent that finishes and gets the task wrong is a
`completed` episode with success False; an agent that crashes, a runner timeout, and a
service error the proxy did not inject are infrastructure outcomes, counted apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from chaosproxy.agents.base import Agent, AgentContext, Endpoints, Transport
from chaosproxy.api.errors import ChaosError
from chaosproxy.api.verdict import judge, non_idempotent_tools
from chaosproxy.domains.kit import Journal
from chaosproxy.domains.registry import get_domain
from chaosproxy.records import (
    EPISODE_DIR,
    JOURNAL_FILE,
    EpisodeOutcome,
    EpisodeRecord,
)
from chaosproxy.runner.command_agent import AgentIsolation, run_command
from chaosproxy.runner.grid import EpisodeSpec
from chaosproxy.runner.perturb import Perturbed


class EpisodeEnvironment(Protocol):
    """What an episode needs from the running proxy and services."""

    service_urls: dict[str, str]

    def oracle_headers(self) -> dict[str, str]: ...

    def configure_episode(
        self,
        episode: str,
        *,
        profile: str,
        seed: int,
        key: str,
        plan_length: int,
        attempt: str | None = None,
    ) -> None:
        """Start the episode in the proxy; `attempt` is stamped on its calls (an environment
        that cannot stamp leaves them unstamped, and the scorer then keeps them all)."""

    def endpoints(self, episode: str) -> dict[str, Endpoints]: ...

    def model_url(self, episode: str, upstream: str) -> str:
        """An OpenAI base URL for one episode's model calls through the proxy's `upstream`
        (`--model-via-proxy`)."""
        ...

    async def end_episode(self, episode: str, domain: str) -> None:
        """Forget the episode in the proxy and delete its state in the services (after its
        journal is read)."""

    def service_errors(self, episode: str) -> int: ...


@dataclass(frozen=True)
class EpisodeSettings:
    run_dir: Path
    seed: int
    transport: Transport
    timeout_s: float
    agent_command: str | None
    agent_isolation: AgentIsolation = field(default_factory=AgentIsolation)


async def run_episode(
    spec: EpisodeSpec,
    text: Perturbed,
    agent: Agent | None,
    env: EpisodeEnvironment,
    settings: EpisodeSettings,
    http: httpx.AsyncClient,
    attempt: str | None = None,
) -> EpisodeRecord:
    """Run one episode end to end and return its record (the caller appends it).

    `attempt` (default: a fresh id) names this run of the episode on its record, its calls
    and its journal, so a killed attempt's leftovers are told apart from a re-run."""
    task = get_domain(spec.domain).tasks[spec.task_id]
    attempt = attempt or new_attempt()
    started = time.time()
    output_dir = settings.run_dir / EPISODE_DIR / spec.episode_id
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / JOURNAL_FILE).unlink(missing_ok=True)
    service = env.service_urls[spec.domain]
    oracle = f"{service}/_oracle/episodes/{quote(spec.episode_id, safe='')}"

    def record(outcome: EpisodeOutcome, **fields: Any) -> EpisodeRecord:
        return episode_record(spec, text, settings, outcome, started, attempt=attempt, **fields)

    try:
        env.configure_episode(
            spec.episode_id,
            profile=spec.profile,
            seed=settings.seed,
            key=spec.key,
            plan_length=task.l_min,
            attempt=attempt,
        )
        reset = await http.post(
            f"{oracle}/reset", json={"task_id": spec.task_id}, headers=env.oracle_headers()
        )
        reset.raise_for_status()
    except (httpx.HTTPError, ValueError, ChaosError) as failure:
        with contextlib.suppress(httpx.HTTPError, ValueError, ChaosError):
            await env.end_episode(spec.episode_id, spec.domain)
        return record("infra_error", error=f"could not reset the episode: {failure!r}")

    context = AgentContext(
        episode=spec.episode_id,
        domain=spec.domain,
        task_id=spec.task_id,
        task_text=text.text,
        endpoints=env.endpoints(spec.episode_id),
        transport=settings.transport,
        seed=settings.seed,
        reference_solution=task.solve,
        timeout_s=settings.timeout_s,
    )
    outcome, exit_code, error = await _run_agent(agent, context, settings, output_dir)
    service_failed = env.service_errors(spec.episode_id) > 0

    try:
        try:
            response = await http.get(f"{oracle}/journal", headers=env.oracle_headers())
            response.raise_for_status()
            journal = Journal.model_validate(response.json())
            stamped = {**json.loads(journal.model_dump_json()), "attempt": attempt}
            (output_dir / JOURNAL_FILE).write_text(
                json.dumps(stamped, indent=1, ensure_ascii=False)
            )
        finally:
            await env.end_episode(spec.episode_id, spec.domain)
    except (httpx.HTTPError, ValueError, ChaosError) as failure:
        return record(
            "infra_error", exit_code=exit_code, error=f"could not read the journal: {failure!r}"
        )

    if outcome == "completed" and service_failed:
        outcome, error = (
            "infra_error",
            "the service failed on its own (an error the proxy did not inject)",
        )
    verdict = judge(task, journal)
    return record(
        outcome,
        success=verdict.success,
        t_success=verdict.t_success,
        escalated=verdict.escalated,
        exit_code=exit_code,
        error=error,
        goal_held_initially=verdict.held_initially,
        goal_checks=verdict.checks,
        non_idempotent_tools=non_idempotent_tools(task.domain),
    )


async def _run_agent(
    agent: Agent | None, context: AgentContext, settings: EpisodeSettings, output_dir: Path
) -> tuple[EpisodeOutcome, int | None, str | None]:
    if settings.agent_command is not None:
        result = await run_command(
            settings.agent_command, context, output_dir, settings.agent_isolation
        )
        if result.timed_out:
            return "timeout", result.exit_code, f"killed after {settings.timeout_s:g} s"
        if result.exit_code != 0:
            return "agent_crash", result.exit_code, f"agent exited with code {result.exit_code}"
        return "completed", result.exit_code, None
    assert agent is not None
    try:
        outcome = await asyncio.wait_for(agent.run(context), timeout=settings.timeout_s)
    except TimeoutError:
        return "timeout", None, f"agent did not finish within {settings.timeout_s:g} s"
    except Exception as crash:
        (output_dir / "stderr.txt").write_text(traceback.format_exc())
        return "agent_crash", None, f"agent raised {crash!r}"
    (output_dir / "stdout.txt").write_text(
        json.dumps(
            {"status": outcome.status, "notes": outcome.notes, "tool_calls": outcome.tool_calls}
        )
    )
    return "completed", 0, None


def episode_record(
    spec: EpisodeSpec,
    text: Perturbed,
    settings: EpisodeSettings,
    outcome: EpisodeOutcome,
    started: float,
    **fields: Any,
) -> EpisodeRecord:
    """The record of an episode that started at `started` and ends now."""
    return EpisodeRecord(
        episode=spec.episode_id,
        episode_key=spec.key,
        task_id=spec.task_id,
        domain=spec.domain,
        epsilon=spec.epsilon,
        profile=spec.profile,
        trial=spec.trial,
        agent=spec.agent,
        transport=settings.transport,
        seed=settings.seed,
        outcome=outcome,
        started_at=started,
        duration_s=round(time.time() - started, 4),
        task_text=text.text,
        perturbations=list(text.relations),
        **fields,
    )


def new_attempt() -> str:
    """A fresh attempt id: unique across runs, shards and machines."""
    return uuid.uuid4().hex[:16]


def infrastructure_failure(
    spec: EpisodeSpec,
    text: Perturbed,
    settings: EpisodeSettings,
    failure: BaseException,
    attempt: str | None = None,
) -> EpisodeRecord:
    """An episode the runner itself could not carry out: kept, and never an agent failure."""
    return episode_record(
        spec,
        text,
        settings,
        "infra_error",
        time.time(),
        attempt=attempt or new_attempt(),
        error=f"runner failed: {failure!r}",
    )
