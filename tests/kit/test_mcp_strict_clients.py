"""Tool errors are results, not exceptions, in strict MCP clients (issue 12).

Strict clients check a result's structuredContent against the tool's outputSchema, which
they cache from tools/list; an error body in structuredContent never matches it, so the
Node SDK threw -32602 for every ordinary tool error. The kit now puts error details in the
text content and `_meta` only; these tests list tools first, as agents do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from chaosproxy.domains.kit.client import McpToolClient
from chaosproxy.domains.kit.declare import ToolCallFailed
from test_mcp import MODES, sdk_client

REPO = Path(__file__).resolve().parents[2]
NODE_SDK = REPO / "node_modules" / "@modelcontextprotocol" / "sdk"
NODE_CLIENT = REPO / "tests" / "node" / "mcp_list_and_call.mjs"

ERRORS = [
    # (tool, arguments, status, field): a domain refusal and an invalid argument
    (
        "create_order",
        {"sku": "SKU-9", "quantity": 1, "customer": {"name": "A", "email": "a@x"}},
        404,
        "sku",
    ),
    (
        "create_order",
        {"sku": "SKU-1", "quantity": 0, "customer": {"name": "A", "email": "a@x"}},
        422,
        "quantity",
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tool", "arguments", "status", "field"), ERRORS)
async def test_official_sdk_returns_tool_errors_as_results_after_list_tools(
    base_url: str, mode: str, tool: str, arguments: dict[str, Any], status: int, field: str
) -> None:
    async with sdk_client(f"{base_url}/mcp", mode, {}) as client:
        listed = await client.list_tools()
        assert any(t.name == tool and t.output_schema for t in listed.tools)
        result = await client.call_tool(tool, arguments)
    assert result.is_error is True
    assert result.structured_content is None
    detail = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
    assert (detail["status"], detail["field"]) == (status, field)


@pytest.mark.skipif(
    not NODE_SDK.is_dir() and not os.environ.get("CI"),
    reason="run scripts/install.sh (npm ci) first",
)
@pytest.mark.parametrize(("tool", "arguments", "status", "field"), ERRORS)
def test_node_sdk_returns_tool_errors_as_results_after_list_tools(
    base_url: str, tool: str, arguments: dict[str, Any], status: int, field: str
) -> None:
    node = shutil.which("node")
    assert node is not None, "the Node SDK is installed but node is not on PATH"
    run = subprocess.run(
        [node, str(NODE_CLIENT), f"{base_url}/mcp", tool, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr  # a thrown -32602 exits non-zero
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert tool in seen["tools"]
    assert seen["isError"] is True and seen["structuredContent"] is None
    detail = json.loads(seen["text"])["error"]
    assert (detail["status"], detail["field"]) == (status, field)


@pytest.mark.parametrize("mode", MODES)
async def test_kit_client_reads_status_and_field_from_meta(
    base_url: str, episode: str, mode: str
) -> None:
    tool, arguments, status, field = ERRORS[1]
    async with McpToolClient(f"{base_url}/mcp", episode=episode, mode=mode) as client:
        await client.list_tools()
        with pytest.raises(ToolCallFailed) as failed:
            await client.call(tool, **arguments)
    assert failed.value.status == status
    assert failed.value.body["error"]["field"] == field
    assert "quantity" in failed.value.message


def test_kit_client_reads_proxy_made_and_older_error_results() -> None:
    from chaosproxy.domains.kit.client import error_detail

    proxy_text = "503 Service Unavailable: The service is temporarily unavailable; please retry."
    assert error_detail(None, None, proxy_text)["status"] == 503
    older = {"error": {"type": "tool_error", "message": "m", "status": 409, "retry_after": 2}}
    assert error_detail(None, older, "m") == older["error"]
    meta = {"io.chaosproxy/error": {"message": "x", "status": 429, "retry_after": 1.5}}
    assert error_detail(meta, None, "x")["retry_after"] == 1.5
    assert error_detail(None, None, "plain words") == {}
