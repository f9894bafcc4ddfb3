"""Tool-calling clients over REST and MCP, and a small oracle client.

Reference solutions, scripted agents and tests call tools through these, so the same code
runs over either transport, directly or through the proxy. Every failure (HTTP error,
tool error, broken body, lost connection) becomes `ToolCallFailed`; `status` is the HTTP
status, or 0 when no HTTP response arrived (timeout, reset, refused).
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import re
import ssl
import time
from functools import cache
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import quote

import httpx
import httpx2
from chaosproxy.domains.kit.declare import ToolCallFailed
from fastmcp import Client as FastMCPClient
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import StreamableHttpTransport
from mcp_types import ToolListChangedNotification

EPISODE_HEADER = "X-Chaos-Episode"
STEP_HEADER = "X-Chaos-Step"
IDEMPOTENCY_HEADER = "Idempotency-Key"
SCHEMA_MISMATCH = "Invalid structured content"
"""How the MCP SDK reports a result that fails the output schema it cached from tools/list."""
UNKNOWN_TOOL = "unknown tool"
"""How MCP servers (fastmcp, the SDK) word a call to a tool they do not list (lower-cased)."""
IDEMPOTENCY_META = "io.chaosproxy/idempotency-key"
ERROR_META = "io.chaosproxy/error"
"""Where the kit's MCP error results carry the REST error object (no structuredContent)."""
STATUS_PREFIX = re.compile(r"^([1-5][0-9]{2}) [A-Z]")
McpMode = Literal["legacy", "2026-07-28"]


@cache
def shared_ssl_context() -> ssl.SSLContext:
    """One verified TLS context for every client: building one costs ~40 ms of CPU each time."""
    return ssl.create_default_context()


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(body: Any, fallback: str) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
        if isinstance(message, str):
            return message
    return fallback


class SessionLost(ToolCallFailed):
    """HTTP 404 on a request that carried `Mcp-Session-Id`: the server forgot the session.

    A careful client initialises a new session and sends the call again; the call never
    reached a tool, so this is safe for any tool.
    """


class AuthRequired(ToolCallFailed):
    """HTTP 401: the credentials were refused (expired, revoked). `challenge` is the
    `WWW-Authenticate` header. A careful client backs off, authenticates again with the
    credentials it was given (a new session), and sends the call again."""

    def __init__(self, message: str, *, challenge: str | None, retry_after: float | None) -> None:
        super().__init__(401, message, retry_after=retry_after)
        self.challenge = challenge


class ToolNotListed(ToolCallFailed):
    """The server does not know the tool (removed or renamed mid-session). A careful client
    lists the tools again before deciding whether to call it again."""


class _ToolListWatch(MessageHandler):
    """Remembers `notifications/tools/list_changed` until the client lists tools again."""

    def __init__(self) -> None:
        self.changed = False

    async def on_tool_list_changed(self, message: ToolListChangedNotification) -> None:
        self.changed = True


