"""What the pytest plugin costs: in a session that does not use it, per chaos trial, and to
start an environment. Not a test: it prints numbers, each beside its baseline from the
same run.

    .venv/bin/python benchmarks/pytest_plugin.py            # 40 tests, 3 sessions each
    .venv/bin/python benchmarks/pytest_plugin.py --tests 200 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PLAIN = """
import pytest

@pytest.mark.parametrize("trial", range({n}))
def test_plain(trial):
    assert trial >= 0
"""
CALLS = """
import httpx
import pytest

@pytest.mark.parametrize("trial", range({n}))
def test_plain(trial):
    assert httpx.get("{url}", timeout=10).status_code < 500
"""
CHAOS = """
import httpx
import pytest

@pytest.mark.chaos(profiles=["lambda0.0"], trials={n})
def test_chaos(chaos_episode):
    assert httpx.get(chaos_episode.url("travel") + "/tools", timeout=10).status_code < 500
"""


def session(folder: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(done.stdout[-3000:] + done.stderr[-2000:])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import chaosproxy

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pytest.ini").write_text("[pytest]\nchaos_domains = travel\n")
        (folder / "test_plain.py").write_text(textwrap.dedent(PLAIN.format(n=args.tests)))
        on = [session(folder) for _ in range(args.repeat)]
        off = [session(folder, "-p", "no:chaosproxy") for _ in range(args.repeat)]
        print(f"session of {args.tests} plain tests, median of {args.repeat}:")
        print(
            f"  plugin off {statistics.median(off):.2f} s, installed but unused "
            f"{statistics.median(on):.2f} s, "
            f"ratio {statistics.median(on) / statistics.median(off):.2f}"
        )

        starts, closes = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            env = chaosproxy.Environment(domains=["travel"], profile="lambda0.0").start()
            starts.append(time.perf_counter() - t)
            t = time.perf_counter()
            env.close()
            closes.append(time.perf_counter() - t)
        print(
            f"Environment(domains=['travel']): start {statistics.median(starts):.2f} s, "
            f"close {statistics.median(closes):.2f} s (median of {args.repeat})"
        )

        (folder / "test_plain.py").unlink()
        with chaosproxy.Environment(domains=["travel"], profile="lambda0.0") as env:
            with env.episode() as episode:
                url = episode.url("travel") + "/tools"  # the same service, same proxy hop
            (folder / "test_calls.py").write_text(
                textwrap.dedent(CALLS.format(n=args.tests, url=url))
            )
            plain = [session(folder, "test_calls.py") for _ in range(args.repeat)]
        (folder / "test_trials.py").write_text(textwrap.dedent(CHAOS.format(n=args.tests)))
        chaos = [session(folder, "test_trials.py") for _ in range(args.repeat)]
        extra = statistics.median(chaos) - statistics.median(plain) - statistics.median(starts)
        print(f"{args.tests} tests of one proxied call each, median of {args.repeat}:")
        print(
            f"  plain tests {statistics.median(plain):.2f} s, chaos trials "
            f"{statistics.median(chaos):.2f} s (includes one environment start and scoring)"
        )
        print(
            f"  per chaos trial beyond the start: {1000 * extra / args.tests:.1f} ms "
            "(episode, record, journal, end, and its share of scoring)"
        )


if __name__ == "__main__":
    main()
