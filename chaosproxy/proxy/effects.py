"""The sans-I/O vocabulary between protocol adapters, the relay and `finish`.

Adapters (`chaosproxy.proxy.protocols`) turn bytes into a `ToolCall` and effects into one
of the outcomes here; they never send, write, flush, reset or log. `finish` (the only code
that does) takes an outcome and answers. Nothing here touches a socket or a file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from multidict import CIMultiDict
from yarl import URL

Target = Literal["tool", "model"]
Outcome = Literal["ok", "tool_error", "http_error", "rpc_error", "reset", "timeout"]
Kind = Literal["tool_call", "protocol", "model_call"]
Headers = CIMultiDict[str] | dict[str, str]

CLIENT_GONE = 499
"""Status logged when the client hung up before the reply (nginx's convention)."""
RESET_STATUS = 0
"""Status logged when the proxy closed the connection instead of answering."""
JSON_HEADERS = {"Content-Type": "application/json"}


@dataclass(slots=True)
class ToolCall:
    """One call as an adapter parsed it. `arguments` None: the body is no JSON object."""

    tool: str
    arguments: dict[str, Any] | None
    target: Target = "tool"
    session: bool = False
    """An MCP call inside a session (it carries `Mcp-Session-Id`)."""
    stream: bool = False
    """A model call that asked for a streamed reply."""


@dataclass(slots=True)
class Outgoing:
    """The upstream request an adapter renders from the forwarded arguments.

    `headers`: set on top of the client's (the pipeline adds episode and step)."""

    method: str
    url: URL
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    streaming: bool = False


@dataclass(slots=True)
class Reply:
    """A whole upstream reply, read: what adapters parse and render from."""

    status: int
    headers: CIMultiDict[str]
    raw: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")


@dataclass(slots=True)
class Said:
    """What an adapter learnt for the log while parsing and rendering; `finish` copies
    every field that is set into the record."""

    note: str | None = None
    usage: dict[str, Any] | None = None
    retry_after_s: float | None = None
    seen: Callable[[Any], None] | None = None
    """Told every reply body the adapter parsed (a model reply, or each streamed event's
    JSON): the call's trace, when tracing is on (the adapter stays free of I/O)."""


# ---- outcomes: what `finish` turns into a reply ---------------------------------------


@dataclass(slots=True)
class Rendered:
    """A whole reply: the service's, or the one the proxy sends instead.

    `outcome` None: derived from the status."""

    status: int
    body: bytes
    headers: Headers = field(default_factory=dict)
    outcome: Outcome | None = None


@dataclass(slots=True)
class Cut:
    """Close the connection without (the rest of) a reply, as a crashing server would."""

    bytes_out: int = 0


@dataclass(slots=True)
class EndStream:
    """The stream ends cleanly before the call's reply (the service did run)."""

    status: int
    bytes_out: int = 0


@dataclass(slots=True)
class InStream:
    """The call's reply is (or the stream ended with) an event of an open stream: logged
    with `status` / `outcome`; the relay writes the bytes after `finish` returns."""

    status: int
    outcome: Outcome
    bytes_out: int
    error: str | None = None


@dataclass(slots=True)
class Gone:
    """The client hung up while the request was in flight."""

    bytes_out: int = 0


@dataclass(slots=True)
class Failed:
    """The proxy could not complete the call: `status` with the proxy's error body (an
    upstream failure, or a crash of the engine or an adapter)."""

    status: int
    kind: str
    message: str
    outcome: Outcome = "http_error"
    error: str | None = None
    """What the log's `error` says (default: `kind: message`)."""


Finished = Rendered | Cut | EndStream | InStream | Gone | Failed


# ---- per stream event: what a protocol's stream rules decide --------------------------


@dataclass(slots=True)
class Forward:
    """Pass the event's bytes (`data`: the event as received, or rewritten)."""

    data: bytes


@dataclass(slots=True)
class AskEngine:
    """The event is the call's reply: ask the engine with (`status`, `body`), then render."""

    status: int
    body: Any
    message: dict[str, Any]


@dataclass(slots=True)
class ReplyEvent:
    """The call's reply goes out now: log it, then write `data`."""

    data: bytes
    status: int
    outcome: Outcome


EventStep = Forward | AskEngine | ReplyEvent | Cut | EndStream | Rendered


# ---- helpers every protocol shares -----------------------------------------------------


_NOT_AS_JSON_WRITES = re.compile(rb"[0-9][eE]|0\.0000|null")
"""Where orjson's text may differ from `json.dumps`'s: a float in exponent form or below
1e-4 (`json` writes `1e-05` and `1e+16`, orjson `0.00001` and `1e16`), and `null`, which
orjson also writes for NaN and infinities (`json`: `NaN`, `Infinity`). Text that merely
contains these goes to `json` too (slower, never different)."""
_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
_ORJSON_STRICT |= orjson.OPT_PASSTHROUGH_DATETIME


def encode_body(body: Any) -> bytes:
    """`json.dumps(body, separators=(",", ":"), ensure_ascii=False)` as UTF-8, byte for byte.

    orjson writes it where its text is the same: the proxy's synthetic replies and the
    bodies faults rewrite (plain dicts, lists, text, numbers). It refuses what it would
    write differently or not at all (keys that are not text, integers over 64 bits, lone
    surrogates, subclasses, dataclasses, dates: `json` then writes, or raises, as it always
    did); `_NOT_AS_JSON_WRITES` catches the rest."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    try:
        fast = orjson.dumps(body, option=_ORJSON_STRICT)
    except orjson.JSONEncodeError:
        fast = b"null"
    if _NOT_AS_JSON_WRITES.search(fast) is None:
        return fast
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The proxy's error shape, for its own answers (never a service's or a fault's)."""
    return {"error": {"type": kind, "message": message, "source": "chaosproxy"}}


def outcome_for(status: int, *, tool_call: bool) -> Outcome:
    if status == 504:
        return "timeout"
    if status >= 500 or status in (429, 403, 401):
        return "http_error"
    if status >= 400:
        return "tool_error" if tool_call else "http_error"
    return "ok"


def retry_after_seconds(headers: Headers) -> float | None:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None
    return None
