"""What the three papers' tables share: grouping scored episodes and pass^k over them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from chaosproxy.papers.table import Table
from chaosproxy.report.table import delivery_table
from chaosproxy.scoring.api import Scored
from chaosproxy.scoring.episodes import EpisodeScore
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.passk import pass_at, pass_hat
from chaosproxy.scoring.stats import bounded_mean, wilson


def architecture(score: EpisodeScore) -> str:
    """The agent without its model label (`react.gpt-4o` → `react`)."""
    agent = score.record.agent
    return agent.split(".", 1)[0] if score.record.model else agent


def model_of(score: EpisodeScore) -> str:
    """The model an episode used; scripted agents are their own row."""
    return score.record.model or f"{score.record.agent} (scripted)"


def evaluable(scores: Iterable[EpisodeScore]) -> list[EpisodeScore]:
    return [s for s in scores if s.evaluable and s.success is not None]


KeyT = TypeVar("KeyT", bound=Hashable)


def grouped(
    scores: Iterable[EpisodeScore], key: Callable[[EpisodeScore], KeyT]
) -> dict[KeyT, list[EpisodeScore]]:
    groups: dict[KeyT, list[EpisodeScore]] = defaultdict(list)
    for score in scores:
        groups[key(score)].append(score)
    return dict(groups)


def units(scores: Iterable[EpisodeScore]) -> dict[tuple[str, str, float, str], list[bool]]:
    """Trials of one (agent, task, ε, profile): pass^k is taken over these."""
    cells: dict[tuple[str, str, float, str], list[tuple[int, bool]]] = defaultdict(list)
    for s in evaluable(scores):
        key = (s.record.agent, s.record.task_id, s.record.epsilon, s.record.profile)
        cells[key].append((s.record.trial, bool(s.success)))
    return {key: [ok for _, ok in sorted(trials)] for key, trials in cells.items()}


def pass_hat_k(scores: Sequence[EpisodeScore], k: int, seed: int, name: str) -> Estimate:
    """Mean over units with n ≥ k of pass^k = C(c, k) / C(n, k), with a bootstrap interval."""
    values = [
        pass_hat(len(trials), sum(trials), k) or 0.0
        for trials in units(scores).values()
        if len(trials) >= k
    ]
    return bounded_mean(values, seed, name, f"no task has {k} trials")


def pass_at_k(scores: Sequence[EpisodeScore], k: int, seed: int, name: str) -> Estimate:
    values = [
        pass_at(len(trials), sum(trials), k) or 0.0
        for trials in units(scores).values()
        if len(trials) >= k
    ]
    return bounded_mean(values, seed, name, f"no task has {k} trials")


def success_rate(scores: Sequence[EpisodeScore]) -> Estimate:
    judged = evaluable(scores)
    return wilson(sum(bool(s.success) for s in judged), len(judged), "no evaluable episode")


def ordered(values: Iterable[str], preferred: Sequence[str] = ()) -> list[str]:
    """Preferred names first, in their order, then the rest sorted."""
    present = set(values)
    return [v for v in preferred if v in present] + sorted(present - set(preferred))


def delivery(scored: Scored) -> Table:
    """Whether each (agent, profile)'s faults reached the agent: every paper's tables rest
    on it (the same cells as `chaosproxy score`'s "Fault delivery")."""
    headers, rows = delivery_table(scored.results)
    table = Table(
        "delivery",
        "Fault delivery",
        [header.replace("/\n", "/").replace("\n", " ") for header in headers],
        notes=[
            "Fault rate: tool calls carrying a freshly drawn, delivered fault / tool calls "
            "(Wilson), beside the profile's failure_rate; incident delivered: episodes in "
            "which an effect of the profile's planned incident (FIT v2) reached the agent."
        ],
    )
    for row in rows:
        table.add(*row)
    return table
