"""JSON-RPC and SSE framing, just enough to find and rewrite MCP tool calls."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from chaosproxy.errors import ChaosError
from chaosproxy.proxy import jsonbody
from chaosproxy.proxy.effects import Outcome, outcome_for

_TERMINATOR = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LONG_NUMBER = re.compile(rb"[0-9]{19}")
"""As `jsonbody`'s: integers orjson might read differently go to `json`."""


def parse_messages(body: bytes) -> list[dict[str, Any]] | None:
    """The JSON-RPC messages of a request or response body (a single one or a batch).

    None when the body is not JSON-RPC, so the caller passes it through untouched;
    `BadJson` when it is hostile JSON (see `jsonbody`).
    """
    data = jsonbody.loads(body)
    if isinstance(data, dict):
        return [data] if data.get("jsonrpc") == "2.0" else None
    if not isinstance(data, list) or not data:
        return None
    if not all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in data):
        return None
    return data


def is_batch(body: bytes) -> bool:
    return body.lstrip()[:1] == b"["


@dataclass(slots=True)
class SseEvent:
    """One server-sent event; `raw` is the exact bytes received, forwarded when untouched.

    `data_bytes` is the event's data as received (its `data:` lines joined by LF); `data`
    decodes it when asked (a relayed event that is never read is never decoded)."""

    raw: bytes
    data_bytes: bytes = b""
    event: str | None = None
    id: str | None = None
    retry: str | None = None
    comments: list[str] = field(default_factory=list)

    @property
    def data(self) -> str:
        return self.data_bytes.decode("utf-8", errors="replace")

    def message(self) -> dict[str, Any] | None:
        """The JSON-RPC message carried in `data`, if any."""
        data = self.data_bytes
        if not data:
            return None
        try:
            value = _loads(data)
        except (json.JSONDecodeError, RecursionError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def with_message(self, message: dict[str, Any]) -> bytes:
        """This event re-encoded with another JSON-RPC message as its data."""
        lines = []
        if self.event is not None:
            lines.append(f"event: {self.event}")
        lines.append("data: " + json.dumps(message, separators=(",", ":"), ensure_ascii=False))
        if self.id is not None:
            lines.append(f"id: {self.id}")
        if self.retry is not None:
            lines.append(f"retry: {self.retry}")
        return ("\n".join(lines) + "\n\n").encode()


def _loads(data: bytes) -> Any:
    """`json.loads` of the data as text, read by orjson where it gives the same value.

    orjson reads the UTF-8 bytes themselves; what it refuses (invalid UTF-8, NaN, lone
    surrogates, nesting past its limit) and runs of 19 digits (integers it would read as
    floats) go to `json` with the text decoded as before, which returns or raises what it
    always did (see `jsonbody.parse`)."""
    if _LONG_NUMBER.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data.decode("utf-8", errors="replace"))


def _parse_event(raw: bytes) -> SseEvent:
    """The fields of one event; lines end at CRLF, LF or CR (the SSE spec's line ends,
    which `bytes.splitlines` splits at and nothing else: U+2028 in a JSON string is data)."""
    event = SseEvent(raw=raw)
    data_lines: list[bytes] = []
    for line in raw.splitlines():
        if not line:
            continue
        name, _, value = line.partition(b":")
        if not name:
            event.comments.append(value.decode("utf-8", errors="replace"))
            continue
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data_lines.append(value)
        elif name == b"event":
            event.event = value.decode("utf-8", errors="replace")
        elif name == b"id":
            event.id = value.decode("utf-8", errors="replace")
        elif name == b"retry":
            event.retry = value.decode("utf-8", errors="replace")
    if data_lines:
        event.data_bytes = data_lines[0] if len(data_lines) == 1 else b"\n".join(data_lines)
    return event


class EventTooLarge(ChaosError, ValueError):
    """An SSE event longer than the parser's limit: the stream is broken off."""


class SseParser:
    """Splits a byte stream into events as they complete (chunks may split anywhere).

    An unfinished event longer than `limit` bytes raises `EventTooLarge` (a broken body
    to the relay). Each read is searched once (from just before where the last search
    stopped), not the whole unfinished event again.
    """

    def __init__(self, limit: int) -> None:
        self._buffer = bytearray()
        self._scanned = 0
        self._limit = limit

    def feed(self, chunk: bytes) -> list[SseEvent]:
        buffer = self._buffer
        buffer += chunk
        events: list[SseEvent] = []
        # a terminator (at most 4 bytes) may have begun in the last 3 bytes searched
        start = max(0, self._scanned - 3)
        while (match := _TERMINATOR.search(buffer, start)) is not None:
            raw = bytes(buffer[: match.end()])
            del buffer[: match.end()]
            events.append(_parse_event(raw))
            start = 0
        self._scanned = len(buffer)
        if len(buffer) > self._limit:
            raise EventTooLarge(f"an SSE event over {self._limit} bytes")
        return events

    def rest(self) -> bytes:
        """Bytes of an unfinished event left when the stream ended."""
        return bytes(self._buffer)


def is_reply_to(message: dict[str, Any] | None, request_id: Any) -> bool:
    return (
        message is not None
        and request_id is not None
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


def sse_events(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(
        b"event: message\ndata: " + json.dumps(m, ensure_ascii=False).encode() + b"\n\n"
        for m in messages
    )


def rpc_outcome(message: dict[str, Any], status: int, tool_call: bool) -> Outcome:
    """The log's outcome for a JSON-RPC reply sent with HTTP `status`."""
    if status >= 400:
        return outcome_for(status, tool_call=tool_call)
    if "error" in message:
        return "rpc_error"
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError"):
        return "tool_error"
    return "ok"
