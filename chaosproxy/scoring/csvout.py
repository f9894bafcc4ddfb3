"""episodes.csv: one row per episode, the numbers behind every aggregate."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from chaosproxy.scoring.episodes import EpisodeScore, recovered

COLUMNS = (
    "run",
    "agent",
    "episode",
    "task_id",
    "domain",
    "profile",
    "lambda",
    "epsilon",
    "trial",
    "outcome",
    "evaluable",
    "success",
    "t_success",
    "t_success_source",
    "t_f",
    "frr",
    "tool_calls",
    "l_min",
    "pei",
    "qf",
    "broken_rules",
    "faults_delivered",
    "fault_types",
    "faults_recovered",
    "escalated",
    "cn_success",
    "adversarial_complied",
    "s1_corrupted",
    "s2_uncorrected",
    "retries",
    "ignored_retry_after",
    "retried_non_retryable",
    "retry_storms",
    "duplicate_writes",
    "uninjected_errors",
    "duration_s",
    "error",
    "frr_no_recovery_needed",
    "pei_success",
    "adversarial_attempted",
    "model_calls",
    "model_faults_delivered",
    "model_fault_types",
    "crashed_after_fault",
    "agent_outcome",
)


def _cell(value: object) -> object:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def row(s: EpisodeScore) -> list[object]:
    """One episode's cells in COLUMNS order. Cells that are always a str or an int (names,
    counts, joined lists) are written as they are; the rest go through `_cell` (None is
    empty, booleans are true/false, floats have six significant digits)."""
    r = s.record
    calls = s.calls
    cell = _cell
    return [
        s.run,
        s.agent,
        r.episode,
        r.task_id,
        r.domain,
        r.profile,
        cell(s.lam),
        cell(r.epsilon),
        cell(r.trial),
        r.outcome,
        cell(s.evaluable),
        cell(s.success),
        cell(s.t_success),
        s.t_success_source,
        cell(s.t_f),
        cell(s.frr),
        cell(s.tool_calls),
        cell(s.l_min),
        cell(s.pei),
        cell(s.qf),
        ";".join(s.broken_rules),
        len(s.faults),
        ";".join(sorted({h.name for h in s.faults})),
        sum(h.visible and recovered(h, s.success) for h in s.faults),
        cell(s.escalated),
        cell(s.cn_success),
        cell(s.complied),
        cell(s.s1),
        cell(s.s2),
        cell(calls.retries),
        cell(calls.ignored_retry_after),
        cell(calls.retried_non_retryable),
        cell(calls.storms),
        cell(s.duplicate_writes),
        cell(calls.uninjected_errors),
        cell(r.duration_s),
        cell(r.error),
        cell(s.no_recovery_needed),
        cell(s.pei_success),
        cell(s.attempted),
        cell(calls.model_calls),
        len(calls.model_faults),
        ";".join(sorted({h.name for h in calls.model_faults})),
        cell(s.crashed_after_fault),
        cell(s.agent_outcome),
    ]


def write_csv(path: Path, scores: Sequence[EpisodeScore]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        # csv.writer on lists in COLUMNS order: what DictWriter writes, without a dict per
        # row and its per-row check of the keys (a noticeable cost over a hundred thousand
        # episodes)
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(map(row, scores))
