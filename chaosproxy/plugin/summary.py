"""Per test and profile: SR, pass^k with its interval, faults met; and the reliability gate.

The numbers come from scoring the session's run directory with the scorer itself, so they
are the ones `chaosproxy score` prints. A test is one unit (one task in the scorer's
terms) and k is its number of trials. pass^k = C(c, k) / C(n, k) (scoring.passk); over
k trials of one test that is 1 when all passed and 0 otherwise. Its interval treats
trials as independent with a common success probability p: the Wilson 95 % interval
[lo, hi] of p maps to [lo^k, hi^k] for p^k, since p -> p^k is increasing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chaosproxy.scoring.estimate import Estimate


@dataclass
class Row:
    test: str
    profile: str
    k: int
    episodes: int
    evaluable: int
    successes: int
    sr: Estimate
    pass_k: Estimate
    faults: Counter[str] = field(default_factory=Counter)

    @property
    def infra(self) -> int:
        return self.episodes - self.evaluable


def pass_k_estimate(n: int, c: int, k: int) -> Estimate:
    from chaosproxy.scoring.passk import pass_hat
    from chaosproxy.scoring.stats import wilson

    value = pass_hat(n, c, k)
    if value is None:
        return Estimate.na(f"only {n} of {k} trials evaluable", n=n)
    p = wilson(c, n)
    assert p.low is not None and p.high is not None
    return Estimate(value=value, n=n, low=p.low**k, high=p.high**k, method="wilson")


def rows_from_run(run_dir: Path, trials: Mapping[str, int]) -> list[Row]:
    """Score the run directory and group its episodes by (test, profile)."""
    from chaosproxy.scoring.api import score_runs, write_outputs
    from chaosproxy.scoring.stats import wilson

    scored = score_runs([run_dir])
    write_outputs(scored, run_dir)
    rows: list[Row] = []
    by_key: dict[tuple[str, str], Row] = {}
    for score in scored.episodes:
        record = score.record
        key = (record.task_id, record.profile)
        row = by_key.get(key)
        if row is None:
            k = trials.get(record.task_id, 1)
            row = Row(record.task_id, record.profile, k, 0, 0, 0, Estimate.na(""), Estimate.na(""))
            by_key[key] = row
            rows.append(row)
        row.episodes += 1
        if score.evaluable:
            row.evaluable += 1
            row.successes += bool(score.success)
        row.faults.update(hit.name for hit in score.faults)
    for row in rows:
        row.sr = wilson(row.successes, row.evaluable, "no evaluable episode")
        row.pass_k = pass_k_estimate(row.evaluable, row.successes, row.k)
    return sorted(rows, key=lambda r: (r.test, r.profile))


def gate_failures(rows: Sequence[Row], minimum: float | None) -> list[Row]:
    """Rows whose pass^k is below the minimum, or unmeasured (a trial did not complete)."""
    if minimum is None:
        return []
    return [row for row in rows if row.pass_k.value is None or row.pass_k.value < minimum]


def render_rows(rows: Sequence[Row]) -> str:
    from chaosproxy.report.fmt import est, render

    headers = ["test", "profile", "trials", "SR [95% CI]", "pass^k [95% CI]", "faults met"]
    body = []
    for row in rows:
        trials = f"{row.evaluable}/{row.k}" + (f" ({row.infra} infra)" if row.infra else "")
        faults = ", ".join(f"{name} {n}" for name, n in sorted(row.faults.items())) or "none"
        body.append([row.test, row.profile, trials, est(row.sr), est(row.pass_k), faults])
    return render(headers, body, right_from=len(headers))