class _AsyncContext:
    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Acquire connections; called by `async with`."""

    async def close(self) -> None:
        """Release connections; called at the end of `async with`."""


class RestToolClient(_AsyncContext):
    """Calls `POST {base_url}/tools/{tool}`.

    With `step_header`, numbers its calls in X-Chaos-Step (what the proxy does otherwise).
    """

    def __init__(
        self,
        base_url: str,
        episode: str | None = None,
        http: httpx.AsyncClient | None = None,
        step_header: bool = False,
        timeout_s: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.episode = episode
        self.step_header = step_header
        self.steps = 0
        self._own_http = http is None
        self._http = (
            http
            if http is not None
            else httpx.AsyncClient(timeout=timeout_s, verify=shared_ssl_context())
        )

    async def close(self) -> None:
        if self._own_http:
            await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.episode is not None:
            headers[EPISODE_HEADER] = self.episode
        if self.step_header:
            headers[STEP_HEADER] = str(self.steps)
        return headers

    async def list_tools(self) -> list[dict[str, Any]]:
        """The `GET /tools` listing: name, description, input_schema, output_schema, ..."""
        try:
            response = await self._http.get(f"{self.base_url}/tools", headers=self._headers())
        except httpx.HTTPError as error:
            raise ToolCallFailed(0, f"cannot list tools: {error!r}") from error
        if not response.is_success:
            raise ToolCallFailed(response.status_code, "cannot list tools")
        tools = response.json().get("tools", [])
        return [tool for tool in tools if isinstance(tool, dict)]

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        return await self.call_with(tool, arguments)

    async def call_with(
        self, tool: str, arguments: dict[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Call a tool; with `idempotency_key`, a retry of this call cannot apply twice."""
        self.steps += 1
        url = f"{self.base_url}/tools/{tool}"
        headers = self._headers()
        if idempotency_key is not None:
            headers[IDEMPOTENCY_HEADER] = idempotency_key
        try:
            response = await self._http.post(url, json=arguments, headers=headers)
        except httpx.TimeoutException as error:
            raise ToolCallFailed(0, f"timeout calling {tool}: {error!r}") from error
        except httpx.HTTPError as error:
            raise ToolCallFailed(0, f"connection failed calling {tool}: {error!r}") from error
        try:
            body: Any = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = response.text
            if response.is_success:
                raise ToolCallFailed(
                    response.status_code,
                    f"{tool} returned a body that is not valid JSON",
                    body=body,
                ) from None
        if response.status_code == 401:
            raise AuthRequired(
                _error_message(body, f"{tool} refused the credentials (HTTP 401)"),
                challenge=response.headers.get("www-authenticate"),
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if not response.is_success:
            raise ToolCallFailed(
                response.status_code,
                _error_message(body, f"{tool} failed with HTTP {response.status_code}"),
                retry_after=parse_retry_after(response.headers.get("retry-after")),
                body=body,
            )
        if not isinstance(body, dict):
            raise ToolCallFailed(
                response.status_code,
                f"{tool} returned {type(body).__name__}, not a JSON object",
                body=body,
            )
        return body


class McpToolClient(_AsyncContext):
    """Calls tools over MCP streamable HTTP, in the legacy (session) or the 2026-07-28 era.

    The MCP SDK turns an HTTP error answer (a 429 or 503 from a proxy) into a generic
    JSON-RPC error and drops its status; a response hook keeps the last HTTP error so
    ToolCallFailed still carries the status and Retry-After. A tool error result carries
    them in `_meta["io.chaosproxy/error"]` (`status`, `field`, `retry_after`), as the kit's
    servers send (`error_detail` also reads older and proxy-made error results).

    The MCP-specific failures raise subclasses a careful caller can act on: `SessionLost`
    (re-initialise with `reconnect`), `AuthRequired` (back off, `reconnect` with the same
    `token`), `ToolNotListed` (list tools again). `tools_changed` is true after the server
    announced `notifications/tools/list_changed` until the next `list_tools`. The client
    acts on none of these itself: what to do is the agent's policy.
    """

    def __init__(
        self,
        mcp_url: str,
        episode: str | None = None,
        mode: McpMode = "legacy",
        timeout_s: float = 30.0,
        token: str | None = None,
    ) -> None:
        self.mcp_url = mcp_url
        self.episode = episode
        self.mode = mode
        self.timeout_s = timeout_s
        self.token = token
        self._http_error: httpx2.Response | None = None
        self._watch = _ToolListWatch()
        self._client: FastMCPClient[Any] = self._new_client()

    @property
    def tools_changed(self) -> bool:
        return self._watch.changed

    def _new_client(self) -> FastMCPClient[Any]:
        headers = {EPISODE_HEADER: self.episode} if self.episode is not None else {}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return FastMCPClient(
            StreamableHttpTransport(self.mcp_url, headers=headers, httpx_client_factory=self._http),
            mode=self.mode,
            timeout=self.timeout_s,
            message_handler=self._watch,
        )

    async def reconnect(self) -> None:
        """Start a new session: after a reset connection the old one cannot carry calls."""
        await self.close()
        self._client = self._new_client()
        await self.open()

    def _http(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
        **options: Any,
    ) -> httpx2.AsyncClient:
        async def keep_errors(response: httpx2.Response) -> None:
            if response.status_code >= 400:
                self._http_error = response

        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(30.0, read=300.0),
            auth=auth,
            verify=shared_ssl_context(),
            event_hooks={"response": [keep_errors]},
            **options,
        )

    async def open(self) -> None:
        try:
            await self._client.__aenter__()
        except Exception as error:
            raise ToolCallFailed(
                0, f"cannot connect to MCP server {self.mcp_url}: {error!r}"
            ) from error

    async def close(self) -> None:
        """End the session. A session already broken (a reset connection, a dead stream)
        fails while closing too; that changes nothing for the caller, so it is not raised."""
        with contextlib.suppress(Exception):
            await self._client.__aexit__(None, None, None)

    async def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools/list; it also refreshes the schemas results are checked against."""
        self._http_error = None
        self._watch.changed = False
        try:
            tools = await self._client.list_tools()
        except Exception as error:
            raise self._http_failure("tools/list", error) from error
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        return await self.call_with(tool, arguments)

    async def call_with(
        self, tool: str, arguments: dict[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Call a tool; the idempotency key travels in the request's `_meta`."""
        self._http_error = None
        meta = {IDEMPOTENCY_META: idempotency_key} if idempotency_key is not None else None
        try:
            result = await self._client.call_tool_mcp(tool, arguments, meta=meta)
        except Exception as error:
            if self._http_error is None and SCHEMA_MISMATCH in str(error):
                raise ToolCallFailed(
                    200, f"{tool} returned a result that does not match its schema: {error}"
                ) from error
            if self._http_error is None and UNKNOWN_TOOL in str(error).lower():
                raise ToolNotListed(404, f"{tool}: {error}") from error
            raise self._http_failure(f"MCP call {tool}", error) from error
        structured = result.structured_content
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            detail = error_detail(result.meta, structured, text)
            status = detail.get("status")
            retry_after = detail.get("retry_after")
            if not isinstance(status, int) and UNKNOWN_TOOL in text.lower():
                raise ToolNotListed(404, text or f"{tool} is not listed", body=text)
            raise ToolCallFailed(
                status if isinstance(status, int) else 400,
                str(detail.get("message") or text or f"{tool} returned an MCP error"),
                retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
                body={"error": detail} if detail else text,
            )
        if isinstance(structured, dict):
            return structured
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            raise ToolCallFailed(200, f"{tool} returned no structured content", body=text) from None
        if not isinstance(parsed, dict):
            raise ToolCallFailed(
                200, f"{tool} returned {type(parsed).__name__}, not a JSON object", body=parsed
            )
        return parsed

    def _http_failure(self, what: str, error: Exception) -> ToolCallFailed:
        """The failure an exception of the SDK stands for, from the HTTP answer behind it."""
        response = self._http_error
        if response is None:
            return ToolCallFailed(0, f"{what} failed: {error}")
        status = response.status_code
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        message = f"{what} failed with HTTP {status}: {error}"
        if status == 401:
            challenge = response.headers.get("www-authenticate")
            return AuthRequired(message, challenge=challenge, retry_after=retry_after)
        if status == 404 and "mcp-session-id" in response.request.headers:
            return SessionLost(404, f"{what}: the server forgot the MCP session (HTTP 404)")
        return ToolCallFailed(status, message, retry_after=retry_after)


