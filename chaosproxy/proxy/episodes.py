"""Per-episode step counters at the proxy (a step is one tool call, counted on arrival), and
the bound on *idle* episodes that keeps a long `up` session's memory flat.

Any client can make up episode ids, so the proxy keeps at most `max_idle` episodes that
have no request in flight (and, with `idle_ttl_s`, only for that long), forgetting the
least recently used first. An episode with a request in flight is never evicted. The book
only decides: it returns the ids it evicted, and the caller tells the (pure, clock-free)
fault engine to forget them. An evicted id that comes back starts afresh (steps from 1,
the engine's draws from the start, so they are the draws a new episode of that id gets),
and `begin` says so, so the log can mark its first record.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_IDLE = 256
"""As the services' own bound; ≈ 10 KB of proxy and engine state per episode: ≈ 2.5 MB."""

DEFAULT_EPISODE_CALLS = 6
"""Tool calls per rolling episode of the calls that carry no episode id (`up
--default-episode-calls`). Without an id every call lands in the one episode `default`,
which would never end: a persistent fault (SchemaDrift, StaleData, HardRateLimit) drawn
once would stay for good (300 calls to one tool at lambda0.2 all carried a fault). So such
calls are cut into rolling episodes of this many tool calls, each with fresh fault draws
and incidents (the engine's `roll_episode`); persistent faults end with theirs. The log
keeps `episode: "default"` and counts its steps on; `episode_key` names the rolling episode
(`default`, `default~2`, ...). The services' state is not reset: it stays the one episode
`default` there.

Why 6: about one task. The built-in tasks' shortest plans take 1-8 tool calls (2.8 on
average) and an agent makes a few more. It is also the longest window that keeps a
lambda0.2 client within twice the profile's rate of affected calls in the worst case (one
tool called with the same arguments, every reply different: a persistent fault drawn at a
window's k-th call carries to its end, so affected ≈ λ + λ·w_persistent·(N-1)/2·(1-λ) =
0.175 + 0.175·0.3·2.5·0.825 = 0.28 for N = 6, 0.33 for N = 8). 0 turns rolling off."""


@dataclass
class EpisodeBook:
    """Steps, delivered faults and the service's own errors per episode, and which episodes
    are in use or idle.

    A service error is an upstream 5xx the proxy did not inject: the runner counts such an
    episode as an infrastructure outcome rather than an agent failure.
    """

    max_idle: int = DEFAULT_MAX_IDLE
    idle_ttl_s: float = 0.0
    """0: idle episodes are kept until the count bound pushes them out."""
    clock: Callable[[], float] = time.monotonic
    steps: dict[str, int] = field(default_factory=dict)
    faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    model_faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Faults on model calls, which are no steps (step None, as in the log)."""
    service_errors: dict[str, int] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)
    """Requests in flight per episode: an episode here is never evicted."""
    idle: OrderedDict[str, float] = field(default_factory=OrderedDict)
    """Idle episodes and when they were last used, least recently used first."""
    evicted: OrderedDict[str, None] = field(default_factory=OrderedDict)
    """Ids evicted while idle (the last 16 × max_idle), so a returning one is told."""
    attempts: dict[str, str] = field(default_factory=dict)
    """The attempt the operator configured each episode with (stamped on its calls)."""

    def begin(self, episode: str) -> tuple[bool, list[str]]:
        """A request of `episode` arrives: it is in use until `end`.

        Returns whether the episode had been evicted and starts afresh now, and the ids
        evicted for having been idle longer than `idle_ttl_s`.
        """
        count = self.busy.get(episode)
        if count is not None:
            self.busy[episode] = count + 1
            return False, self._expire()
        self.busy[episode] = 1
        restarted = False
        if self.idle.pop(episode, None) is None and episode in self.evicted:
            del self.evicted[episode]
            restarted = True
        return restarted, self._expire()

    def end(self, episode: str) -> list[str]:
        """The request is answered; returns the idle episodes evicted to keep the bound."""
        count = self.busy.pop(episode, 1) - 1
        if count > 0:
            self.busy[episode] = count
            return []
        self.idle[episode] = self.clock()
        return self._evict_excess()

    def touch(self, episode: str) -> list[str]:
        """The operator configured `episode`: it counts as used now (kept, bounded)."""
        self.evicted.pop(episode, None)
        if episode in self.busy:
            return []
        self.idle.pop(episode, None)
        self.idle[episode] = self.clock()
        return self._evict_excess()

    def _evict_excess(self) -> list[str]:
        gone: list[str] = []
        while len(self.idle) > self.max_idle:
            episode, _ = self.idle.popitem(last=False)
            self._drop(episode)
            gone.append(episode)
        return gone + self._expire()

    def _expire(self) -> list[str]:
        if self.idle_ttl_s <= 0 or not self.idle:
            return []
        oldest = self.clock() - self.idle_ttl_s
        gone: list[str] = []
        while self.idle:
            episode, last_used = next(iter(self.idle.items()))
            if last_used > oldest:
                break
            del self.idle[episode]
            self._drop(episode)
            gone.append(episode)
        return gone

    def _drop(self, episode: str) -> None:
        self.steps.pop(episode, None)
        self.faults.pop(episode, None)
        self.model_faults.pop(episode, None)
        self.service_errors.pop(episode, None)
        self.evicted[episode] = None
        while len(self.evicted) > 16 * self.max_idle:
            self.evicted.popitem(last=False)

    def next_step(self, episode: str) -> int:
        step = self.steps.get(episode, 0) + 1
        self.steps[episode] = step
        return step

    def note_fault(self, episode: str, step: int, name: str, delivered: bool) -> None:
        self.faults.setdefault(episode, []).append(
            {"step": step, "fault": name, "delivered": delivered}
        )

    def note_model_fault(self, episode: str, tool: str, name: str, delivered: bool) -> None:
        self.model_faults.setdefault(episode, []).append(
            {"step": None, "tool": tool, "fault": name, "delivered": delivered}
        )

    def note_service_error(self, episode: str) -> None:
        self.service_errors[episode] = self.service_errors.get(episode, 0) + 1

    def forget(self, episode: str) -> None:
        """The episode ended (or restarts on purpose): nothing of it is kept, not even a
        mark that it was evicted. A request still in flight keeps it in use until it ends."""
        self.steps.pop(episode, None)
        self.faults.pop(episode, None)
        self.model_faults.pop(episode, None)
        self.service_errors.pop(episode, None)
        self.idle.pop(episode, None)
        self.evicted.pop(episode, None)
        self.attempts.pop(episode, None)
