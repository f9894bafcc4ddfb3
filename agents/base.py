"""What every agent is given for one episode, and what it hands back.

Agents are clients: they get URLs, never Python objects of a service. A scripted agent
additionally gets the task's reference solution, which only calls tools through the
client it is handed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from chaosproxy.domains.kit import Solver

from chaosproxy.types import Endpoints, Transport

__all__ = ["Agent", "AgentContext", "AgentResult", "Endpoints"]


@dataclass(frozen=True)
class AgentContext:
    episode: str
    domain: str
    task_id: str
    task_text: str
    endpoints: dict[str, Endpoints]
    transport: Transport
    seed: int
    reference_solution: Solver | None = None
    timeout_s: float = 60.0


@dataclass
class AgentResult:
    """How the agent says it ended. `gave_up` is an agent failure, not an infrastructure one."""

    status: Literal["finished", "gave_up", "escalated"]
    notes: list[str] = field(default_factory=list)
    tool_calls: int = 0


class Agent(Protocol):
    name: str

    async def run(self, context: AgentContext) -> AgentResult: ...
