"""Helpers shared by the proxy tests (a module of its own: `conftest` is not importable
by name when several test folders have one)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from chaosproxy.faults import Profile
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.records import CALLS_FILE, CallRecord, read_jsonl

FAST = {
    "TransientTimeout": {"delay_s": 0.05},
    "LostReply": {"delay_s": 0.05},
    "HighLatency": {"min_s": 0.2, "max_s": 0.2},
}


def forced(fault: str, **params: Any) -> Profile:
    """A profile that gives every tool call `fault` (rate 1.0), with short delays."""
    merged = {**FAST.get(fault, {}), **params}
    data: dict[str, Any] = {
        "name": f"force-{fault}",
        "failure_rate": 1.0,
        "weights": {fault: 1.0},
        "params": {fault: merged} if merged else {},
        "hints": {
            "toy": {
                "critical_args": {
                    "get_item": {"item_id": {"kind": "choice", "values": ["A1", "B2", "C3"]}}
                },
                "tools": {"add_note": {"idempotent": False}, "get_item": {"idempotent": True}},
            }
        },
    }
    return Profile.model_validate(data)


def control(proxy: ProxyServer) -> tuple[str, dict[str, str]]:
    """The control API's base URL (`.../_chaos`) and the headers that authorise a call."""
    return f"{proxy.control_url}/_chaos", {"Authorization": f"Bearer {proxy.token}"}


def read_log(run_dir: Path) -> list[CallRecord]:
    path = run_dir / CALLS_FILE
    return list(read_jsonl(path, CallRecord)) if path.exists() else []


ProxyFactory = Callable[..., AbstractAsyncContextManager[ProxyServer]]


async def read_reply(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 reply from a raw socket: status, headers (lower-cased names), body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {
        k.strip().lower(): v.strip()
        for k, _, v in (line.partition(":") for line in lines[1:] if line)
    }
    length = int(headers.get("content-length", "0"))
    body = await asyncio.wait_for(reader.readexactly(length), 5) if length else b""
    return status, headers, body


def logged(proxy: ProxyServer, wanted: Callable[[dict[str, Any]], bool]) -> asyncio.Event:
    """An event set once the proxy has finished (answered and logged) a request whose
    CallRecord fields match `wanted`: tests wait on it instead of sleeping (it is told by
    `finish`, through the core's observers)."""
    event = asyncio.Event()

    def observe(fields: dict[str, Any], headers: Any) -> None:
        if wanted(fields):
            event.set()

    proxy.core.observers.append(observe)
    return event


async def until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Wait for `condition` to hold (checked on every loop turn), failing after `timeout_s`."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), timeout_s)
