"""Scoring at scale: `chaosproxy score` on a run directory of about a million call records.

Not a test: it prints numbers. The run directory is built from a real run, not invented:
a small grid is run once with `chaosproxy run` (or `--seed-run DIR` names one), and its
episodes are replicated until the log holds `--calls` records. Replica i of an episode is
the same episode of a task renamed `TASK.rI` (tasks.jsonl gets the renamed copies), so
episode ids, episode keys and draw keys are distinct while every call, fault, incident,
verdict and goal check keeps its structure and the mix of faults stays the run's own.
Replicas share the seed episode's directory (journal.json, by a symlink).

Each figure is measured end to end in a fresh subprocess (`chaosproxy score --quiet
RUN_DIR`): wall time, CPU time (user + system) and peak RSS of that child
(`resource.getrusage(RUSAGE_CHILDREN)` in a wrapper process of its own), plus the cost of
`import chaosproxy.scoring` alone. `--keep DIR` reuses a run directory already built there
(also one from `scoring.synthetic`); with PYTHONPATH pointing at another checkout, the
figures are that checkout's (the "before" figures in benchmarks/README.md). The machine's
load average is printed beside every figure; wall time moves with load, CPU time and RSS
much less.

    .venv/bin/python benchmarks/score_scale.py                      # 1 M records, 3 rounds
    .venv/bin/python benchmarks/score_scale.py --seed-run runs/X --calls 200000
    .venv/bin/python benchmarks/score_scale.py --keep /tmp/big      # keep the run directory
    .venv/bin/python benchmarks/score_scale.py --synthetic          # also scoring.synthetic's
    .venv/bin/python benchmarks/score_scale.py --keep /tmp/big --baseline /tmp/base
        # before/after interleaved per round; /tmp/base holds an older chaosproxy package
        # (git archive REV chaosproxy | tar -x -C /tmp/base), run through PYTHONPATH
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SEED_GRID = [
    *("--agent", "naive", "--agent", "retry", "--agent", "robust"),
    *("--profile", "lambda0.0", "--profile", "lambda0.2", "--profile", "lambda0.3"),
    *("--profile", "fit-v2", "--trials", "1", "--concurrency", "8", "--no-score"),
]


@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    load: tuple[float, float, float]

    def line(self, what: str) -> str:
        one, five, fifteen = self.load
        return (
            f"{what:34} wall {self.wall_s:6.2f} s  CPU {self.cpu_s:6.2f} s  "
            f"peak RSS {self.peak_rss_mb:6.0f} MB  (load {one:.2f} {five:.2f} {fifteen:.2f})"
        )


# Runs one command and prints its wall time, CPU time and peak RSS. A process of its own, so
# that RUSAGE_CHILDREN (which keeps the largest peak of every child ever waited for) sees
# only the measured command, never the seed run's processes.
_WRAPPER = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": done.returncode, "stderr": done.stderr[-2000:], "wall": wall,
                  "cpu": usage.ru_utime + usage.ru_stime, "maxrss_kb": usage.ru_maxrss}))
"""


def measure(command: list[str], baseline: Path | None = None) -> Measured:
    """Run one command to completion in a fresh process; its wall time, CPU time (user +
    system) and peak RSS, with the load average when it ended. It runs from a scratch
    directory, so `python -c` imports the installed (or PYTHONPATH's) chaosproxy;
    `baseline` puts another chaosproxy package first on PYTHONPATH."""
    env = dict(os.environ)
    if baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(baseline), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [sys.executable, "-c", _WRAPPER, *command],
            capture_output=True,
            text=True,
            check=True,
            cwd=cwd,
            env=env,
        )
    figures = json.loads(done.stdout)
    if figures["rc"] != 0:
        raise SystemExit(f"{' '.join(command)} failed ({figures['rc']}):\n{figures['stderr']}")
    return Measured(figures["wall"], figures["cpu"], figures["maxrss_kb"] / 1024.0, os.getloadavg())