def error_detail(meta: Any, structured: Any, text: str) -> dict[str, Any]:
    """The `error` object of an MCP error result, wherever the server put it.

    The kit's servers put it in `_meta` (and as JSON in the text); older servers put it in
    structuredContent; the proxy's in-band errors read "503 Service Unavailable: ...".
    """
    found = meta.get(ERROR_META) if isinstance(meta, dict) else None
    if isinstance(found, dict):
        return found
    with contextlib.suppress(ValueError):
        parsed = json.loads(text)
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            return dict(parsed["error"])
    if isinstance(structured, dict) and isinstance(structured.get("error"), dict):
        return dict(structured["error"])
    match = STATUS_PREFIX.match(text)
    if match is not None:
        return {"status": int(match.group(1)), "message": text}
    return {}


class OracleClient(_AsyncContext):
    """The oracle routes of one served domain: reset, state, journal, diff, tasks, hints."""

    def __init__(
        self,
        base_url: str,
        http: httpx.AsyncClient | None = None,
        timeout_s: float = 30.0,
        token: str | None = None,
    ) -> None:
        """`token`: the oracle's bearer token, when the service requires one."""
        self.base_url = base_url.rstrip("/") + "/_oracle"
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._own_http = http is None
        self._http = (
            http
            if http is not None
            else httpx.AsyncClient(timeout=timeout_s, verify=shared_ssl_context())
        )

    async def close(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        response = await self._http.request(
            method, f"{self.base_url}{path}", json=body, headers=self._headers
        )
        try:
            payload: Any = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = response.text
        if not response.is_success:
            raise ToolCallFailed(
                response.status_code,
                _error_message(
                    payload, f"oracle {method} {path} failed with HTTP {response.status_code}"
                ),
                body=payload,
            )
        if not isinstance(payload, dict):
            raise ToolCallFailed(
                response.status_code, f"oracle {path} returned a non-object", body=payload
            )
        return payload

    async def reset(
        self, episode: str, *, task_id: str | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if task_id is not None:
            body["task_id"] = task_id
        if state is not None:
            body["state"] = state
        return await self._request("POST", f"/episodes/{quote(episode, safe='')}/reset", body)

    async def state(self, episode: str) -> dict[str, Any]:
        return await self._request("GET", f"/episodes/{quote(episode, safe='')}/state")

    async def journal(self, episode: str) -> dict[str, Any]:
        return await self._request("GET", f"/episodes/{quote(episode, safe='')}/journal")

    async def diff(self, episode: str) -> list[dict[str, Any]]:
        changes: list[dict[str, Any]] = (
            await self._request("GET", f"/episodes/{quote(episode, safe='')}/diff")
        )["changes"]
        return changes

    async def delete(self, episode: str) -> None:
        await self._request("DELETE", f"/episodes/{quote(episode, safe='')}")

    async def tasks(self) -> list[dict[str, Any]]:
        tasks: list[dict[str, Any]] = (await self._request("GET", "/tasks"))["tasks"]
        return tasks

    async def hints(self) -> dict[str, Any]:
        return await self._request("GET", "/hints")
