"""Proxy overhead on loopback: direct vs chaosproxy (lambda0.0) vs mitmdump (reverse mode).

The same small JSON tool call (`POST /tools/get_itinerary` on the travel service) is sent
for a fixed number of requests at concurrency 1 and 32, to each target, in one run; the
table gives requests/s and p50/p99 latency, and each as a ratio to direct.

    .venv/bin/python benchmarks/proxy_overhead.py [--requests 2000] [--domain travel]

Bounded and loopback-only: every server binds 127.0.0.1 on an ephemeral port, mitmdump
keeps its state in a temporary confdir, and everything started is stopped at the end.
The load generator (aiohttp) runs in this process; the service, chaosproxy and mitmdump
each run in their own process, as a user would run them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from chaosproxy.proxy.services import DomainServices

REPO = Path(__file__).resolve().parents[1]
MITMDUMP = REPO / ".venv-mitm" / "bin" / "mitmdump"
CLI = "from chaosproxy.cli import main; main()"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_until_up(url: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.post(url, json={}) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def start_chaosproxy(
    service_url: str, domain: str, run_dir: Path
) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLI,
            "up",
            "--port",
            "0",
            "--profile",
            "lambda0.0",
            "--domains",
            "none",
            "--upstream",
            f"{domain}={service_url}",
            "--run-dir",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    match = re.match(r"chaosproxy (http://\S+)", process.stdout.readline())
    if match is None:
        process.kill()
        raise RuntimeError("chaosproxy did not start")
    return process, f"{match.group(1)}/{domain}"


def start_mitmdump(service_url: str, confdir: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    if not MITMDUMP.exists():
        print(f"(mitmdump not found at {MITMDUMP}; skipping it)")
        return None
    port = free_port()
    process = subprocess.Popen(
        [
            str(MITMDUMP),
            "--mode",
            f"reverse:{service_url}",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(port),
            "--set",
            f"confdir={confdir}",
            "--set",
            "flow_detail=0",
            "-q",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, f"http://127.0.0.1:{port}"


async def measure(url: str, requests: int, concurrency: int) -> dict[str, float]:
    latencies: list[float] = []
    remaining = requests
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                async with session.post(url, json={}) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"{url}: status {response.status}")
                latencies.append(time.perf_counter() - started)

        for _ in range(min(50, requests)):  # warm up connections
            async with session.post(url, json={}) as response:
                await response.read()
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def table(results: dict[tuple[str, int], dict[str, float]], targets: list[str]) -> str:
    lines = [
        f"{'target':<12}{'conc':>5}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'rps/direct':>12}{'p50 +ms':>9}{'p99/direct':>12}"
    ]
    for concurrency in (1, 32):
        base = results[("direct", concurrency)]
        for target in targets:
            row = results[(target, concurrency)]
            lines.append(
                f"{target:<12}{concurrency:>5}{row['rps']:>10.0f}{row['p50_ms']:>9.2f}"
                f"{row['p99_ms']:>9.2f}{row['rps'] / base['rps']:>12.2f}"
                f"{row['p50_ms'] - base['p50_ms']:>9.3f}{row['p99_ms'] / base['p99_ms']:>12.2f}"
            )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per measurement")
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--tool", default="get_itinerary")
    args = parser.parse_args()
    if not 1 <= args.requests <= 50_000:
        parser.error("--requests must be between 1 and 50000")
    services = DomainServices([args.domain])
    processes: list[subprocess.Popen[str] | subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            service_url = (await services.start())[args.domain]
            path = f"/tools/{args.tool}"
            targets = {"direct": service_url + path}
            proxy, proxy_url = start_chaosproxy(service_url, args.domain, Path(tmp) / "run")
            processes.append(proxy)
            targets["chaosproxy"] = proxy_url + path
            mitm = start_mitmdump(service_url, Path(tmp) / "mitm")
            if mitm is not None:
                processes.append(mitm[0])
                targets["mitmdump"] = mitm[1] + path
            for name, url in targets.items():
                print(f"waiting for {name} at {url}", file=sys.stderr, flush=True)
                await wait_until_up(url)
            results: dict[tuple[str, int], dict[str, float]] = {}
            for concurrency in (1, 32):
                for name, url in targets.items():
                    print(
                        f"measuring {name} at concurrency {concurrency}",
                        file=sys.stderr,
                        flush=True,
                    )
                    results[(name, concurrency)] = await measure(url, args.requests, concurrency)
            print(f"{args.requests} x POST {path} on loopback ({os.cpu_count()} CPUs)")
            print(table(results, list(targets)))
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=10)
            await services.stop()


if __name__ == "__main__":
    asyncio.run(main())
