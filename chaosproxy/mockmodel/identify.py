"""Which task a conversation is about, from the tools offered and the (perturbed) words.

Two steps, both deterministic:
1. The domain: the one whose tool names overlap most with the request's `tools`
   (Jaccard); with no tools offered, every domain is a candidate.
2. The task: TF-IDF cosine between the first user message and each candidate task's
   description, over word tokens and character 4-grams, IDF from the candidates' texts.

ε-perturbations keep what makes a task itself (flight numbers, names, ids, amounts) and
change glue words, date formats and sentence order; word tokens carry the identifiers,
character 4-grams tolerate synonyms and reformatted dates, and IDF makes the words every
task of a domain shares count for little. `tests/runner/test_mock_model.py` checks every
task of every domain at ε = 0, 0.1, 0.2 and 0.3.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from chaosproxy.agents.embedding import features
from chaosproxy.domains.kit import Task
from chaosproxy.domains.registry import all_domains


@dataclass(frozen=True)
class Match:
    task: Task[Any]
    score: float
    runner_up: float


class _Index:
    def __init__(self, tasks: list[Task[Any]]) -> None:
        self.tasks = tasks
        bags = [features(task.description) for task in tasks]
        documents = Counter(term for bag in bags for term in bag)
        n = len(tasks)
        self.idf = {term: math.log((1 + n) / (1 + df)) + 1 for term, df in documents.items()}
        self.vectors = [self._weigh(bag) for bag in bags]

    def _weigh(self, bag: Counter[str]) -> dict[str, float]:
        vector = {t: (1 + math.log(c)) * self.idf[t] for t, c in bag.items() if t in self.idf}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {t: v / norm for t, v in vector.items()}

    def rank(self, text: str) -> list[tuple[float, int]]:
        query = self._weigh(features(text))
        scores = [
            (sum(weight * vector.get(term, 0.0) for term, weight in query.items()), i)
            for i, vector in enumerate(self.vectors)
        ]
        return sorted(scores, key=lambda pair: (-pair[0], self.tasks[pair[1]].id))


@cache
def _tool_names() -> dict[str, frozenset[str]]:
    return {domain.name: frozenset(domain.tools) for domain in all_domains()}


@cache
def _index(domains: tuple[str, ...]) -> _Index:
    wanted = set(domains)
    return _Index([t for d in all_domains() if d.name in wanted for t in d.tasks.values()])


def candidate_domains(tools: Iterable[str]) -> tuple[str, ...]:
    offered = frozenset(tools)
    names = _tool_names()
    if not offered:
        return tuple(sorted(names))

    def overlap(name: str) -> float:
        return len(offered & names[name]) / len(offered | names[name])

    best = max(overlap(name) for name in names)
    if best == 0:
        return tuple(sorted(names))
    return tuple(sorted(name for name in names if overlap(name) == best))


def identify(text: str, tools: Iterable[str] = ()) -> Match | None:
    """The task `text` asks for, among the domains whose tools are offered; None if no text."""
    if not text.strip():
        return None
    index = _index(candidate_domains(tools))
    ranked = index.rank(text)
    if not ranked:
        return None
    score, best = ranked[0]
    runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
    return Match(index.tasks[best], score, runner_up)
