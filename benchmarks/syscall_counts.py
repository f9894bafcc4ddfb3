"""System calls per request in the proxy (strace -c): a figure load hardly moves.

Starts the bare upstream and `chaosproxy up` (as `proxy_overhead.py` does), warms it, then
attaches `strace -c -f` to the proxy while wrk drives one path, and prints each system
call's count per request (requests = lines the call log gained). At c=32 the loop handles
many replies per turn, so per-turn costs (`epoll_wait`) are shared; at c=1 every request
pays them. strace slows the proxy, so the counts are what this measures, not the rate.

    .venv/bin/python benchmarks/syscall_counts.py [--path tool|rest] [--concurrency 32]
        [--seconds 3] [--before REV]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import proxy_modes
import proxy_overhead as po
import proxy_versions


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", choices=("tool", "rest"), default="tool")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--before", help="a git revision to measure instead of this checkout")
    args = parser.parse_args()
    if shutil.which("strace") is None or shutil.which("wrk") is None:
        sys.exit("needs strace and wrk (apt-get install -y strace wrk)")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        source = None
        if args.before:
            source = tmp / "src"
            proxy_versions.extract(args.before, source)
        bare, upstream = po.start_bare()
        run_dir = tmp / "run"
        proxy, proxied = po.start_chaosproxy(upstream, run_dir, source)
        try:
            url, method = (
                (f"{proxied}/tools/echo", "POST")
                if args.path == "tool"
                else (f"{proxied}/api/items/42", "GET")
            )
            await po.wait_until_up(url, method)
            po.run_wrk(url, method, args.concurrency, 1, tmp)  # warm: pools, caches
            time.sleep(0.3)
            out = tmp / "strace.txt"
            tracer = subprocess.Popen(
                ["strace", "-c", "-f", "-o", str(out), "-p", str(proxy.pid)],
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.5)
            before = proxy_modes.logged(run_dir)
            po.run_wrk(url, method, args.concurrency, args.seconds, tmp)
            time.sleep(0.3)
            requests = proxy_modes.logged(run_dir) - before
            tracer.send_signal(2)
            tracer.wait(timeout=30)
        finally:
            po.stop_all([proxy, bare])
        table = out.read_text()
    print(
        f"{args.before or 'this checkout'}, {args.path} path, c={args.concurrency}: "
        f"{requests} requests, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'per request':>11}  system call")
    total = 0.0
    for line in table.splitlines():
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
        if match is None or match.group(2) == "total":
            continue
        per = int(match.group(1)) / max(requests, 1)
        total += per
        if per >= 0.005 or match.group(2) in ("connect", "socket"):
            print(f"{per:11.3f}  {match.group(2)}")
    print(f"{total:11.3f}  all")


if __name__ == "__main__":
    asyncio.run(main())
