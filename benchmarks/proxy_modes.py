"""The proxy's CPU per request in two modes side by side: the fault path, or tracing off.

    .venv/bin/python benchmarks/proxy_modes.py faults [--rounds 6] [--seconds 3]
    .venv/bin/python benchmarks/proxy_modes.py tracing [--rounds 6] [--seconds 3]

`faults` (issue 28's target, λ0.2 ≤ 1.3× the CPU per request of λ0): chaosproxy at
`lambda0.0` and at `lambda0.2`, each its own process, called on the tool path
(`POST /bare/tools/echo`) with a new episode id every 10 calls (`X-Chaos-Episode`,
`bench-<run>-<n>`, wrk's request counter divided by 10; ids are never reused across
measurements), so λ0.2 walks its whole fault path: episode records made and evicted,
incidents planned, faults drawn and rendered. Injected errors, resets and held timeouts
are the point here, so non-2xx replies do not invalidate a target: the CPU is divided by
the calls the proxy logged in the window, not by wrk's count.

`tracing` (issue 29's check, "with tracing off, CPU per request within 2 % of a build
without the SDK"): this checkout as shipped (tracing off, `NOOP` tracer) and a copy of it
with the tracing hooks cut out of the source (the handler's `tracer.incoming`, the
pipeline's two `draft.trace` lines, `finish`'s `draft.trace.reply` and
`draft.trace.finish`, the relay's `draft.trace.reply`, the `Draft.trace` field): the build
without the SDK. Both at `lambda0.0` on the tool path; a non-2xx reply invalidates the run.

Both print the proxy processes' CPU µs per request (user + system, /proc) per round, at
c=32 unless `--concurrency`, with the load average, and the ratio taken round by round;
the order rotates per round. By the project's rule a result measured above load 1.5 is
inconclusive.
Needs wrk; loopback only, ephemeral ports, everything stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import proxy_overhead as po

ROOT = Path(__file__).resolve().parent.parent
EPISODE_LUA = """
counter = 0
request = function()
  local episode = "bench-{run}-" .. math.floor(counter / 10)
  counter = counter + 1
  return wrk.format("POST", nil, {{["Content-Type"] = "application/json",
    ["X-Chaos-Episode"] = episode}}, '{body}')
end
"""
HOOKS: dict[str, list[tuple[str, str]]] = {
    "proxy/handler.py": [
        (
            "        if self.core.tracer.on:\n"
            "            draft.trace = self.core.tracer.incoming("
            "request.headers, body, messages, route.episode)\n",
            "",
        )
    ],
    "proxy/pipeline.py": [
        (
            "    if draft.trace is not None:\n"
            "        adapter.said.seen = draft.trace.model_reply\n",
            "",
        ),
        (
            "        if draft.trace is not None:\n            draft.trace.upstream(call, extra)\n",
            "",
        ),
    ],
    "proxy/finish.py": [
        (
            "        if draft.trace is not None:\n            draft.trace.reply(reply.body)\n",
            "",
        ),
        (
            "    if draft.trace is not None:  # the call's span ends here, and only here\n"
            "        draft.trace.finish(fields)\n",
            "",
        ),
    ],
    "proxy/relay.py": [
        (
            "                    if x.draft.trace is not None:\n"
            "                        x.draft.trace.reply(out)\n",
            "",
        )
    ],
    "proxy/exchange.py": [
        (
            "    trace: CallTrace | None = None\n"
            '    """The call\'s span in the making (chaosproxy.tracing); '
            'None when tracing is off."""\n',
            "",
        )
    ],
}
"""The tracing hooks as they stand in the source: cut out, they make the build without
the SDK. A hook not found verbatim stops the benchmark (it would measure nothing)."""


