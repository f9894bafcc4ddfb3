"""Built-in agents by name."""

from __future__ import annotations

from dataclasses import dataclass, field

from chaosproxy.agents.apedm.agent import ApEdmAgent
from chaosproxy.agents.apedm.embedder import Embedder
from chaosproxy.agents.apedm.memory import EpisodicMemory
from chaosproxy.agents.base import Agent
from chaosproxy.agents.llm import ModelEndpoint, UsageLedger
from chaosproxy.agents.react import ReactAgent
from chaosproxy.agents.reflexion import ReflexionAgent
from chaosproxy.agents.scripted.agent import ScriptedAgent
from chaosproxy.agents.scripted.policy import POLICIES

SCRIPTED = tuple(POLICIES)
MODEL_AGENTS = ("react", "reflexion", "ap-edm")


@dataclass(frozen=True)
class AgentSetup:
    """What a model-driven agent is built with; scripted agents ignore it."""

    endpoint: ModelEndpoint | None = None
    ledger: UsageLedger = field(default_factory=UsageLedger)
    label: str | None = None
    """The name results use (e.g. `react.gpt-4o` when models are a grid axis)."""
    memory: EpisodicMemory | None = None
    embedder: Embedder = field(default_factory=Embedder)


def agent_names() -> tuple[str, ...]:
    return (*SCRIPTED, *MODEL_AGENTS)


def is_model_agent(name: str) -> bool:
    return name in MODEL_AGENTS


def make_agent(name: str, setup: AgentSetup | None = None) -> Agent:
    """A fresh agent; a clear error lists the known names or says what is missing."""
    setup = setup or AgentSetup()
    for policy in POLICIES:
        if name == policy:
            return ScriptedAgent(policy)
    if name in MODEL_AGENTS:
        if setup.endpoint is None or not setup.endpoint.model:
            raise ValueError(
                f"--agent {name} needs --model (and --base-url for a local server, "
                "e.g. `chaosproxy mock-model` offline)"
            )
        label = setup.label or name
        if name == "reflexion":
            return ReflexionAgent(setup.endpoint, setup.ledger, name=label)
        if name == "ap-edm":
            return ApEdmAgent(
                setup.endpoint, setup.ledger, setup.memory, setup.embedder, name=label
            )
        return ReactAgent(setup.endpoint, setup.ledger, name=label)
    raise ValueError(
        f"unknown agent {name!r}; built-in agents: {', '.join(agent_names())} (or use --agent-cmd)"
    )
