"""A real domain service behind an ASGI wrapper that fails MCP the way real servers do.

`/f/<key>/<fault>/mcp` is the service's `/mcp` with `<fault>` applied to the first
tools/call on that path (later calls pass), so each client gets its own fresh fault:

- `session`: 404 with a JSON-RPC error, as a server that forgot `Mcp-Session-Id`, for
  that session from then on (a new session works);
- `auth`: 401 with `WWW-Authenticate: Bearer error="invalid_token"`; the OAuth discovery
  document a client may then fetch (`/.well-known/oauth-protected-resource...`) is a 404;
- `stream`: the reply's SSE stream ends before the reply;
- `removed`: the server no longer knows the tool (it answers for an unlisted name);
- `changed`: `notifications/tools/list_changed` on the call's stream before its reply.

The proxy's MCP faults inject the same answers; this wrapper pins what each client does
with them independently of the proxy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

FAULTS = ("session", "auth", "stream", "removed", "changed")
CHALLENGE = 'Bearer error="invalid_token", error_description="the access token expired"'
LIST_CHANGED = (
    b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'
)


@dataclass
class FaultyMcp:
    app: Any
    spent: set[str] = field(default_factory=set)
    forgotten: set[bytes] = field(default_factory=set)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/.well-known/"):
            await _answer(send, 404, {"error": "no authorization server here"})
            return
        parts = path.split("/")
        if scope["type"] != "http" or len(parts) != 5 or parts[1] != "f" or parts[4] != "mcp":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": "/mcp", "raw_path": b"/mcp"}
        fault = parts[3]
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body) if body else {}
        session = dict(scope["headers"]).get(b"mcp-session-id")
        if fault == "session" and session is not None and session in self.forgotten:
            pass  # a forgotten session stays forgotten
        elif request.get("method") != "tools/call" or path in self.spent:
            fault = ""
        else:
            self.spent.add(path)
            if fault == "session" and session is not None:
                self.forgotten.add(session)
        if fault == "session":
            error = {"code": -32001, "message": "Session not found"}
            await _answer(send, 404, {"jsonrpc": "2.0", "id": request.get("id"), "error": error})
            return
        if fault == "auth":
            extra = [(b"www-authenticate", CHALLENGE.encode())]
            await _answer(send, 401, {"error": "invalid_token"}, extra)
            return
        if fault == "stream":
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b": keep-alive\n\n"})
            return
        if fault == "removed":
            # The service itself answers for a name it does not list (the 2026-07-28 era
            # repeats the name in an `Mcp-Name` header, renamed alike).
            renamed = f"{request['params']['name']}_v1"
            request["params"]["name"] = renamed
            body = json.dumps(request).encode()
            scope["headers"] = [
                (key, renamed.encode() if key == b"mcp-name" else value)
                for key, value in scope["headers"]
                if key != b"content-length"
            ] + [(b"content-length", str(len(body)).encode())]
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> dict[str, Any]:
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, _announcing(send) if fault == "changed" else send)


def _announcing(send: Any) -> Any:
    """Puts the notification first on the reply's SSE stream (a JSON reply cannot carry it)."""
    pending = False

    async def wrapped(message: dict[str, Any]) -> None:
        nonlocal pending
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            pending = headers.get(b"content-type", b"").startswith(b"text/event-stream")
        elif message["type"] == "http.response.body" and pending:
            pending = False
            message = {**message, "body": LIST_CHANGED + message.get("body", b"")}
        await send(message)

    return wrapped


async def _answer(
    send: Any, status: int, payload: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"application/json"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})
