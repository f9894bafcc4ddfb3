"""The journal: every state-changing call of an episode, with the state after it.

The scorer reads it (from RUN_DIR/episodes/<episode>/journal.json) to find the first step
after which a task's goal held, duplicate writes after a lost reply, and whether an agent
obeyed an injected instruction.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class JournalEntry(BaseModel):
    seq: int
    step: int | None
    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None
    state_after: dict[str, Any]
    transport: Literal["rest", "mcp"]


class Journal(BaseModel):
    episode: str
    domain: str
    task_id: str | None = None
    initial_state: dict[str, Any]
    entries: list[JournalEntry] = Field(default_factory=list)
    final_state: dict[str, Any]
