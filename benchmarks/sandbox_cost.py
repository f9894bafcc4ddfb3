"""Added cost per call of the kernel-confined coding sandbox, against an unconfined baseline.

Not a test: it prints numbers. The baseline, started in the same run and interleaved with the
sandbox calls, is what the sandbox did before kernel confinement and is the floor of any child
process sandbox: a fresh `python -I -S` child that preloads the same standard modules, runs the
same snippet and prints its value, with no namespaces, Landlock, seccomp or second process.
The grading rows compare a hidden test file run as before (one worker that imports the agent's
code and the test together) with the grader split (a grader holding the test, a worker holding
the agent's code, plain values between them), in the same run.

    .venv/bin/python benchmarks/sandbox_cost.py             # 40 calls of each kind
    .venv/bin/python benchmarks/sandbox_cost.py --calls 100
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from chaosproxy.domains.coding.sandbox import run_snippet, run_tests
from chaosproxy.domains.coding.sandbox_child import PRELOADED
from chaosproxy.domains.coding.seed.world import make_default_state

SNIPPET = "from ledger.money import parse_amount\nparse_amount('$1,234.50')"
BASELINE = (
    "import importlib, sys\n"
    f"for name in {PRELOADED!r}:\n"
    "    importlib.import_module(name)\n"
    "from decimal import Decimal\n"
    "print(repr(Decimal('1234.50')))\n"
)


def _unconfined() -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", BASELINE], capture_output=True, check=True
    )
    assert done.stdout.strip() == b"Decimal('1234.50')"


def _timed(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    repo = make_default_state().repositories["ledger"]
    files = repo.sources()
    tests = repo.visible_tests()

    def snippet() -> None:
        run = run_snippet(files, SNIPPET)
        assert run.status == "ok" and run.value == "Decimal('1234.50')", run

    def suite() -> None:
        run = run_tests(files, tests)
        assert run.status == "ok" and len(run.tests) == 8, run

    hidden = dict(repo.hidden_tests)

    def hidden_in_one_worker() -> None:
        run = run_tests({**files, **hidden}, [*tests, *sorted(hidden)])
        assert run.status == "ok" and len(run.tests) == 11, run

    def hidden_in_grader() -> None:
        run = run_tests(files, tests, hidden=hidden)
        assert run.status == "ok" and len(run.tests) == 11, run

    calls: dict[str, Callable[[], None]] = {
        "unconfined child": _unconfined,
        "sandbox snippet": snippet,
        f"sandbox tests ({len(tests)} files)": suite,
        "grading, hidden in a worker": hidden_in_one_worker,
        "grading, hidden in grader": hidden_in_grader,
    }
    for warm in calls.values():
        warm()
    kinds: dict[str, list[float]] = {kind: [] for kind in calls}
    for _ in range(args.calls):
        for kind, call in calls.items():
            kinds[kind].append(_timed(call))
    base = kinds["unconfined child"]
    print(f"{args.calls} calls of each kind, interleaved; milliseconds per call")
    print(f"{'kind':28} {'median':>8} {'p95':>8} {'added median':>13} {'added p95':>10}")
    for kind, values in kinds.items():
        median, p95 = statistics.median(values), _p95(values)
        added = median - statistics.median(base), p95 - _p95(base)
        print(f"{kind:28} {median:8.1f} {p95:8.1f} {added[0]:13.1f} {added[1]:10.1f}")
    ratio = statistics.median(kinds["sandbox snippet"]) / statistics.median(base)
    print(f"sandbox snippet / unconfined child (median): {ratio:.2f}x")
    split = statistics.median(kinds["grading, hidden in grader"]) - statistics.median(
        kinds["grading, hidden in a worker"]
    )
    print(f"grader split, added per hidden file (median): {split:+.1f} ms")


if __name__ == "__main__":
    main()
