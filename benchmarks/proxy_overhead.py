"""The proxy's own cost: a bare aiohttp upstream, direct vs through chaosproxy at lambda0.0.

Every target is measured in the same run, in interleaved rounds (client, proxy and
upstream share the machine's cores, so rounds spread the noise), and the table gives the
median of the rounds and each target's ratio to direct, round by round:

- `direct`: the bare upstream (a 20-line aiohttp app, its own process);
- `chaosproxy tool`: `POST /bare/tools/echo` through `chaosproxy up` (the tool path);
- `chaosproxy rest`: `GET /bare/api/items/42` through it (a generic REST route);
- `nginx`: the same POST through nginx (a reverse-proxy ceiling), when installed;
- `toxy`: the same POST through toxy (Node.js, the fault-injection proxy this project is
  most often compared with) with no poison, when installed: as shipped (a new upstream
  connection per request) and `toxy keepalive` (given a keep-alive agent, as chaosproxy
  and nginx keep theirs). Install it outside the checkout, e.g.
  `npm install --prefix /tmp/toxy toxy@0.3.16`, and pass `--toxy-dir /tmp/toxy`.

    .venv/bin/python benchmarks/proxy_overhead.py [--rounds 5] [--seconds 3]

The load generator is wrk when installed (`apt-get install -y wrk nginx`), else an
aiohttp client in this process (slower: it then limits every target alike). At
concurrency 32 the table gives requests/s; at concurrency 1 the median latency and what
the proxy adds to direct. `proxy CPU` is the chaosproxy process's own CPU time (user +
system) per request at concurrency 32: unlike req/s it hardly moves when other work
shares the machine. Loopback only, ephemeral ports, everything stopped at the end.
MCP `tools/call` through the proxy vs direct: `benchmarks/mcp_overhead.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import aiohttp

CLI = "from chaosproxy.cli import main; main()"
BODY = '{"item_id":"A1","quantity":2}'

BARE = """
import socket, sys
from aiohttp import web
try:
    import uvloop; uvloop.install()
except ImportError:
    pass

async def echo(request):
    body = await request.read()
    return web.json_response({"ok": True, "received": len(body), "item": {"id": "A1", "qty": 2}})

async def item(request):
    return web.json_response({"id": request.match_info["id"], "name": "lamp", "price": 19.5})

