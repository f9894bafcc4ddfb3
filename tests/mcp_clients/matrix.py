"""The MCP clients agent builders run, each driven in its own process (see drive.py).

`run_client(client, sessions)` runs every session through one client and returns what it
saw; the tests put a proxy with one forced fault behind each session's URL.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("drive.py")
NODE_DRIVER = REPO / "tests" / "node" / "mcp_matrix.mjs"
LANGCHAIN_PYTHON = REPO / ".venv-langchain" / "bin" / "python"

# The official SDK's two protocol eras: the 2025-11-25 initialize handshake with a session,
# and 2026-07-28, stateless.
PYTHON_CLIENTS = [
    "fastmcp-legacy",
    "fastmcp-2026-07-28",
    "sdk-legacy",
    "sdk-2026-07-28",
    "openai-agents",
]
CLIENTS = [*PYTHON_CLIENTS, "node", "langchain"]

Call = tuple[str, dict[str, Any]]


@dataclass
class SessionSeen:
    """What one client saw in one session: the tool names it listed, and each call."""

    tools: list[str]
    calls: list[dict[str, Any]]
    connect_error: str | None = None
    list_changed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        return [call["kind"] for call in self.calls]


def require(client: str) -> None:
    """Skip a client whose runtime is missing here; in CI a missing client is a failure."""
    missing = None
    if client == "node" and (
        shutil.which("node") is None
        or not (REPO / "node_modules" / "@modelcontextprotocol").exists()
    ):
        missing = "node and `npm ci` (scripts/install.sh)"
    if client == "langchain" and not LANGCHAIN_PYTHON.exists():
        missing = ".venv-langchain (scripts/install.sh creates it)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{client}: {missing} is missing in CI")
        pytest.skip(f"{client}: {missing} is missing")


async def _run(argv: list[str], timeout: float) -> str:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd="/"
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{argv[:3]} did not finish in {timeout} s") from None
    if process.returncode != 0:
        raise AssertionError(f"{argv[:3]} exited {process.returncode}: {stderr.decode()[-2000:]}")
    return stdout.decode().strip().splitlines()[-1]


async def run_client(
    client: str, sessions: list[tuple[str, list[Call]]], timeout: float = 120
) -> list[SessionSeen]:
    """Each session (url, calls) through `client`, in order: list tools, then the calls."""
    require(client)
    if client == "node":
        seen = []
        for url, calls in sessions:
            out = json.loads(await _run(["node", str(NODE_DRIVER), url, json.dumps(calls)], 60))
            seen.append(
                SessionSeen(
                    tools=out["tools"],
                    calls=out["calls"],
                    connect_error=out["connectError"],
                    list_changed=out["listChanged"],
                    extra={"listed_s": out["listedS"]},
                )
            )
        return seen
    python = str(LANGCHAIN_PYTHON) if client == "langchain" else sys.executable
    payload = json.dumps([{"url": url, "calls": calls} for url, calls in sessions])
    results = json.loads(await _run([python, "-I", str(DRIVER), client, payload], timeout))
    return [
        SessionSeen(
            tools=out["tools"],
            calls=out["calls"],
            connect_error=out["connect_error"],
            list_changed=out.get("list_changed", 0),
            extra={
                k: v
                for k, v in out.items()
                if k not in {"tools", "calls", "connect_error", "list_changed"}
            },
        )
        for out in results
    ]
