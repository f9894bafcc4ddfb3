"""One MCP client configured for OAuth, through an `Unauthorized` proxy: list tools, make
one call, and print JSON: what the call gave, how long it took, and whether the client's
OAuth flow got as far as sending a user to an authorization page (which waits for a human:
a hang in an agent).

    python -I drive_oauth.py CLIENT URL

Only the standard library and the client under test are imported here (see drive.py).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

ARGUMENTS = {"start_date": "2026-03-02", "end_date": "2026-03-06"}
BOUND_S = 20
REDIRECTED: list[str] = []


def _redirect_guard() -> dict[str, Any]:
    async def redirect(url: str) -> None:
        REDIRECTED.append(url)
        raise RuntimeError("the client sent the user to an authorization page")

    async def callback() -> Any:
        raise RuntimeError("the client waited for an authorization callback")

    return {"redirect_handler": redirect, "callback_handler": callback}


class _Memory:
    """The SDK's TokenStorage, in memory: nothing stored, nothing read."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


def _sdk_provider(url: str) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    metadata = OAuthClientMetadata.model_validate(
        {"client_name": "chaosproxy-matrix", "redirect_uris": ["http://127.0.0.1:9/callback"]}
    )
    return OAuthClientProvider(url, metadata, _Memory(), **_redirect_guard())


async def _fastmcp(mode: str, url: str) -> Any:
    import fastmcp
    from fastmcp.client.auth import OAuth

    guard = _redirect_guard()

    class Guarded(OAuth):  # type: ignore[misc]
        """fastmcp opens a browser and serves a local callback; stand in for both."""

        async def redirect_handler(self, authorization_url: str) -> None:
            await guard["redirect_handler"](authorization_url)

        async def callback_handler(self) -> Any:
            return await guard["callback_handler"]()

    auth = Guarded(url)
    async with fastmcp.Client(url, mode=mode, auth=auth, timeout=10) as client:
        await client.list_tools()
        return await client.call_tool_mcp("list_meetings", ARGUMENTS)


async def _sdk(mode: str, url: str) -> Any:
    import httpx2
    import mcp
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(auth=_sdk_provider(url), timeout=10)
    async with mcp.Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        await client.list_tools()
        return await client.call_tool("list_meetings", ARGUMENTS)


async def main(client: str, url: str) -> None:
    out: dict[str, Any] = {"kind": None, "message": None, "redirected": False}
    started = time.monotonic()
    try:
        if client.startswith("fastmcp-"):
            call = _fastmcp(client.removeprefix("fastmcp-"), url)
        else:
            call = _sdk(client.removeprefix("sdk-"), url)
        result = await asyncio.wait_for(call, BOUND_S)
        out["kind"] = "tool_error" if getattr(result, "is_error", False) else "ok"
    except TimeoutError:
        out["kind"], out["message"] = "hang", f"no outcome in {BOUND_S} s"
    except Exception as exc:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]  # the SDK's task groups wrap the failure
        out["kind"], out["message"] = "raised", f"{type(exc).__name__}: {exc}"[:600]
    out["seconds"] = round(time.monotonic() - started, 3)
    out["redirected"] = bool(REDIRECTED)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
