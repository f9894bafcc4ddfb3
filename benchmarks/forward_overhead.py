"""What the forward (HTTPS_PROXY) hop costs: the same call through `up --forward-port` and
straight to the reverse proxy it hands each request to.

One HTTPS travel service on 127.0.0.1 with its own CA, one `chaosproxy up --domains none
--forward-port 0 --allow api.example.test=127.0.0.1:PORT` at lambda0.0; then N sequential
`POST /tools/search_flights` calls from one httpx client kept alive, (a) to the reverse
proxy's `/api.example.test/...` (plain HTTP in, HTTPS out) and (b) to
`https://api.example.test/...` through the forward proxy (TLS to mitmproxy, then the same
path). The table gives requests/s, p50 and p99, and (b) as a ratio of (a).

    .venv/bin/python benchmarks/forward_overhead.py [--requests 500]

Loopback only, ephemeral ports, everything stopped at the end. Not a test. The HTTPS
service runs in a thread of this process (as in tests/forward), so it shares the GIL with
the client on both paths.
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "forward"))

from chaosproxy.domains.registry import get_domain  # noqa: E402
from forward_helpers import (  # noqa: E402
    HOST,
    forward_args,
    make_certs,
    public_name,
    serve_https,
    start_up,
)

BODY = {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}


def measure(send: Callable[[], httpx.Response], requests: int) -> list[float]:
    for _ in range(20):
        send().raise_for_status()
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        send().raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times


def row(name: str, times: list[float], base: list[float] | None) -> str:
    rps = 1000 / statistics.fmean(times)
    p50 = statistics.median(times)
    p99 = statistics.quantiles(times, n=100)[98]
    ratio = f"{rps / (1000 / statistics.fmean(base)):.2f}" if base else "1.00"
    added = f"+{p50 - statistics.median(base):.2f} ms" if base else "-"
    return f"| {name} | {rps:.0f} | {p50:.2f} | {p99:.2f} | {ratio} | {added} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_certs(Path(tmp) / "certs", [HOST])
        app = public_name(get_domain("travel").asgi_app(), HOST)
        with serve_https(app, certs) as port:
            up = start_up(forward_args(certs, port), Path(tmp) / "run")
            try:
                with httpx.Client(timeout=30) as plain:
                    reverse = measure(
                        lambda: plain.post(f"{up.proxy}/{HOST}/tools/search_flights", json=BODY),
                        args.requests,
                    )
                trust = ssl.create_default_context(cafile=str(up.ca_cert))
                with httpx.Client(proxy=up.forward, verify=trust, timeout=30) as proxied:
                    forward = measure(
                        lambda: proxied.post(f"https://{HOST}/tools/search_flights", json=BODY),
                        args.requests,
                    )
            finally:
                up.stop()
    print(f"{args.requests} sequential requests each, one kept-alive client\n")
    print("| path | req/s | p50 ms | p99 ms | rps / reverse | p50 added |")
    print("|---|---|---|---|---|---|")
    print(row("reverse proxy (HTTP in, HTTPS out)", reverse, None))
    print(row("forward proxy (HTTPS via mitmproxy)", forward, reverse))


if __name__ == "__main__":
    main()
