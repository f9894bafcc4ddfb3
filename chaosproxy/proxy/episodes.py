"""Per-episode step counters at the proxy: a step is one tool call, counted on arrival."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EpisodeBook:
    """Steps and delivered faults per episode, as the control API reports them."""

    steps: dict[str, int] = field(default_factory=dict)
    faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def next_step(self, episode: str) -> int:
        step = self.steps.get(episode, 0) + 1
        self.steps[episode] = step
        return step

    def note_fault(self, episode: str, step: int, name: str, delivered: bool) -> None:
        self.faults.setdefault(episode, []).append(
            {"step": step, "fault": name, "delivered": delivered}
        )

    def forget(self, episode: str) -> None:
        self.steps.pop(episode, None)
        self.faults.pop(episode, None)
