"""The proxy's CPU per request in two modes side by side: the fault path, or tracing off.

    .venv/bin/python benchmarks/proxy_modes.py faults [--rounds 6] [--seconds 3] [--pace 100]
    .venv/bin/python benchmarks/proxy_modes.py faults --instructions [--seconds 8]
    .venv/bin/python benchmarks/proxy_modes.py tracing [--rounds 6] [--seconds 3]

`faults` (issue 28's target, λ0.2 ≤ 1.3× the CPU per request of λ0): chaosproxy at
`lambda0.0` and at `lambda0.2`, each its own process, called on the tool path
(`POST /bare/tools/echo`) with a new episode id every 10 calls (`X-Chaos-Episode`,
`bench-<run>-<n>`, wrk's request counter divided by 10; ids are never reused across
measurements), so λ0.2 walks its whole fault path: episode records made and evicted,
incidents planned, faults drawn and rendered. Injected errors, resets and held timeouts
are the point here, so non-2xx replies do not invalidate a target: the CPU is divided by
the calls the proxy logged in the window, not by wrk's count.

Both proxies serve the same request rate (`--pace`, the default). A proxy's CPU per
request grows as its request rate falls (each request pays a wake-up on a cold cache: λ0
alone measured 283–356 µs per request at 600 requests/s, 413–515 µs at 39/s, load 1.2–1.9),
and λ0.2's TransientTimeouts hold a call 1 s: wrk in lock-step (`--pace 0`) gets 18–60
calls per 3 s through λ0.2 at c=1 against ~4,000 through λ0, so that comparison was
mostly of request rates. Paced, each of wrk's connections waits `--pace` ms between its
requests; λ0.2 runs first in each round on `--connections` connections, and λ0 gets as
many connections as give it the request rate λ0.2 just served (rate × (pace + 1 ms)),
so a held call costs what it costs in CPU (a timer) and not a change of regime.
`--instructions`: each proxy under valgrind's callgrind instead, user-space instructions
per request (8 connections, 50 ms apart, after a warm-up): not moved by the load, where CPU
time above load 1.5 is inconclusive (needs valgrind).

`tracing` (issue 29's check, "with tracing off, CPU per request within 2 % of a build
without the SDK"): this checkout as shipped (tracing off, `NOOP` tracer) and a copy of it
with the tracing hooks cut out of the source (the handler's `tracer.incoming`, the
pipeline's two `draft.trace` lines, `finish`'s `draft.trace.reply` and
`draft.trace.finish`, the relay's `draft.trace.reply`, the `Draft.trace` field): the build
without the SDK. Both at `lambda0.0` on the tool path; a non-2xx reply invalidates the run.

Both print the proxy processes' CPU µs per request (the scheduler's run time of all
their threads, /proc/PID/task/*/schedstat, in ns: the 10 ms ticks of /proc/PID/stat
quantised a few hundred requests to ±30 %) per round, with the load average and the
ratio taken round by round. `tracing` (and `faults --pace 0`) drive wrk in lock-step at
c=32 unless `--concurrency`, the order rotating per round. By the project's rule a result
measured above load 1.5 is inconclusive.
Needs wrk; loopback only, ephemeral ports, everything stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import os
import re
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
PACED_LUA = (
    EPISODE_LUA
    + """
delay = function()
  return {pace}
