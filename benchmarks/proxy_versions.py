"""Two versions of chaosproxy side by side at lambda0.0: one run, one upstream.

Small changes to the proxy's cost (a few percent) drown in the noise between runs on a
shared machine; this starts the same bare upstream, chaosproxy from an earlier commit
(`--before`, extracted with `git archive`) and from this checkout, and measures both and
direct in interleaved rounds (wrk, `POST /tools/echo`, or `GET /api/items/42` with
`--path rest`; c=32 and c=1). The proxy CPU time per request is compared round by round.

    .venv/bin/python benchmarks/proxy_versions.py --before main~3 [--rounds 8] [--seconds 3]
        [--path tool|rest]

Needs wrk and git; loopback only, ephemeral ports, everything stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
import tarfile
import tempfile
from pathlib import Path

import proxy_overhead as po

ROOT = Path(__file__).resolve().parent.parent


def extract(revision: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "chaosproxy"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a git revision (e.g. main~3)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=3, help="per measurement")
    parser.add_argument(
        "--path",
        choices=("tool", "rest"),
        default="tool",
        help="tool: POST /tools/echo (default); rest: GET /api/items/42 (a generic REST route)",
    )
    args = parser.parse_args()
    path, method = ("/tools/echo", "POST") if args.path == "tool" else ("/api/items/42", "GET")
    processes: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        extract(args.before, tmp / "before")
        try:
            bare, upstream = po.start_bare()
            processes.append(bare)
            targets: dict[str, tuple[subprocess.Popen[str] | None, str]] = {
                "direct": (None, f"{upstream}{path}")
            }
            for label, source in ((args.before, tmp / "before"), ("this checkout", None)):
                process, proxied = po.start_chaosproxy(
                    upstream, tmp / f"run-{len(targets)}", source
                )
                url = f"{proxied}{path}"
                processes.append(process)
                targets[label] = (process, url)
            for _, url in targets.values():
                await po.wait_until_up(url, method)
            names = list(targets)

            async def measure_one(target: str, concurrency: int) -> po.Measured:
                return await po.measure(targets[target][1], method, concurrency, args.seconds, tmp)

            def proxy_pid(target: str) -> int | None:
                process = targets[target][0]
                return process.pid if process is not None else None

            results, cpu = await po.interleaved_rounds(names, args.rounds, measure_one, proxy_pid)
        finally:
            po.stop_all(processes)
    load = os.getloadavg()[0]
    print(
        f"{args.rounds} interleaved rounds x {args.seconds} s, wrk, {args.path} path, "
        f"load {load:.1f}"
    )
    po.print_table(names, results, cpu)
    old, new = cpu[args.before], cpu["this checkout"]
    ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
    print(f"proxy CPU per request, this checkout / {args.before}: {ratio:.2f} (round by round)")


if __name__ == "__main__":
    asyncio.run(main())
