"""A regression test from a shrunk schedule: pytest, through the chaosproxy plugin.

The test replays the minimal failing schedule (`@pytest.mark.chaos(schedule=...)`) on the
same built-in task, runs the agent, and asserts the task is done: it fails until the
agent is fixed, then guards the fix.
"""

from __future__ import annotations

import pprint
import re

from chaosproxy.faults.schedule import Schedule
from chaosproxy.records import EpisodeRecord

_TEMPLATE = '''"""Regression test written by `chaosproxy shrink --emit-pytest`.

Agent {agent!r} failed task {task!r} under this fault schedule, the smallest failing
one found by shrinking episode {episode!r} of {run_dir} ({runs} runs). The test
replays it and passes once the agent recovers. Runs with chaosproxy's pytest plugin.
"""

from __future__ import annotations

import asyncio

import pytest

from chaosproxy.agents.base import AgentContext
from chaosproxy.agents.registry import make_agent
from chaosproxy.api.environment import find_task

TASK = {task!r}
TASK_TEXT = {text!r}
SCHEDULE = {schedule}


def run_agent(episode, task):
    """Run the agent on the episode: replace this with your own agent's entry point."""
    context = AgentContext(
        episode=episode.id,
        domain=task.domain,
        task_id=task.id,
        task_text=TASK_TEXT,
        endpoints=episode.endpoints(),
        transport={transport!r},
        seed={seed!r},
        reference_solution=task.solve,
    )
    return asyncio.run(make_agent({agent!r}).run(context))


@pytest.mark.chaos(task=TASK, profiles=[{profile!r}], trials=1, schedule=SCHEDULE)
def {name}(chaos_episode):
    """{agent} recovers from: {summary}"""
    run_agent(chaos_episode, find_task(TASK))
    met = [fault.name for fault in chaos_episode.faults()]
    assert all(entry["fault"] in met for entry in SCHEDULE["faults"]), (
        "the schedule did not land as shrunk (did the agent's calls change?)"
    )
    assert chaos_episode.verdict(), "the agent still fails under the minimal schedule"
'''


def pytest_source(record: EpisodeRecord, schedule: Schedule, run_dir: str, runs: int) -> str:
    """The text of a pytest module guarding against this failure."""
    document = schedule.model_dump(mode="json", exclude_defaults=True) or {"faults": []}
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", f"{record.agent}_{record.task_id}").strip("_").lower()
    summary = "; ".join(entry.label() for entry in schedule.faults) or "no fault"
    return _TEMPLATE.format(
        agent=record.agent,
        task=record.task_id,
        episode=record.episode,
        run_dir=run_dir,
        runs=runs,
        text=record.task_text,
        schedule=pprint.pformat(document, sort_dicts=False, width=88),
        transport=record.transport,
        seed=record.seed,
        profile="lambda0.0",
        name=f"test_{slug}_recovers_from_minimal_schedule",
        summary=summary.replace('"', "'"),
    )
