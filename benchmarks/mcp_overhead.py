"""MCP `tools/call` through chaosproxy vs direct: the same FastMCP server, with and without.

The server is a FastMCP app (one `echo` tool, streamable HTTP at /mcp, served by uvicorn
in its own process); chaosproxy runs `up --profile lambda0.0` in front of it with a run
directory (logging on). Each target gets its own MCP session (initialize, then
notifications/initialized), and wrk sends `tools/call` requests with fresh JSON-RPC ids
in that session. Rounds are interleaved; the table is the one of proxy_overhead.py.

    .venv/bin/python benchmarks/mcp_overhead.py [--rounds 5] [--seconds 3] [--before REV]

`--before REV`: a third target, that commit's proxy (`git archive` of its `chaosproxy/`,
as proxy_versions.py) in front of the same server, and the ratio of the two proxies' CPU
per call round by round (a change too small to see in separate runs shows here).

Needs wrk (`apt-get install -y wrk`). Loopback only, ephemeral ports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp
from proxy_overhead import (
    Measured,
    interleaved_rounds,
    load_note,
    print_table,
    run_wrk,
    start_chaosproxy,
    stop_all,
)
from proxy_versions import extract

SERVER = """
import socket, sys, uvicorn
from fastmcp import FastMCP

mcp = FastMCP("bench")

@mcp.tool
def echo(item_id: str, quantity: int) -> dict:
    return {"ok": True, "item": {"id": item_id, "qty": quantity}}

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
config = uvicorn.Config(mcp.http_app(path="/mcp"), log_level="warning", backlog=1024)
uvicorn.Server(config).run(sockets=[sock])
"""

ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}"


async def open_session(url: str) -> str:
    """initialize + notifications/initialized; the session id the server gave."""
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "mcp_overhead", "version": "1"},
        },
    }
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            try:
                async with session.post(url, json=hello, headers=headers) as response:
                    await response.read()
                    if response.status == 200:
                        sid = response.headers["Mcp-Session-Id"]
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(f"{url} did not answer initialize")
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        headers |= {"Mcp-Session-Id": sid, "Mcp-Protocol-Version": PROTOCOL}
        async with session.post(url, json=note, headers=headers) as response:
            await response.read()
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"item_id": "A1", "quantity": 2}},
        }
        async with session.post(url, json=call, headers=headers) as response:
            text = await response.text()
            if response.status != 200 or '"isError":false' not in text.replace(" ", ""):
                raise RuntimeError(f"tools/call through {url} failed: {response.status} {text}")
    return sid


def wrk_script(session_id: str) -> str:
    """tools/call with a new id per request (one wrk thread: one counter)."""
    arguments = json.dumps({"item_id": "A1", "quantity": 2})
    return f"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "{ACCEPT}"
wrk.headers["Mcp-Session-Id"] = "{session_id}"
wrk.headers["Mcp-Protocol-Version"] = "{PROTOCOL}"
counter = 1
request = function()
  counter = counter + 1
  local body = '{{"jsonrpc":"2.0","id":' .. counter .. ',"method":"tools/call",' ..
    '"params":{{"name":"echo","arguments":{arguments}}}}}'
  return wrk.format(nil, nil, nil, body)
end
"""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3, help="per measurement")
    parser.add_argument("--before", help="also measure this git revision's proxy")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("mcp_overhead.py needs wrk (apt-get install -y wrk)")
    processes: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        try:
            server, upstream = start_server()
            processes.append(server)
            proxy, proxied = start_chaosproxy(upstream, tmp / "run")
            processes.append(proxy)
            urls = {"direct mcp": f"{upstream}/mcp", "chaosproxy mcp": f"{proxied}/mcp"}
            pids = {"chaosproxy mcp": proxy.pid}
            if args.before:
                extract(args.before, tmp / "src")
                (tmp / "before").mkdir()
                old, old_url = start_chaosproxy(upstream, tmp / "before" / "run", tmp / "src")
                processes.append(old)
                urls[f"chaosproxy mcp {args.before}"] = f"{old_url}/mcp"
                pids[f"chaosproxy mcp {args.before}"] = old.pid
            scripts = {target: wrk_script(await open_session(url)) for target, url in urls.items()}
            names = list(urls)

            async def measure_one(target: str, concurrency: int) -> Measured:
                return await asyncio.to_thread(
                    run_wrk, urls[target], "POST", concurrency, args.seconds, tmp, scripts[target]
                )

            results, cpu = await interleaved_rounds(
                names,
                args.rounds,
                measure_one,
                pids.get,
            )
        finally:
            stop_all(processes)
    print(
        f"MCP tools/call: {args.rounds} interleaved rounds x {args.seconds:g} s, wrk, "
        f"{os.cpu_count()} CPUs, {load_note()}"
    )
    print_table(names, results, cpu)
    if args.before:
        before = cpu[f"chaosproxy mcp {args.before}"]
        ratios = [now / then for now, then in zip(cpu["chaosproxy mcp"], before, strict=True)]
        print(
            f"proxy CPU per call, this checkout / {args.before}: "
            f"{statistics.median(ratios):.2f} (rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
        )


if __name__ == "__main__":
    asyncio.run(main())
