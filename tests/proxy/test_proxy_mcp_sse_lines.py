"""SSE lines end at CR, LF or CRLF only: a tool result whose JSON carries U+2028, U+2029
or U+0085 (legal unescaped in a JSON string; FastMCP sends them so) is still the call's
reply, not an event cut at the separator and a stream "without a reply"."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from proxy_helpers import ProxyFactory, read_log

from chaosproxy.proxy.jsonrpc import SseParser

PROTOCOL = "2025-11-25"


async def test_line_separator_in_a_result_is_data(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    text = "first\u2028second\u2029third\x85fourth"
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add_note", "arguments": {"text": text}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        url = f"{proxy.url}/e/sep/toy/mcp"
        started = await client.post(url, json=init, headers=headers)
        headers |= {"Mcp-Session-Id": started.headers["Mcp-Session-Id"]}
        headers |= {"MCP-Protocol-Version": PROTOCOL}
        response = await client.post(url, json=call, headers=headers)
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert "\u2028" in response.text  # sent unescaped: the case under test
    data = response.text.split("data: ", 1)[1].rsplit("\r\n\r\n", 1)[0]
    assert json.loads(data)["result"]["structuredContent"]["text"] == text
    record = next(r for r in read_log(tmp_path) if r.tool == "add_note")
    assert (record.outcome, record.error) == ("ok", None)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":12345678901234567890123}',
        b'{"a":NaN}',
        b'{"a":"\\ud800"}',
        b'{"a":"\xff"}',
        b'{"a":1e400}',
        b'{"a":-0.0,"b":[1,2.5]}',
        b"[1]",
        b'{"a":1}{',
        b'\xef\xbb\xbf{"a":1}',
        b'{"a":' + b"[" * 2000 + b"]" * 2000 + b"}",
    ],
)
def test_event_message_reads_what_json_reads(data: bytes) -> None:
    """orjson reads the event where it gives `json.loads`'s value; the rest goes to json."""
    try:
        expected = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        expected = None
    expected = expected if isinstance(expected, dict) else None
    (event,) = SseParser(1 << 20).feed(b"event: message\r\ndata: " + data + b"\r\n\r\n")
    assert repr(event.message()) == repr(expected)
