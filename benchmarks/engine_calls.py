"""The fault engine alone, in process: CPU µs per tool call (`before_call` + `after_call`).

No sockets, so load moves it far less than `proxy_modes.py`; the best of `--repeats`
runs is printed. With `--episodes`, a new episode every 10 calls (as `proxy_modes.py
faults`). Compare two versions by putting one first on PYTHONPATH:

    .venv/bin/python benchmarks/engine_calls.py [--profile lambda0.2] [--calls 20000]
    PYTHONPATH=/tmp/main-src .venv/bin/python benchmarks/engine_calls.py ...

(`/tmp/main-src`: `proxy_versions.extract("main", ...)`, main's `chaosproxy/`).
"""

from __future__ import annotations

import argparse
import os
import time

from chaosproxy.profiles import load_shipped_profile

from chaosproxy.faults import CallContext, FaultEngine

BODY = {"id": "A1", "name": "echo", "price": 12.5, "tags": ["a", "b"]}


def run(profile: str, calls: int) -> float:
    """CPU µs per call over `calls` calls, a new episode every 10."""
    engine = FaultEngine(load_shipped_profile(profile), seed=7)
    start = time.process_time()
    for n in range(calls):
        ctx = CallContext(
            episode=f"e{n // 10}",
            step=n % 10 + 1,
            domain="bare",
            tool="echo",
            arguments={"item_id": "A1", "n": n % 3},
        )
        decision = engine.before_call(ctx)
        if decision.action == "forward":
            engine.after_call(decision, 200, dict(BODY))
        if n % 10 == 9:
            engine.forget_episode(ctx.episode)
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="append")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import chaosproxy

    print(f"chaosproxy from {os.path.dirname(chaosproxy.__file__)}, load {os.getloadavg()[0]:.1f}")
    for profile in args.profile or ["lambda0.0", "lambda0.2"]:
        best = min(run(profile, args.calls) for _ in range(args.repeats))
        print(f"{profile:<10} engine CPU {best:6.1f} us/call (best of {args.repeats})")


if __name__ == "__main__":
    main()
