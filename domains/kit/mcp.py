"""The MCP face of a domain: a FastMCP server whose tools run through the same EpisodeStore.

Each tool is a `Tool` subclass with the kit's own input and output schemas rather than a
FastMCP FunctionTool: the arguments are then validated by the same pydantic model as on
REST, and errors carry the same details as REST's error body.

An error is an `isError` result with *no* `structuredContent`: strict clients (the Node
SDK, the official `mcp` SDK) check structuredContent against the tool's `outputSchema`
even on errors, and an error body never matches it. The details travel instead as the
text content (the REST error body as JSON, plus `status`) and in `_meta` under
`io.chaosproxy/error` (the same `error` object), where `McpToolClient` reads them.
"""

from __future__ import annotations

import json
from typing import Any

from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.schemas import ToolSchema
from chaosproxy.domains.kit.store import DEFAULT_EPISODE, EpisodeStore, parse_step
from chaosproxy.domains.kit.web import (
    EPISODE_HEADER,
    IDEMPOTENCY_META,
    RESTARTED_META,
    STEP_HEADER,
)
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context, get_http_headers
from fastmcp.tools.base import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import PrivateAttr

ERROR_META = "io.chaosproxy/error"


def error_result(error: KitError) -> ToolResult:
    body = error.body()
    body["error"]["status"] = error.status
    return ToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        meta={ERROR_META: body["error"]},
        is_error=True,
    )


class KitTool(Tool):
    """One domain tool on MCP; the episode and step come from the HTTP request headers."""

    _store: EpisodeStore | None = PrivateAttr(default=None)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        assert self._store is not None
        headers = get_http_headers(include={EPISODE_HEADER, STEP_HEADER})
        try:
            step = parse_step(headers.get(STEP_HEADER))
            outcome = await self._store.call(
                self.name,
                arguments,
                episode=headers.get(EPISODE_HEADER) or DEFAULT_EPISODE,
                step=step,
                transport="mcp",
                idempotency_key=_idempotency_key(),
            )
        except KitError as error:
            return error_result(error)
        meta = {RESTARTED_META: "evicted"} if outcome.restarted else None
        return ToolResult(structured_content=outcome.result, meta=meta)


def _idempotency_key() -> str | None:
    """The key a client put in the request's `_meta` (MCP has no per-call headers)."""
    request_context = get_context().request_context
    meta = request_context.meta if request_context is not None else None
    key = meta.get(IDEMPOTENCY_META) if isinstance(meta, dict) else None
    return key if isinstance(key, str) and key else None


def kit_tool(store: EpisodeStore, schema: ToolSchema) -> KitTool:
    tool = KitTool(
        name=schema.name,
        description=schema.spec.description,
        parameters=schema.input_schema,
        output_schema=schema.output_schema,
        annotations=ToolAnnotations(idempotent_hint=schema.spec.idempotent),
    )
    tool._store = store
    return tool


def mcp_server(store: EpisodeStore) -> FastMCP:
    server: FastMCP = FastMCP(
        name=store.domain.name,
        instructions=store.domain.description or store.domain.title,
        dereference_schemas=False,
        mask_error_details=False,
    )
    for schema in store.tools.values():
        server.add_tool(kit_tool(store, schema))
    return server
