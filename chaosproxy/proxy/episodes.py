"""Per-episode step counters at the proxy: a step is one tool call, counted on arrival."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EpisodeBook:
    """Steps, delivered faults and the service's own errors per episode.

    A service error is an upstream 5xx the proxy did not inject: the runner counts such an
    episode as an infrastructure outcome rather than an agent failure.
    """

    steps: dict[str, int] = field(default_factory=dict)
    faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    service_errors: dict[str, int] = field(default_factory=dict)

    def next_step(self, episode: str) -> int:
        step = self.steps.get(episode, 0) + 1
        self.steps[episode] = step
        return step

    def note_fault(self, episode: str, step: int, name: str, delivered: bool) -> None:
        self.faults.setdefault(episode, []).append(
            {"step": step, "fault": name, "delivered": delivered}
        )

    def note_service_error(self, episode: str) -> None:
        self.service_errors[episode] = self.service_errors.get(episode, 0) + 1

    def forget(self, episode: str) -> None:
        self.steps.pop(episode, None)
        self.faults.pop(episode, None)
        self.service_errors.pop(episode, None)
