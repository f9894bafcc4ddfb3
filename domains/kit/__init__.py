"""The domain kit: declare a domain once, serve it as REST + OpenAPI + MCP + oracle."""

from chaosproxy.domains.kit.declare import (
    CriticalArg,
    Domain,
    DomainState,
    Escalation,
    HarmfulAction,
    Solver,
    Task,
    ToolCallFailed,
    ToolClient,
    ToolError,
    ToolSpec,
)
from chaosproxy.domains.kit.journal import Journal, JournalEntry

__all__ = [
    "CriticalArg",
    "Domain",
    "DomainState",
    "Escalation",
    "HarmfulAction",
    "Journal",
    "JournalEntry",
    "Solver",
    "Task",
    "ToolCallFailed",
    "ToolClient",
    "ToolError",
    "ToolSpec",
]