end
"""
)
"""Each connection waits `pace` ms after a reply before its next request (wrk's `delay`)."""
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


def cpu_seconds(pid: int) -> float:
    """CPU time of a process so far, every thread, in ns resolution (schedstat's run time)."""
    return sum(int((task / "schedstat").read_text().split()[0]) for task in _tasks(pid)) / 1e9


def _tasks(pid: int) -> list[Path]:
    return list(Path(f"/proc/{pid}/task").iterdir())


def logged(run_dir: Path) -> int:
    path = run_dir / "calls.jsonl"
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


VALGRIND = ("valgrind", "--tool=callgrind", "--instr-atstart=no")
CALLGRIND_TOTAL = re.compile(r"^summary: (\d+)", re.MULTILINE)


async def instructions(profile: str, seconds: int, tmp: Path) -> tuple[int, float]:
    """Requests served and user-space instructions per request (valgrind's callgrind) of
    one `chaosproxy up` at `profile`, paced as `faults` (8 connections, 50 ms apart),
    counted after a warm-up. Instructions do not move with the machine's load: the figure
    to compare when the load average makes CPU time inconclusive."""
    bare, upstream = po.start_bare()
    run_dir, out = tmp / f"cg-{profile}", tmp / f"cg-{profile}.out"
    launcher = (*VALGRIND, f"--callgrind-out-file={out}", sys.executable, "-c", po.CLI)
    proxy, proxied = po.start_chaosproxy(upstream, run_dir, profile=profile, command=launcher)
    try:
        url = f"{proxied}/tools/echo"
        await po.wait_until_up(url, "POST")
        for run, (measure, length) in enumerate(((False, 3), (True, seconds))):
            if measure:
                control = ["callgrind_control", "-i", "on", str(proxy.pid)]
                subprocess.run(control, capture_output=True, check=True)
                before = logged(run_dir)
            lua = PACED_LUA.format(run=f"cg{run}", body=po.BODY, pace=50)
            expected = profile != "lambda0.0"  # the injected faults' errors
            await asyncio.to_thread(po.run_wrk, url, "POST", 8, length, tmp, lua, expected)
            await asyncio.sleep(1.5)  # held calls end, log lines land
        count = logged(run_dir) - before
        for command in ("-d", "-i"):  # dump the window, then count no more (not shutdown)
            control = ["callgrind_control", command, *(["off"] if command == "-i" else [])]
            subprocess.run([*control, str(proxy.pid)], capture_output=True, check=True)
            await asyncio.sleep(1.0)
    finally:
        proxy.terminate()
        proxy.wait(timeout=60)
        po.stop_all([bare])
    dumps = [path for path in tmp.glob(f"{out.name}.*") if path.name != out.name]
    total = sum(int(m.group(1)) for d in dumps for m in CALLGRIND_TOTAL.finditer(d.read_text()))
    return count, total / max(count, 1)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("faults", "tracing"))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=3, help="per measurement")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=32,
        help="wrk connections in lock-step (tracing, and faults with --pace 0)",
    )
    parser.add_argument(
        "--pace",
        type=int,
        default=100,
        help="faults: ms each connection waits between requests, both proxies at λ0.2's "
        "request rate (0: wrk in lock-step at --concurrency)",
    )
    parser.add_argument(
        "--connections", type=int, default=64, help="faults, paced: λ0.2's wrk connections"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="faults: instructions per request under valgrind's callgrind instead of CPU time "
        "(load-proof; --seconds per profile, 8 s is plenty)",
    )
    args = parser.parse_args()
    if args.instructions:
        if shutil.which("valgrind") is None or args.mode != "faults":
            raise SystemExit("--instructions: faults mode only, and needs valgrind")
        with tempfile.TemporaryDirectory() as name:
            counted = {}
            for profile in ("lambda0.0", "lambda0.2"):
                counted[profile] = await instructions(profile, args.seconds, Path(name))
                requests, per = counted[profile]
                print(f"{profile:<16}{per / 1e3:8.1f} k instructions per request ({requests} req)")
        ratio = counted["lambda0.2"][1] / counted["lambda0.0"][1]
        print(f"lambda0.2 / lambda0.0, instructions per request: {ratio:.3f}")
        print(f"load average (1 min): {os.getloadavg()[0]:.1f} (instructions do not move with it)")
        return
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk (apt-get install -y wrk)")
    processes: list[subprocess.Popen[str]] = []
    runs = itertools.count()
    cpu: dict[str, list[float]] = {}
    loads: list[float] = []
    failed: dict[str, int] = {}
    rates: dict[str, list[float]] = {}
    paced = args.mode == "faults" and args.pace > 0
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
                if paced:
                    order = names[::-1]  # λ0.2 first: λ0 is then paced to its rate
                connections = args.connections if paced else args.concurrency
                for label in order:
                    process, url, run_dir = targets[label]
                    lua = None
                    if paced:
                        lua = PACED_LUA.format(run=next(runs), body=po.BODY, pace=args.pace)
                    elif args.mode == "faults":
                        lua = EPISODE_LUA.format(run=next(runs), body=po.BODY)
                    before, calls = cpu_seconds(process.pid), logged(run_dir)
                    got = await asyncio.to_thread(
                        po.run_wrk,
                        url,
                        "POST",
                        connections,
                        args.seconds,
                        tmp,
                        lua,
                        label == "lambda0.2",  # its errors are the injected faults
                    )
                    await asyncio.sleep(0.3)  # the last replies' log lines
                    used = cpu_seconds(process.pid) - before
                    count = logged(run_dir) - calls
                    cpu.setdefault(label, []).append(used / max(count, 1) * 1e6)
                    rates.setdefault(label, []).append(count / args.seconds)
                    failed[label] = failed.get(label, 0) + got.failed
                    if paced:  # the next proxy at this one's request rate
                        connections = max(1, round(count / args.seconds * (args.pace + 1) / 1e3))
                load = os.getloadavg()[0]
                loads.append(load)
                row = "  ".join(
                    f"{label} {cpu[label][-1]:.0f} us/req at {rates[label][-1]:.0f}/s"
                    for label in names
                )
                print(f"round {round_ + 1}: {row}  (load {load:.1f})", file=sys.stderr)
        finally:
            po.stop_all(processes)
    how = (
        f"wrk paced {args.pace} ms per connection, λ0.2 on c={args.connections}, λ0 at its rate"
        if paced
        else f"wrk c={args.concurrency}"
    )
    print(f"{args.mode}: {args.rounds} interleaved rounds x {args.seconds} s, {how}")
    print(f"load average (1 min) over the rounds: {min(loads):.1f}-{max(loads):.1f}")
    for label in names:
        note = f"  ({failed[label]} non-2xx/socket errors)" if failed[label] else ""
        print(
            f"{label:<16}proxy CPU {statistics.median(cpu[label]):6.0f} us/req "
            f"at {statistics.median(rates[label]):6.0f} req/s{note}"
        )
    first, second = names
    ratio = statistics.median(b / a for a, b in zip(cpu[first], cpu[second], strict=True))
    print(f"{second} / {first}, CPU per request (round by round): {ratio:.3f}")
    verdict = "inconclusive (load above 1.5)" if max(loads) > 1.5 else "measured at load <= 1.5"
    print(verdict)
    if failed[first] or (args.mode == "tracing" and failed[second]):
        print("INVALID: non-2xx replies on the tool path at lambda0.0")


if __name__ == "__main__":
    asyncio.run(main())