app = web.Application()
app.router.add_post("/tools/echo", echo)
app.router.add_get("/api/items/{id}", item)
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
web.run_app(app, sock=sock, access_log=None, print=None, backlog=1024)
"""

TOXY = """
const http = require("http");
const toxy = require({module!r});
const agent = new http.Agent({{keepAlive: true, maxSockets: 64}});
const proxy = toxy({keep_alive} ? {{agent: agent}} : {{}});
proxy.forward({upstream!r});
proxy.all("/*");
proxy.listen({port}, "127.0.0.1");
"""

NGINX = """
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {tmp};
  proxy_temp_path {tmp};
  upstream bare {{ server 127.0.0.1:{upstream}; keepalive 64; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://bare;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
"""


def stop_all(processes: Sequence[subprocess.Popen[str] | subprocess.Popen[bytes]]) -> None:
    """Stop the benchmark's processes (upstream, proxies, nginx) and wait for each."""
    for process in processes:
        process.terminate()
        process.wait(timeout=10)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_note() -> str:
    """The load average now, and whether a result can count (the project's rule: above 1.5
    a result is inconclusive, neither a pass nor a miss)."""
    load = os.getloadavg()[0]
    return f"load {load:.1f}" + (" (above 1.5: inconclusive)" if load > 1.5 else "")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_bare() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", BARE], stdout=subprocess.PIPE, text=True, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}"


def start_chaosproxy(
    upstream: str,
    run_dir: Path,
    source: Path | None = None,
    profile: str = "lambda0.0",
    command: Sequence[str] = (sys.executable, "-c", CLI),
) -> tuple[subprocess.Popen[str], str]:
    """`chaosproxy up` at `profile` in front of `upstream`, as the `bare` upstream.

    `source`: a folder whose `chaosproxy/` package wins over the installed one (domains and
    profiles still come from the installed checkout), to measure an earlier version.
    `command`: what runs the CLI with `up`'s arguments after it (under a profiler, say).
    """
    args = ["up", "--port", "0", "--profile", profile, "--domains", "none"]
    args += ["--upstream", f"bare={upstream}", "--run-dir", str(run_dir)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    process = subprocess.Popen(
        [*command, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=run_dir.parent,
    )
    assert process.stdout is not None
    for line in process.stdout:
        match = re.match(r"chaosproxy (http://\S+)", line)
        if match is not None:
            return process, f"{match.group(1)}/bare"
    process.kill()
    raise RuntimeError("chaosproxy did not start")


def start_nginx(upstream: str, tmp: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    binary = shutil.which("nginx")
    if binary is None:
        print("(nginx not installed: skipped)", file=sys.stderr)
        return None
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX.format(tmp=tmp, upstream=upstream.rsplit(":", 1)[1], port=port))
    process = subprocess.Popen(
        [binary, "-c", str(conf), "-p", str(tmp), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, f"http://127.0.0.1:{port}"


def start_toxy(
    upstream: str, tmp: Path, toxy_dir: Path, keep_alive: bool
) -> tuple[subprocess.Popen[bytes], str] | None:
    """toxy forwarding everything to `upstream`, no poison; None when it is not installed."""
    module = toxy_dir / "node_modules" / "toxy"
    node = shutil.which("node")
    if node is None or not (module / "package.json").is_file():
        if keep_alive:
            print(f"(toxy not found under {toxy_dir}: skipped; see --toxy-dir)", file=sys.stderr)
        return None
    port = free_port()
    script = tmp / f"toxy-{int(keep_alive)}.js"
    script.write_text(
        TOXY.format(
            module=str(module), upstream=upstream, port=port, keep_alive=str(keep_alive).lower()
        )
    )
    process = subprocess.Popen(
        [node, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return process, f"http://127.0.0.1:{port}"


async def wait_until_up(url: str, method: str) -> None:
    deadline = time.monotonic() + 30
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.request(method, url, data=BODY) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


class Measured(NamedTuple):
    """One measurement. `failed`: replies that were not 2xx, and socket errors: a target
    with any is invalid, and its rate is never printed (a proxy answering 500 fast is not
    fast)."""

    rps: float
    p50_ms: float
    count: int
    failed: int = 0


def run_wrk(
    url: str,
    method: str,
    concurrency: int,
    seconds: float,
    tmp: Path,
    lua: str | None = None,
    errors_expected: bool = False,
) -> Measured:
    """One wrk run; a target that answered any non-2xx is flagged invalid unless errors are
    what is measured (a fault profile's injected errors)."""
    script = tmp / f"{method}.lua"
    script.write_text(
        lua
        if lua is not None
        else f'wrk.method = "{method}"\n'
        + (
            f'wrk.body = \'{BODY}\'\nwrk.headers["Content-Type"] = "application/json"\n'
            if method == "POST"
            else ""
        )
    )
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{concurrency}",
            f"-d{int(seconds)}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    assert p50 is not None, out
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p50.group(2)]
    count = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    failed = 0
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non_2xx is not None:
        failed += int(non_2xx.group(1))
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    if sockets is not None:
        failed += sum(int(n) for n in sockets.groups())
    if failed and not errors_expected:
        print(f"warning: {url}: {failed} failed requests (target invalid)", file=sys.stderr)
    return Measured(rps, float(p50.group(1)) * scale, count, failed)


async def run_aiohttp(url: str, method: str, concurrency: int, seconds: float) -> Measured:
    latencies: list[float] = []
    failed = 0
    deadline = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal failed
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                async with session.request(method, url, data=BODY) as response:
                    await response.read()
                    failed += not 200 <= response.status < 300
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return Measured(
        len(latencies) / elapsed, statistics.median(latencies) * 1000, len(latencies), failed
    )


async def measure(url: str, method: str, concurrency: int, seconds: float, tmp: Path) -> Measured:
    if shutil.which("wrk"):
        return await asyncio.to_thread(run_wrk, url, method, concurrency, seconds, tmp)
    return await run_aiohttp(url, method, concurrency, seconds)


MeasureOne = Callable[[str, int], Awaitable[Measured]]


async def interleaved_rounds(
    names: list[str], rounds: int, measure_one: MeasureOne, proxy_pid: Callable[[str], int | None]
) -> tuple[dict[tuple[str, int], list[Measured]], dict[str, list[float]]]:
    """Measure every target at c=32 and c=1, round after round, rotating their order.

    Returns the measurements per (target, concurrency) and, for targets with a proxy
    process, its CPU µs per request at c=32 (what moves least on a shared machine).
    """
    results: dict[tuple[str, int], list[Measured]] = {}
    cpu: dict[str, list[float]] = {}
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for concurrency in (32, 1):
            for target in order:
                pid = proxy_pid(target)
                before = cpu_seconds(pid) if pid is not None else 0.0
                got = await measure_one(target, concurrency)
                results.setdefault((target, concurrency), []).append(got)
                if pid is not None and concurrency == 32:
                    used = cpu_seconds(pid) - before
                    cpu.setdefault(target, []).append(used / max(got.count, 1) * 1e6)
        print(f"round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    return results, cpu


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3, help="per measurement")
    parser.add_argument(
        "--toxy-dir",
        type=Path,
        default=Path(os.environ.get("TOXY_DIR", Path(__file__).resolve().parent.parent)),
        help="folder whose node_modules/ holds toxy (default: $TOXY_DIR, else the checkout)",
    )
    args = parser.parse_args()
    processes: list[subprocess.Popen[str] | subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        try:
            bare, upstream = start_bare()
            processes.append(bare)
            proxy, proxied = start_chaosproxy(upstream, tmp / "run")
            processes.append(proxy)
            targets = {
                "direct tool": (f"{upstream}/tools/echo", "POST"),
                "chaosproxy tool": (f"{proxied}/tools/echo", "POST"),
                "direct rest": (f"{upstream}/api/items/42", "GET"),
                "chaosproxy rest": (f"{proxied}/api/items/42", "GET"),
            }
            nginx = start_nginx(upstream, tmp)
            if nginx is not None:
                processes.append(nginx[0])
                targets["nginx tool"] = (f"{nginx[1]}/tools/echo", "POST")
            for keep_alive, name in ((False, "toxy tool"), (True, "toxy keepalive tool")):
                toxy = start_toxy(upstream, tmp, args.toxy_dir, keep_alive)
                if toxy is not None:
                    processes.append(toxy[0])
                    targets[name] = (f"{toxy[1]}/tools/echo", "POST")
            for url, method in targets.values():
                await wait_until_up(url, method)
            names = list(targets)

            async def measure_one(target: str, concurrency: int) -> Measured:
                url, method = targets[target]
                return await measure(url, method, concurrency, args.seconds, tmp)

            results, cpu = await interleaved_rounds(
                names,
                args.rounds,
                measure_one,
                lambda target: proxy.pid if target.startswith("chaosproxy") else None,
            )
        finally:
            stop_all(processes)
    tool = "wrk" if shutil.which("wrk") else "aiohttp client"
    print(
        f"{args.rounds} interleaved rounds x {args.seconds:g} s, {tool}, {os.cpu_count()} CPUs, "
        f"{load_note()}"
    )
    print_table(names, results, cpu)
    for name in ("toxy tool", "toxy keepalive tool"):
        if name in names and not invalid(results, name):
            pairs = zip(results[("chaosproxy tool", 32)], results[(name, 32)], strict=True)
            ratio = statistics.median(ours.rps / theirs.rps for ours, theirs in pairs)
            print(f"chaosproxy tool vs {name[:-5]}: {ratio:.2f}x the requests/s at c=32")


def invalid(results: dict[tuple[str, int], list[Measured]], target: str) -> int:
    """Failed requests of `target` over all its measurements (0: a valid baseline)."""
    return sum(
        m.failed for (name, _), measured in results.items() if name == target for m in measured
    )


def print_table(
    names: list[str], results: dict[tuple[str, int], list[Measured]], cpu: dict[str, list[float]]
) -> None:
    """Medians over rounds; ratios and added latency are taken round by round. A target
    with any failed request is marked invalid (no rate, no ratio), and so is every ratio to
    an invalid direct baseline."""
    header = f"{'target':<21}{'c=32 req/s':>11}{'vs direct':>10}{'c=1 p50 ms':>12}{'added ms':>10}"
    print(header + f"{'proxy CPU us/req':>18}")
    for target in names:
        base = next(
            (name for name in names if name.startswith("direct") and name[6:] in target),
            names[0],
        )
        failed = invalid(results, target) or invalid(results, base)
        if failed:
            which = target if invalid(results, target) else f"baseline {base}"
            print(f"{target:<21}  INVALID: {which} had {failed} non-2xx replies or socket errors")
            continue
        rps = [m.rps for m in results[(target, 32)]]
        pairs = zip(results[(target, 32)], results[(base, 32)], strict=True)
        ratios = [m.rps / d.rps for m, d in pairs]
        p50 = [m.p50_ms for m in results[(target, 1)]]
        pairs = zip(results[(target, 1)], results[(base, 1)], strict=True)
        added = [m.p50_ms - d.p50_ms for m, d in pairs]
        used = f"{statistics.median(cpu[target]):>18.0f}" if target in cpu else f"{'-':>18}"
        print(
            f"{target:<21}{statistics.median(rps):>11.0f}{statistics.median(ratios):>9.2f}x"
            f"{statistics.median(p50):>12.3f}{statistics.median(added):>+10.3f}{used}"
        )


if __name__ == "__main__":
    asyncio.run(main())
