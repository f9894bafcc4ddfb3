"""The floor under the proxy: a pass-through built like chaosproxy's agent port, no pipeline.

Starts the bare upstream of proxy_overhead.py, chaosproxy at lambda0.0 in front of it, and
a pass-through built from the same parts as chaosproxy's hot path (an httptools parser on
an asyncio protocol, chaosproxy's `H1Pool` upstream client, uvloop) but with no routing,
engine, log or metrics. All three take `POST /tools/echo` in interleaved rounds; the
difference between the pass-through and chaosproxy is what the fault pipeline costs, the
difference between direct and the pass-through what two loopback hops in Python cost.

    .venv/bin/python benchmarks/passthrough_floor.py [--rounds 5] [--seconds 2]

Needs wrk. Loopback only, ephemeral ports, everything stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from proxy_overhead import (
    Measured,
    interleaved_rounds,
    load_note,
    measure,
    print_table,
    start_bare,
    start_chaosproxy,
    stop_all,
    wait_until_up,
)

PASSTHROUGH = """
import asyncio, socket, sys
import httptools, uvloop
from yarl import URL
from chaosproxy.proxy.h1client import H1Pool

UPSTREAM = URL(sys.argv[1])
pool = H1Pool(connect_timeout_s=5, keepalive_s=30, max_idle=256)


class Passthrough(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.url, self.body = b"", []

    def data_received(self, data):
        self.parser.feed_data(data)

    def on_url(self, url):
        self.url += url

    def on_body(self, body):
        self.body.append(body)

    def on_message_complete(self):
        method = self.parser.get_method().decode()
        url, body = self.url.decode(), b"".join(self.body)
        self.url, self.body = b"", []
        asyncio.get_running_loop().create_task(self.forward(method, url, body))

    async def forward(self, method, url, body):
        headers = {"Content-Type": "application/json"}
        reply = await pool.request(method, UPSTREAM.with_path(url), headers, body, 30)
        data = await reply.read()
        reply.release()
        head = b"HTTP/1.1 %d OK\\r\\nContent-Type: application/json\\r\\n" % reply.status
        self.transport.write(head + b"Content-Length: %d\\r\\n\\r\\n" % len(data) + data)


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    await asyncio.get_running_loop().create_server(Passthrough, sock=sock, backlog=1024)
    await asyncio.Event().wait()


uvloop.run(main())
"""


def start_passthrough(upstream: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", PASSTHROUGH, upstream],
        stdout=subprocess.PIPE,
        text=True,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=2, help="per measurement")
    args = parser.parse_args()
    processes: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        try:
            bare, upstream = start_bare()
            processes.append(bare)
            passthrough, passed = start_passthrough(upstream)
            processes.append(passthrough)
            proxy, proxied = start_chaosproxy(upstream, tmp / "run")
            processes.append(proxy)
            urls = {
                "direct": f"{upstream}/tools/echo",
                "passthrough": f"{passed}/tools/echo",
                "chaosproxy": f"{proxied}/tools/echo",
            }
            for url in urls.values():
                await wait_until_up(url, "POST")

            async def measure_one(target: str, concurrency: int) -> Measured:
                return await measure(urls[target], "POST", concurrency, args.seconds, tmp)

            pids = {"passthrough": passthrough.pid, "chaosproxy": proxy.pid}
            results, cpu = await interleaved_rounds(list(urls), args.rounds, measure_one, pids.get)
        finally:
            stop_all(processes)
    print(
        f"{args.rounds} interleaved rounds x {args.seconds:g} s, {os.cpu_count()} CPUs, "
        f"{load_note()}"
    )
    print_table(list(urls), results, cpu)


if __name__ == "__main__":
    asyncio.run(main())
