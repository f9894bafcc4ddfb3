"""Per test and profile: SR, pass^k with its interval, faults met; and the reliability gate.

The numbers come from scoring the session's run directory with the scorer itself, so they
are the ones `chaosproxy score` prints. A test is one unit (one task in the scorer's
terms) and k is its number of trials. pass^k = C(c, k) / C(n, k) (scoring.passk); over
k trials of one test that is 1 when all passed and 0 otherwise. Its value and interval are
`chaosproxy score`'s own (`scoring.passk.pass_table` over this one unit): one definition,
so the printed interval always holds the printed estimate (one unit: the Wilson interval
of the value over n = 1, e.g. 0.00 [0.00, 0.79]).
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
    trials: list[tuple[int, bool]] = field(default_factory=list)

    @property
    def infra(self) -> int:
        return self.episodes - self.evaluable


def pass_k_estimate(trials: Sequence[tuple[int, bool]], k: int, seed: int, name: str) -> Estimate:
    """pass^k of one test's evaluable (trial, success) pairs, exactly as the scorer's pass^k
    table computes it for one task; n/a when fewer than k trials were evaluable."""
    from chaosproxy.scoring.passk import pass_table

    if len(trials) < k:
        return Estimate.na(f"only {len(trials)} of {k} trials evaluable", n=len(trials))
    return pass_table({name: trials}, k, seed, name)[k - 1].pass_hat


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
            row.trials.append((record.trial, bool(score.success)))
        row.faults.update(hit.name for hit in score.faults)
    for row in rows:
        row.sr = wilson(row.successes, row.evaluable, "no evaluable episode")
        name = f"{row.test}/{row.profile}"
        row.pass_k = pass_k_estimate(row.trials, row.k, scored.results.runs[0].seed, name)
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