def run_seed(out: Path) -> Path:
    """A small real grid (scripted agents, λ0–0.3 and FIT v2), run once."""
    command = [str(BIN / "chaosproxy"), "run", *SEED_GRID, "--out", str(out)]
    print(f"seed run: {' '.join(command[1:])}", flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def replicate(seed: Path, out: Path, calls: int) -> tuple[int, int]:
    """Write `out` with the seed's episodes replicated to about `calls` call records;
    returns (call records, episodes) written."""
    episodes = [json.loads(line) for line in _lines(seed / "episodes.jsonl")]
    tasks = _lines(seed / "tasks.jsonl")
    by_episode: dict[str, list[str]] = defaultdict(list)
    for line in _lines(seed / "calls.jsonl"):
        by_episode[json.loads(line)["episode"]].append(line)
    seed_calls = sum(len(lines) for lines in by_episode.values())
    if seed_calls == 0:
        raise SystemExit(f"{seed}: calls.jsonl has no records to replicate")
    replicas = max(1, math.ceil(calls / seed_calls))
    out.mkdir(parents=True)
    shutil.copy(seed / "config.json", out / "config.json")
    (out / "episodes").mkdir()
    written = records = 0
    with (
        (out / "calls.jsonl").open("w", encoding="utf-8") as log,
        (out / "episodes.jsonl").open("w", encoding="utf-8") as eps,
        (out / "tasks.jsonl").open("w", encoding="utf-8") as task_file,
    ):
        for i in range(replicas):
            for line in tasks:
                task = json.loads(line)
                task["id"] = f"{task['id']}.r{i}"
                task_file.write(json.dumps(task) + "\n")
            for record in episodes:
                old_episode, old_key, task = (
                    record["episode"],
                    record["episode_key"],
                    record["task_id"],
                )
                new_key = old_key.replace(task, f"{task}.r{i}", 1)
                new_episode = old_episode.replace(old_key, new_key, 1)
                for line in by_episode.get(old_episode, []):
                    log.write(line.replace(old_episode, new_episode).replace(old_key, new_key))
                    log.write("\n")
                    records += 1
                copy = dict(record, episode=new_episode, episode_key=new_key)
                copy["task_id"] = f"{task}.r{i}"
                eps.write(json.dumps(copy) + "\n")
                folder = seed / "episodes" / old_episode
                if folder.is_dir():
                    (out / "episodes" / new_episode).symlink_to(folder.resolve())
                written += 1
    return records, written


def import_cost(baseline: Path | None = None) -> Measured:
    return measure([sys.executable, "-c", "import chaosproxy.scoring"], baseline)


def score_cost(run: Path, baseline: Path | None = None) -> Measured:
    return measure([str(BIN / "chaosproxy"), "score", "--quiet", str(run)], baseline)


def rounds(run: Path, what: str, count: int, baseline: Path | None) -> None:
    """`count` scorings of `run`; with a baseline, before and after in turn each round (so
    both see the same load), results.json and episodes.csv compared byte for byte."""
    for i in range(count):
        if baseline is not None:
            print(score_cost(run, baseline).line(f"before: {what}, round {i + 1}"), flush=True)
            before = [(run / name).read_bytes() for name in ("results.json", "episodes.csv")]
        label = (
            f"after:  {what}, round {i + 1}" if baseline is not None else f"{what}, round {i + 1}"
        )
        print(score_cost(run).line(label), flush=True)
        if baseline is not None:
            after = [(run / name).read_bytes() for name in ("results.json", "episodes.csv")]
            print("  outputs " + ("identical" if after == before else "DIFFER"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000, help="call records to score")
    parser.add_argument("--seed-run", type=Path, help="replicate this run directory")
    parser.add_argument("--rounds", type=int, default=3, help="scoring runs (fresh processes)")
    parser.add_argument("--keep", type=Path, help="build the run directory here and keep it")
    parser.add_argument(
        "--synthetic", action="store_true", help="also score scoring.synthetic's run"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a directory holding another chaosproxy package: each round scores with it "
        "(PYTHONPATH) and then with this one, and compares their outputs",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="score-scale-") as scratch:
        work = Path(scratch)
        run = args.keep or work / "big"
        if args.keep is not None and (run / "calls.jsonl").is_file():
            print(f"reusing {run}")
        else:
            seed = args.seed_run or run_seed(work / "seed")
            records, episodes = replicate(seed, run, args.calls)
            print(f"built {run}: {records:,} call records, {episodes:,} episodes")
        size = (run / "calls.jsonl").stat().st_size / 1e6
        print(f"calls.jsonl {size:,.0f} MB; python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
        if args.baseline is not None:
            print(import_cost(args.baseline).line("before: import chaosproxy.scoring"))
        print(import_cost().line("import chaosproxy.scoring"))
        rounds(run, "chaosproxy score", args.rounds, args.baseline)
        if args.synthetic:
            from chaosproxy.scoring.synthetic import write_synthetic_run

            synthetic = work / "synthetic"
            count = write_synthetic_run(synthetic, calls=args.calls)
            print(f"synthetic: {args.calls:,} calls in {count} episodes")
            rounds(synthetic, "synthetic score", args.rounds, args.baseline)


if __name__ == "__main__":
    main()
