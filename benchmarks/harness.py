"""Harness speed: episodes per second for the scripted agents, and scoring time for a big log.

Not a test: it prints numbers. Everything runs on 127.0.0.1, with a bounded grid.

    .venv/bin/python benchmarks/harness.py              # episodes/s at concurrency 1, 8, 32
    .venv/bin/python benchmarks/harness.py --calls 1000000   # plus scoring a synthetic log
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from chaosproxy import eventloop
from chaosproxy.runner.run import RunSpec, execute
from chaosproxy.scoring import score_run_dir
from chaosproxy.scoring.synthetic import write_synthetic_run


def episodes_per_second(
    agent: str, concurrency: int, profile: str, trials: int, work: Path
) -> tuple[int, float]:
    out = work / f"{agent}-{profile}-c{concurrency}"
    spec = RunSpec(
        agents=[agent],
        suite="reliabilitybench",
        profiles=[profile],
        epsilons=[0.0],
        trials=trials,
        out=out,
        concurrency=concurrency,
    )
    summary = eventloop.run(execute(spec))
    return summary.recorded, summary.recorded / summary.episodes_s


def scoring_seconds(calls: int, work: Path) -> float:
    run = work / "synthetic"
    write_synthetic_run(run, calls=calls)
    started = time.perf_counter()
    score_run_dir(run)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", nargs="+", default=["naive", "retry", "robust"])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 8, 32])
    parser.add_argument("--profile", default="lambda0.0")
    parser.add_argument("--trials", type=int, default=3, help="trials per task (62 tasks each)")
    parser.add_argument(
        "--calls", type=int, default=0, help="also score a synthetic log of N calls"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        print(f"episodes per second, suite reliabilitybench, profile {args.profile}")
        print(f"{'agent':8} {'concurrency':>11} {'episodes':>9} {'episodes/s':>11}")
        for agent in args.agents:
            for concurrency in args.concurrency:
                count, rate = episodes_per_second(
                    agent, concurrency, args.profile, args.trials, work
                )
                print(f"{agent:8} {concurrency:>11} {count:>9} {rate:>11.1f}")
        if args.calls:
            seconds = scoring_seconds(args.calls, work)
            print(f"scoring a synthetic run of {args.calls:,} calls: {seconds:.1f} s")


if __name__ == "__main__":
    main()
