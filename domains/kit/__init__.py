"""The domain kit: declare a domain once, serve it as REST + OpenAPI + MCP + oracle.

Where things are:
  declare.py   Domain, tools, tasks, hints (what domain authors use)
  journal.py   Journal / JournalEntry (what the oracle returns, what the scorer reads)
  app.py       asgi_app(domain): one Starlette app, routes as in docs/architecture.md §1
  store.py     per-episode state, locking, rollback, journaling (shared by both transports)
  schemas.py   per-tool argument models and JSON schemas; errors.py the error body
  rest.py / mcp.py / openapi.py / oracle.py   the four faces of a served domain (web.py: helpers)
  client.py    RestToolClient, McpToolClient, OracleClient (what agents and the runner use)
  testing.py   serve_app(app): a real 127.0.0.1 server in a thread, for tests and tools
"""

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
    current_episode,
    current_step,
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
    "current_episode",
    "current_step",
]