def without_tracing(into: Path) -> None:
    """This checkout's `chaosproxy/` copied to `into`, the tracing hooks cut out."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "stash", "create"], capture_output=True, text=True, check=True
    ).stdout.strip()
    tree = archive or "HEAD"
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", tree, "chaosproxy"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    for name, cuts in HOOKS.items():
        path = into / "chaosproxy" / name
        text = path.read_text()
        for old, new in cuts:
            if old not in text:
                raise SystemExit(f"tracing hook not found in {name}: {old!r}")
            text = text.replace(old, new)
        path.write_text(text)


def logged(run_dir: Path) -> int:
    path = run_dir / "calls.jsonl"
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("faults", "tracing"))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=3, help="per measurement")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=32,
        help="wrk connections (1: no batching of replies per loop turn, the CPU per request "
        "least moved by load)",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk (apt-get install -y wrk)")
    processes: list[subprocess.Popen[str]] = []
    runs = itertools.count()
    cpu: dict[str, list[float]] = {}
    loads: list[float] = []
    failed: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        try:
            bare, upstream = po.start_bare()
            processes.append(bare)
            targets: dict[str, tuple[subprocess.Popen[str], str, Path]] = {}
            if args.mode == "faults":
                specs = [("lambda0.0", None, "lambda0.0"), ("lambda0.2", None, "lambda0.2")]
            else:
                without_tracing(tmp / "nosdk")
                specs = [
                    ("as shipped", None, "lambda0.0"),
                    ("hooks removed", tmp / "nosdk", "lambda0.0"),
                ]
            for label, source, profile in specs:
                run_dir = tmp / f"run-{len(targets)}"
                process, proxied = po.start_chaosproxy(upstream, run_dir, source, profile)
                processes.append(process)
                targets[label] = (process, f"{proxied}/tools/echo", run_dir)
            for _, url, _ in targets.values():
                await po.wait_until_up(url, "POST")
            names = list(targets)
            for round_ in range(args.rounds):
                order = names[round_ % len(names) :] + names[: round_ % len(names)]
                for label in order:
                    process, url, run_dir = targets[label]
                    lua = None
                    if args.mode == "faults":
                        lua = EPISODE_LUA.format(run=next(runs), body=po.BODY)
                    before, calls = po.cpu_seconds(process.pid), logged(run_dir)
                    got = await asyncio.to_thread(
                        po.run_wrk, url, "POST", args.concurrency, args.seconds, tmp, lua
                    )
                    await asyncio.sleep(0.2)  # the last replies' log lines
                    used = po.cpu_seconds(process.pid) - before
                    count = logged(run_dir) - calls
                    cpu.setdefault(label, []).append(used / max(count, 1) * 1e6)
                    failed[label] = failed.get(label, 0) + got.failed
                load = os.getloadavg()[0]
                loads.append(load)
                row = "  ".join(f"{label} {cpu[label][-1]:.0f}" for label in names)
                print(f"round {round_ + 1}: {row} us/req  (load {load:.1f})", file=sys.stderr)
        finally:
            po.stop_all(processes)
    print(
        f"{args.mode}: {args.rounds} interleaved rounds x {args.seconds} s, "
        f"wrk c={args.concurrency}"
    )
    print(f"load average (1 min) over the rounds: {min(loads):.1f}-{max(loads):.1f}")
    for label in names:
        note = f"  ({failed[label]} non-2xx/socket errors)" if failed[label] else ""
        print(f"{label:<16}proxy CPU {statistics.median(cpu[label]):6.0f} us/req{note}")
    first, second = names
    ratio = statistics.median(b / a for a, b in zip(cpu[first], cpu[second], strict=True))
    print(f"{second} / {first}, CPU per request (round by round): {ratio:.3f}")
    verdict = "inconclusive (load above 1.5)" if max(loads) > 1.5 else "measured at load <= 1.5"
    print(verdict)
    if args.mode == "tracing" and failed[second] + failed[first]:
        print("INVALID: non-2xx replies on the tool path at lambda0.0")


if __name__ == "__main__":
    asyncio.run(main())
