"""The runner's span of one episode: task, agent, profile, ε, trial and the verdict.

The proxy's spans of the episode whose agent sends no trace context nest under it, so one
run opens in a backend as its episodes, each with its calls and faults.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from chaosproxy.tracing import EPISODE_TRACEPARENT, NOOP, Tracer


async def traced_episode(env: Any, spec: Any, episode: Awaitable[Any]) -> Any:
    """Await `episode` (the runner's `run_episode`, returning its EpisodeRecord) inside an
    episode span of `env.tracer` (none when tracing is off or the environment is remote)."""
    tracer: Tracer = getattr(env, "tracer", NOOP)
    if not tracer.on:
        return await episode
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": spec.agent,
        "chaosproxy.task": spec.task_id,
        "chaosproxy.domain": spec.domain,
        "chaosproxy.agent": spec.agent,
        "chaosproxy.profile": spec.profile,
        "chaosproxy.epsilon": float(spec.epsilon),
        "chaosproxy.trial": int(spec.trial),
        "chaosproxy.episode.key": spec.key,
    }
    with tracer.episode(spec.episode_id, f"episode {spec.task_id}", attributes) as span:
        token = EPISODE_TRACEPARENT.set(span.traceparent)
        try:
            record = await episode
        finally:
            EPISODE_TRACEPARENT.reset(token)
        verdict = {
            "chaosproxy.verdict": _verdict(record),
            "chaosproxy.outcome": record.outcome,
            "chaosproxy.success": record.success,
            "chaosproxy.t_success": record.t_success,
            "chaosproxy.escalated": record.escalated,
        }
        span.verdict(verdict, failed=record.outcome != "completed" or not record.success)
        return record


def _verdict(record: Any) -> str:
    if record.outcome != "completed":
        return str(record.outcome)
    if record.escalated:
        return "escalated"
    return "success" if record.success else "failure"
