"""The journal: every state-changing call of an episode, with the state after it.

The scorer reads it (from RUN_DIR/episodes/<episode>/journal.json) to find the first step
after which a task's goal held, duplicate writes after a lost reply, and whether an agent
obeyed an injected instruction. The shape is declared once, in `chaosproxy.types`, so the
services that write it and the scorer that reads it share it.
"""

from __future__ import annotations

from chaosproxy.types import Journal, JournalEntry

__all__ = ["Journal", "JournalEntry"]
