"""Every fault type through the proxy as MCP clients see it: fastmcp and the mcp SDK, both eras."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from proxy_helpers import ProxyFactory, forced, read_log
from proxy_mcp_clients import CLIENTS, Seen, mcp_calls

GET = ("get_item", {"item_id": "A1"})
NOTE = ("add_note", {"text": "n"})


def rpc_error(status: str) -> Any:
    def check(seen: list[Seen], log: list[Any]) -> None:
        assert seen[0].kind == "rpc_error" and status in seen[0].message, seen[0]

    return check


def refused(seen: list[Seen], log: list[Any]) -> None:
    assert seen[0].kind == "rpc_error", seen[0]
    assert log[0].upstream_called is False


def ok_with(predicate: Any) -> Any:
    def check(seen: list[Seen], log: list[Any]) -> None:
        assert seen[0].kind == "ok", seen[0]
        assert predicate(seen[0].data()), seen[0]

    return check


def not_ok(seen: list[Seen], log: list[Any]) -> None:
    assert seen[0].kind in ("rpc_error", "client_error"), seen[0]


def tool_error(seen: list[Seen], log: list[Any]) -> None:
    assert seen[0].kind == "tool_error" and "503" in seen[0].text, seen[0]


def cut_or_rejected(seen: list[Seen], log: list[Any]) -> None:
    """A cut body: the client sees cut text (not JSON) or rejects the incomplete result."""
    if seen[0].kind == "ok":
        with pytest.raises(json.JSONDecodeError):
            json.loads(seen[0].text)
    else:
        assert seen[0].kind == "client_error", seen[0]


def stale(seen: list[Seen], log: list[Any]) -> None:
    counts = [s.data()["count"] for s in seen if s.kind == "ok"]
    assert len(counts) == 3 and counts != [1, 2, 3] and set(counts) <= {1, 2, 3}


CASES: list[tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]], Any]] = [
    ("TransientTimeout", {}, [GET], rpc_error("504")),
    ("ServerError", {}, [GET], refused),
    ("SoftRateLimit", {}, [GET], rpc_error("429")),
    ("HardRateLimit", {}, [GET], refused),
    ("ServerError", {"mcp_render": "jsonrpc_error"}, [GET], refused),
    ("ServerError", {"mcp_render": "tool_error", "statuses": [503]}, [GET], tool_error),
    ("BlockingWindow", {"p_block": 1.0}, [GET], tool_error),
    ("HighLatency", {}, [GET], ok_with(lambda d: d["item_id"] == "A1")),
    ("EmptyResponse", {}, [GET], ok_with(lambda d: d.get("tags", []) == [])),
    ("ParameterCorruption", {}, [GET], ok_with(lambda d: d["item_id"] != "A1")),
    ("AdversarialPayload", {}, [GET], ok_with(lambda d: d != {})),
    ("ConnectionReset", {}, [GET], not_ok),
    ("LostReply", {}, [NOTE], rpc_error("504")),
    ("PartialResponse", {"modes": ["truncate"]}, [GET], cut_or_rejected),
    ("StaleData", {}, [NOTE, NOTE, NOTE], stale),
]


@pytest.mark.parametrize(
    ("fault", "params", "calls", "check"),
    CASES,
    ids=[f"{c[0]}-{c[1].get('mcp_render', 'default')}" for c in CASES],
)
async def test_fault_seen_by_mcp_clients(
    make_proxy: ProxyFactory,
    tmp_path: Path,
    fault: str,
    params: dict[str, Any],
    calls: list[tuple[str, dict[str, Any]]],
    check: Any,
) -> None:
    async with make_proxy(forced(fault, **params)) as proxy:
        for kind, mode in CLIENTS:
            episode = f"{kind}-{mode}"
            seen = await mcp_calls(kind, mode, f"{proxy.url}/e/{episode}/toy/mcp", calls)
            log = [r for r in read_log(tmp_path) if r.episode == episode and r.kind == "tool_call"]
            assert len(log) == len(calls), (episode, log)
            # StaleData is drawn only once an earlier reply of the same call exists: call 2
            first = log[1] if fault == "StaleData" else log[0]
            assert first.fault is not None and first.fault.name == fault
            assert log[0].transport == "mcp" and log[0].rpc_method == "tools/call"
            check(seen, log)
