"""Episodes per second: a plain run against `run --ray` on 1 and 2 Ray nodes, one machine.

Runs the same scripted grid (the retry agent on travel at λ=0.2, no model) three ways, in
this process with `chaosproxy.runner.run.execute`:

  plain      one Environment, --concurrency C
  ray-1      a Ray cluster of one node (1 CPU): one worker, C episodes at a time
  ray-2      two nodes on loopback (1 CPU each): two workers, C each

For each it prints episodes/s over the episodes alone (services', workers' and Ray's
start excluded) and over the whole run, Ray's start-up (`ray start` until every node is
alive, then the workers' environments), and the peak RSS and PSS of the Ray processes
(every process of the nodes' sessions: GCS, raylets, workers, …; PSS counts shared pages
once), each beside the load average.
Needs Ray: run it with the environment scripts/ray_env.sh makes:

    "$(bash scripts/ray_env.sh | tail -1)" benchmarks/scale.py --trials 4 --concurrency 4

Linux only (RSS from /proc). The cluster is stopped by pid at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "scale"))

from raycluster import Cluster, ray_python

from chaosproxy import eventloop
from chaosproxy.runner.run import RunSpec, execute


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def memory_mb(pids: list[int]) -> tuple[float, float]:
    """Summed RSS and PSS (shared pages split among their users) of `pids`, in MB."""
    rss = pss = 0
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for name, value in re.findall(r"^(Rss|Pss):\s+(\d+) kB", rollup, re.MULTILINE):
            if name == "Rss":
                rss += int(value)
            else:
                pss += int(value)
    return rss / 1024, pss / 1024


class PeakMemory(threading.Thread):
    """The largest summed RSS and PSS of a cluster's processes, sampled every 0.5 s."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self.cluster, self.done = cluster, threading.Event()
        self.rss = self.pss = 0.0

    def run(self) -> None:
        while not self.done.wait(0.5):
            rss, pss = memory_mb(self.cluster.pids())
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)


def grid(out: Path, args: argparse.Namespace, ray: str | None) -> RunSpec:
    return RunSpec(
        agents=["retry"],
        suite="reliabilitybench",
        profiles=["lambda0.2"],
        epsilons=[0.0],
        trials=args.trials,
        out=out,
        seed=7,
        concurrency=args.concurrency,
        domains=["travel"],
        ray=ray,
    )


def measure(name: str, spec: RunSpec) -> tuple[int, float, float]:
    started = time.monotonic()
    summary = eventloop.run(execute(spec))
    wall = time.monotonic() - started
    rate = summary.recorded / summary.episodes_s if summary.episodes_s else 0.0
    print(
        f"{name:6} {summary.recorded} episodes · {rate:5.2f} ep/s over the episodes "
        f"({summary.episodes_s:.1f} s) · {summary.recorded / wall:5.2f} ep/s over the run "
        f"({wall:.1f} s; start and stop {wall - summary.episodes_s:.1f} s) · {load()}",
        flush=True,
    )
    return summary.recorded, rate, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    if not Path(ray_python()).is_file():
        sys.exit("no Ray environment: run scripts/ray_env.sh")
    base = Path(tempfile.mkdtemp(prefix="cpscale-"))
    print(f"start · {load()}", flush=True)
    measure("plain", grid(base / "plain", args, None))
    for nodes in (1, 2):
        cluster = Cluster(Path(sys.executable), cpus=1)
        os.environ.update(cluster.env)
        try:
            started = time.monotonic()
            cluster.start(nodes)
            up = time.monotonic() - started
            rss, pss = memory_mb(cluster.pids())
            print(
                f"ray-{nodes} cluster start {up:.1f} s · Ray idle RSS {rss:.0f} MB, "
                f"PSS {pss:.0f} MB · {load()}",
                flush=True,
            )
            peak = PeakMemory(cluster)
            peak.start()
            measure(f"ray-{nodes}", grid(base / f"ray{nodes}", args, cluster.address))
            peak.done.set()
            peak.join()
            print(
                f"ray-{nodes} Ray peak RSS {peak.rss:.0f} MB, PSS {peak.pss:.0f} MB "
                f"({len(cluster.pids())} processes) · {load()}",
                flush=True,
            )
        finally:
            cluster.stop()
    print(f"end · {load()}", flush=True)


if __name__ == "__main__":
    main()
