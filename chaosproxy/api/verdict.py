"""A task's verdict on an episode: the one `Verdict`, the one `judge`, and `find_task`.

`Episode.verdict()`, the runner, `up`'s control API and the pytest plugin all judge with
this module (it sits in the API package, below the runner, so nothing imports upward).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaosproxy.api.errors import UnknownTaskError
from chaosproxy.domains.kit import Journal, Task
from chaosproxy.domains.registry import all_domains, get_domain
from chaosproxy.records import GoalCheck


@dataclass(frozen=True)
class Verdict:
    """The task's verifier on an episode; true when the goal holds.

    `t_success` is the first step after which the goal held (None if it never did);
    `escalated` says whether the agent called escalate_to_human; `held_initially` whether
    the goal already held before any call; `checks` the verifier after every
    state-changing step (in journal order), kept whole for the scorer."""

    task: str
    success: bool
    t_success: int | None
    escalated: bool
    held_initially: bool = False
    checks: list[GoalCheck] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.success


def find_task(task_id: str) -> Task[Any]:
    """A built-in task by id, from whichever installed domain declares it."""
    for domain in all_domains():
        task = domain.tasks.get(task_id)
        if task is not None:
            return task
    raise UnknownTaskError(f"unknown task {task_id!r}; `chaosproxy domains` lists the tasks")


def judge(task: Task[Any], journal: Journal) -> Verdict:
    """Success, the first step after which the goal held, whether the agent escalated, and
    the verifier's verdict after every state-changing step, so that the scorer can find
    t_success without importing the domain."""
    model = get_domain(task.domain).state_model
    initial = model.model_validate(journal.initial_state)
    final = model.model_validate(journal.final_state)
    success = bool(task.verify(initial, final))
    checks = [
        GoalCheck(
            seq=entry.seq,
            step=entry.step,
            tool=entry.tool,
            holds=_holds(task, initial, model, entry.state_after),
        )
        for entry in sorted(journal.entries, key=lambda e: e.seq)
    ]
    t_success = None
    if success:
        t_success = next((check.step for check in checks if check.holds), None)
    held_initially = bool(_holds(task, initial, model, journal.initial_state))
    return Verdict(task.id, success, t_success, bool(final.escalations), held_initially, checks)


def _holds(task: Task[Any], initial: Any, model: Any, state: dict[str, Any]) -> bool | None:
    """The verifier on one state; None when it raises (its bug, not the agent's)."""
    try:
        return bool(task.verify(initial, model.model_validate(state)))
    except Exception:
        return None


def non_idempotent_tools(domain: str) -> list[str]:
    """Tools whose repetition is a second write (duplicate-write hygiene needs them)."""
    return sorted(name for name, spec in get_domain(domain).tools.items() if not spec.idempotent)
