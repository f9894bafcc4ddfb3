"""The grid: every (agent, task, ε, λ, trial) is one episode.

The episode *key* leaves the agent out on purpose: the fault engine draws from the key,
so two agents running the same task and trial meet the same faults at their n-th call of
the same tool, and comparisons between agents are fair.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from chaosproxy.domains.kit import Task
from chaosproxy.domains.registry import all_domains, get_domain
from chaosproxy.errors import ChaosError

SUITES: dict[str, tuple[str, ...]] = {
    "reliabilitybench": ("scheduling", "travel", "support", "ecommerce"),
    "hb-eval": ("logistics", "healthcare", "coding"),
    "agentprop": ("weather", "medical_records", "scheduling", "ecommerce"),
}


class GridError(ChaosError, ValueError):
    """A grid that cannot be built: unknown suite, domain, task pattern, or empty result."""


@dataclass(frozen=True)
class EpisodeSpec:
    agent: str
    task_id: str
    domain: str
    epsilon: float
    profile: str
    trial: int

    @property
    def key(self) -> str:
        return f"{self.task_id}~e{self.epsilon:g}~{profile_label(self.profile)}~t{self.trial}"

    @property
    def episode_id(self) -> str:
        return f"{self.agent}~{self.key}"


def profile_label(profile: str) -> str:
    """The profile as it may appear in an episode id (`[A-Za-z0-9_.~-]`, kit/store.py).

    A shipped name is itself; a path (`dir/x.yaml`) becomes its stem plus a short hash of
    the path, so two files called x.yaml in different folders stay apart.
    """
    if re.fullmatch(r"[A-Za-z0-9_.-]+", profile) and not profile.endswith((".yaml", ".yml")):
        return profile
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", PurePath(profile).stem) or "profile"
    return f"{stem[:40]}-{hashlib.sha256(profile.encode()).hexdigest()[:8]}"


def suite_domains(suite: str) -> tuple[str, ...]:
    if suite == "all":
        return tuple(domain.name for domain in all_domains())
    if suite not in SUITES:
        known = ", ".join([*SUITES, "all"])
        raise GridError(f"unknown suite {suite!r}; known suites: {known}")
    return SUITES[suite]


def select_tasks(
    suite: str, domains: Sequence[str] = (), task_patterns: Sequence[str] = ()
) -> list[Task]:
    """The tasks of a suite, optionally narrowed to domains and to task-id glob patterns."""
    names = suite_domains(suite)
    if domains:
        outside = [name for name in domains if name not in names]
        if outside:
            raise GridError(f"domains {outside} are not in suite {suite!r} ({', '.join(names)})")
        names = tuple(domains)
    tasks: list[Task] = []
    for name in names:
        try:
            domain = get_domain(name)
        except (KeyError, LookupError) as missing:
            raise GridError(str(missing)) from missing
        tasks += list(domain.tasks.values())
    if task_patterns:
        tasks = [t for t in tasks if any(fnmatch.fnmatch(t.id, p) for p in task_patterns)]
        if not tasks:
            raise GridError(f"no task id matches {list(task_patterns)}")
    return tasks


def build_grid(
    agents: Sequence[str],
    tasks: Sequence[Task],
    epsilons: Sequence[float],
    profiles: Sequence[str],
    trials: int,
) -> list[EpisodeSpec]:
    """Episodes ordered so early progress already covers every profile and agent."""
    if trials < 1:
        raise GridError(f"trials must be at least 1, got {trials}")
    return [
        EpisodeSpec(agent, task.id, task.domain, epsilon, profile, trial)
        for trial in range(1, trials + 1)
        for task in tasks
        for epsilon in epsilons
        for profile in profiles
        for agent in agents
    ]


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1 ≤ I ≤ N) as (I, N); a clear error otherwise."""
    index, slash, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        shard = (0, 0)
    if not slash or not 1 <= shard[0] <= shard[1]:
        raise GridError(f"--shard {text!r}: use I/N with 1 ≤ I ≤ N, e.g. 2/8")
    return shard


def shard_of(key: str, count: int) -> int:
    """The shard (1..count) an episode key belongs to: a hash, so the split is the same on
    every machine and run, and every agent of a (task, ε, λ, trial) lands in one shard."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count + 1


def select_shard(grid: Sequence[EpisodeSpec], index: int, count: int) -> list[EpisodeSpec]:
    """Shard `index` of `count`: the shards are disjoint and together the whole grid."""
    return [episode for episode in grid if shard_of(episode.key, count) == index]
