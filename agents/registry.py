"""Built-in agents by name."""

from __future__ import annotations

from chaosproxy.agents.base import Agent
from chaosproxy.agents.react import ReactAgent
from chaosproxy.agents.scripted.agent import ScriptedAgent
from chaosproxy.agents.scripted.policy import POLICIES

SCRIPTED = tuple(POLICIES)
MODEL_AGENTS = ("react",)


def agent_names() -> tuple[str, ...]:
    return (*SCRIPTED, *MODEL_AGENTS)


def make_agent(name: str, model: str | None = None, base_url: str | None = None) -> Agent:
    """A fresh agent; a clear error lists the known names or says what is missing."""
    for policy in POLICIES:
        if name == policy:
            return ScriptedAgent(policy)
    if name == "react":
        if not model:
            raise ValueError("--agent react needs --model (and --base-url for a local server)")
        return ReactAgent(model, base_url)
    raise ValueError(
        f"unknown agent {name!r}; built-in agents: {', '.join(agent_names())} (or use --agent-cmd)"
    )
