"""Python function calls per request in the proxy: a figure load cannot move.

CPU and req/s move with whatever else the machine runs; the number of Python function
calls (cProfile's count, C builtins included) the proxy makes per request does not. This
starts the bare upstream and `chaosproxy up` under cProfile (profiling switched on only
after start-up, by SIGUSR2), drives it with wrk at c=32 on the tool path and prints calls
per request (requests = lines the call log gained) and the functions with most time. A
change that removes work shows here even at load 10; what each call costs still needs
`proxy_overhead.py` / `proxy_modes.py` on a quiet machine.

    .venv/bin/python benchmarks/call_counts.py [--before REV] [--profile lambda0.2]
        [--episodes] [--seconds 3] [--top 30]

`--before REV`: that commit's `chaosproxy/` (git archive) instead of this checkout's;
`--episodes`: a new episode id every 10 calls (as `proxy_modes.py faults`);
`--without-tracing`: the build without the tracing hooks (as `proxy_modes.py tracing`);
`--mcp`: MCP `tools/call` in one session to a FastMCP server (as `mcp_overhead.py`)
instead of the bare upstream's tool path.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

import mcp_overhead
import proxy_modes
import proxy_overhead as po
import proxy_versions

RUN = """
import cProfile, os, signal, sys
out = sys.argv[1]
sys.argv = ["chaosproxy", *sys.argv[2:]]
from chaosproxy.cli import main
profiler = cProfile.Profile()
def stop(*_):
    profiler.disable()
    profiler.dump_stats(out)
    os._exit(0)
signal.signal(signal.SIGUSR1, stop)
signal.signal(signal.SIGUSR2, lambda *_: profiler.enable())
main()
"""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git revision to measure instead of this checkout")
    parser.add_argument(
        "--without-tracing",
        action="store_true",
        help="this checkout with the tracing hooks cut out (proxy_modes.py's build without SDK)",
    )
    parser.add_argument("--profile", default="lambda0.0")
    parser.add_argument("--episodes", action="store_true", help="a new episode every 10 calls")
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--stats", type=Path, help="keep cProfile's stats file here")
    parser.add_argument(
        "--mcp", action="store_true", help="MCP tools/call to a FastMCP server (one session)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        source = None
        if args.before:
            proxy_versions.extract(args.before, tmp / "src")
            source = tmp / "src"
        elif args.without_tracing:
            proxy_modes.without_tracing(tmp / "src")
            source = tmp / "src"
        run_dir, stats = tmp / "run", tmp / "profile.out"
        run_dir.mkdir()
        if args.mcp:
            bare, upstream = mcp_overhead.start_server()
        else:
            bare, upstream = po.start_bare()
        proxy, proxied = po.start_chaosproxy(
            upstream, run_dir, source, args.profile, (sys.executable, "-c", RUN, str(stats))
        )
        try:
            url = f"{proxied}/mcp" if args.mcp else f"{proxied}/tools/echo"
            lua = None
            if args.mcp:
                lua = mcp_overhead.wrk_script(await mcp_overhead.open_session(url))
            else:
                await po.wait_until_up(url, "POST")
            po.run_wrk(url, "POST", 32, 1, tmp, lua)  # warm: caches, pools, first episodes
            time.sleep(0.3)
            before = proxy_modes.logged(run_dir)
            proxy.send_signal(signal.SIGUSR2)
            time.sleep(0.2)
            if args.episodes:
                lua = proxy_modes.EPISODE_LUA.format(run=1, body=po.BODY)
            po.run_wrk(url, "POST", 32, args.seconds, tmp, lua)
            time.sleep(0.3)
            requests = proxy_modes.logged(run_dir) - before
            proxy.send_signal(signal.SIGUSR1)
            proxy.wait(timeout=30)
        finally:
            if proxy.poll() is None:
                proxy.kill()
            po.stop_all([bare])
        table = pstats.Stats(str(stats))
        if args.stats is not None:
            table.dump_stats(str(args.stats))
    calls = sum(row[1] for row in table.stats.values())  # type: ignore[attr-defined]
    print(
        f"{args.before or 'this checkout'}, {args.profile}, "
        f"{'MCP tools/call' if args.mcp else 'tool path'}, episodes every 10 calls: "
        f"{args.episodes}; {requests} requests, load {os.getloadavg()[0]:.1f}"
    )
    print(f"Python function calls per request: {calls / max(requests, 1):.1f}")
    rows = sorted(table.stats.items(), key=lambda kv: -kv[1][2])  # type: ignore[attr-defined]
    print(f"{'calls/req':>9} {'own us/req (profiled)':>22}  function")
    for (path, line, function), (_, count, own, _, _) in rows[: args.top]:
        where = f"{Path(path).name}:{line}" if line else "(builtin)"
        print(f"{count / requests:9.2f} {own / requests * 1e6:22.2f}  {where} {function}")


if __name__ == "__main__":
    asyncio.run(main())
