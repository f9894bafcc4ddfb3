"""Soak: the memory and open files of `chaosproxy up` (proxy and services) over a long run.

Starts `chaosproxy up --port 0` itself (127.0.0.1, profile lambda0.0 unless --profile, the
given domains) and drives CALLS tool calls spread over EPISODES episodes that are never
ended (what a client that makes up episode ids does), CONCURRENCY episodes at a time, each
episode's calls in sequence. Every few seconds it samples, from /proc, the RSS and open
file descriptors of the proxy process and of its services child, and prints them; at the
end it prints the growth from the first sample after warm-up (the run's own baseline) to
the last, and the peak.

    .venv/bin/python benchmarks/soak.py                      # 200 k calls over 10 k episodes
    .venv/bin/python benchmarks/soak.py --calls 1000000      # 1 M calls (50 k episodes)
    .venv/bin/python benchmarks/soak.py --unbounded --calls 50000   # the bound switched off

`--unbounded` keeps every idle episode (the behaviour before issue 13), to compare. Linux
only (/proc). Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

CLI = "from chaosproxy.cli import main; main()"
TOOLS = {"weather": "list_cities", "travel": "get_itinerary"}


@dataclass
class Sample:
    calls: int
    episodes: int
    seconds: float
    proxy_rss_mb: float
    proxy_fds: int
    services_rss_mb: float
    services_fds: int


def rss_mb(pid: int) -> float:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def start_up(
    run_dir: Path, domains: str, idle: int, profile: str
) -> tuple[subprocess.Popen[str], str, int]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CHAOSPROXY_MAX_IDLE_EPISODES": str(idle)}
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(run_dir),
         "--domains", domains, "--profile", profile, "--idle-episodes", str(idle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.match(r"chaosproxy (http://127\.0\.0\.1:\d+)", line)
    if match is None:
        process.kill()
        raise SystemExit(f"up did not start: {line!r}")
    (services,) = children(process.pid)
    return process, match.group(1), services


async def drive(
    url: str,
    domains: list[str],
    calls: int,
    episodes: int,
    concurrency: int,
    on_progress: list[int],
) -> dict[int, int]:
    """Run the calls; `on_progress` = [calls done, episodes started]; returns status counts."""
    per_episode = max(1, calls // episodes)
    statuses: dict[int, int] = {}
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(episodes):
        queue.put_nowait(index)
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            while True:
                try:
                    index = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                domain = domains[index % len(domains)]
                target = f"{url}/e/soak-{index}/{domain}/tools/{TOOLS[domain]}"
                on_progress[1] += 1
                for _ in range(per_episode):
                    async with session.post(target, json={}) as reply:
                        await reply.read()
                        statuses[reply.status] = statuses.get(reply.status, 0) + 1
                    on_progress[0] += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses


async def soak(args: argparse.Namespace, run_dir: Path) -> list[Sample]:
    idle = 10**9 if args.unbounded else args.idle_episodes
    process, url, services = await asyncio.to_thread(
        start_up, run_dir, args.domains, idle, args.profile
    )
    domains = args.domains.split(",")
    samples: list[Sample] = []
    progress = [0, 0]
    started = time.monotonic()

    def sample() -> Sample:
        taken = Sample(
            calls=progress[0],
            episodes=progress[1],
            seconds=time.monotonic() - started,
            proxy_rss_mb=rss_mb(process.pid),
            proxy_fds=open_fds(process.pid),
            services_rss_mb=rss_mb(services),
            services_fds=open_fds(services),
        )
        samples.append(taken)
        print(
            f"{taken.calls:>9} calls {taken.episodes:>7} episodes {taken.seconds:7.0f} s   "
            f"proxy {taken.proxy_rss_mb:7.1f} MB {taken.proxy_fds:4} fds   "
            f"services {taken.services_rss_mb:7.1f} MB {taken.services_fds:4} fds",
            flush=True,
        )
        return taken

    try:
        sample()
        load = asyncio.create_task(
            drive(url, domains, args.calls, args.episodes, args.concurrency, progress)
        )
        while not load.done():
            await asyncio.wait({load}, timeout=args.every)
            sample()
        statuses = load.result()
        print(f"replies by status: {dict(sorted(statuses.items()))}")
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait, 30)
    lines = sum(1 for _ in (run_dir / "calls.jsonl").open("rb"))
    print(f"calls.jsonl: {lines} lines for {progress[0]} calls made")
    return samples


def summary(samples: list[Sample], warm_calls: int) -> None:
    warm = next((s for s in samples if s.calls >= warm_calls), samples[0])
    last = samples[-1]
    rate = last.calls / last.seconds if last.seconds else 0.0
    print(f"\n{last.calls} calls over {last.episodes} episodes in {last.seconds:.0f} s "
          f"({rate:.0f} calls/s)")  # fmt: skip
    for name in ("proxy", "services"):
        rss = [getattr(s, f"{name}_rss_mb") for s in samples]
        fds = [getattr(s, f"{name}_fds") for s in samples]
        start_rss = getattr(warm, f"{name}_rss_mb")
        end_rss = getattr(last, f"{name}_rss_mb")
        print(
            f"{name:>8}: RSS {start_rss:.1f} MB after {warm.calls} calls -> {end_rss:.1f} MB "
            f"at the end (x{end_rss / start_rss:.2f}), peak {max(rss):.1f} MB; open files "
            f"{getattr(warm, f'{name}_fds')} -> {getattr(last, f'{name}_fds')}, peak {max(fds)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--episodes", type=int, default=None, help="default: calls / 20")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--domains", default="weather,travel")
    parser.add_argument("--profile", default="lambda0.0", help="e.g. lambda0.2: faults too")
    parser.add_argument("--idle-episodes", type=int, default=256)
    parser.add_argument("--unbounded", action="store_true", help="keep every idle episode")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--warm-calls", type=int, default=10_000, help="baseline sample")
    parser.add_argument("--keep", type=Path, default=None, help="run directory to keep")
    args = parser.parse_args()
    args.episodes = args.episodes or max(1, args.calls // 20)
    bound = "unbounded" if args.unbounded else f"--idle-episodes {args.idle_episodes}"
    print(f"soak: {args.calls} calls over {args.episodes} episodes, concurrency "
          f"{args.concurrency}, domains {args.domains}, {args.profile}, {bound}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        run_dir = args.keep or Path(scratch) / "run"
        samples = asyncio.run(soak(args, run_dir))
    summary(samples, args.warm_calls)


if __name__ == "__main__":
    main()
