"""The tool client an agent uses for its task's domain: REST or MCP, as the run asks."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from chaosproxy.agents.base import AgentContext
from chaosproxy.domains.kit.client import McpToolClient, RestToolClient


def open_transport(
    context: AgentContext,
) -> AbstractAsyncContextManager[RestToolClient | McpToolClient]:
    endpoints = context.endpoints[context.domain]
    if context.transport == "mcp":
        return McpToolClient(endpoints.mcp, timeout_s=context.timeout_s)
    return RestToolClient(endpoints.rest, timeout_s=context.timeout_s)
