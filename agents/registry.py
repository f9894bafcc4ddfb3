"""Built-in agents by name."""

from __future__ import annotations

from chaosproxy.agents.base import Agent
from chaosproxy.agents.scripted.agent import ScriptedAgent
from chaosproxy.agents.scripted.policy import POLICIES

SCRIPTED = tuple(POLICIES)


def agent_names() -> tuple[str, ...]:
    return SCRIPTED


def make_agent(name: str) -> Agent:
    """A fresh agent; a clear error lists the known names."""
    for policy in POLICIES:
        if name == policy:
            return ScriptedAgent(policy)
    raise ValueError(
        f"unknown agent {name!r}; built-in agents: {', '.join(SCRIPTED)} (or use --agent-cmd)"
    )
