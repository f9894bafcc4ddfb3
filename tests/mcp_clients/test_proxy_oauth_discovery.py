"""After the proxy's `Unauthorized` (401 + WWW-Authenticate), an MCP client configured for
OAuth runs its authorization discovery against the proxy. The proxy answers each request
of it (RFC 9728 / RFC 8414 / OpenID metadata, dynamic registration) with a JSON 404 naming
the fault, so every SDK fails at once with that message and never sends anyone to an
authorization page (which, in an agent, waits for ever)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from matrix import REPO, _run, require

from chaosproxy.faults import Profile

if TYPE_CHECKING:
    # Only a type: `conftest` is an ambiguous module name when every test folder loads.
    from conftest import ProxyFactory

DRIVER = Path(__file__).with_name("drive_oauth.py")
NODE_DRIVER = REPO / "tests" / "node" / "mcp_oauth.mjs"
OAUTH_CLIENTS = ["fastmcp-legacy", "fastmcp-2026-07-28", "sdk-legacy", "sdk-2026-07-28", "node"]
UNAUTHORIZED = Profile.model_validate(
    {"name": "unauthorized", "failure_rate": 1.0, "weights": {"Unauthorized": 1.0}}
)
BOUND_S = 20


@pytest.mark.parametrize("client", OAUTH_CLIENTS)
async def test_oauth_client_fails_clearly(client: str, make_proxy: ProxyFactory) -> None:
    require(client)
    async with make_proxy(UNAUTHORIZED) as proxy:
        url = f"{proxy.url}/e/oauth-{client}/scheduling/mcp"
        argv = (
            ["node", str(NODE_DRIVER), url]
            if client == "node"
            else [sys.executable, "-I", str(DRIVER), client, url]
        )
        seen = json.loads(await _run(argv, 90))
    assert seen["kind"] == "raised", seen
    assert seen["redirected"] is False, seen
    assert seen["seconds"] < BOUND_S, seen
    assert "chaosproxy has no authorization server" in seen["message"], seen
    if client != "node":
        # The Python SDK's flow reaches dynamic registration, which names the answer.
        assert "Registration failed: 404" in seen["message"], seen


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/e/ep1/scheduling/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/register",
    ],
)
async def test_discovery_answers(path: str, make_proxy: ProxyFactory) -> None:
    async with make_proxy("lambda0.0") as proxy, httpx.AsyncClient() as http:
        method = "POST" if path == "/register" else "GET"
        answer = await http.request(
            method, f"{proxy.url}{path}", json={} if method == "POST" else None
        )
        other = await http.get(f"{proxy.url}/.well-known/security.txt")
    assert answer.status_code == 404
    assert answer.json()["error"] == "no_authorization_server"
    assert "Reconnect with the credentials you were given" in answer.json()["error_description"]
    assert other.status_code == 404 and other.json()["error"]["type"] == "not_found"
