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
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def row(s: EpisodeScore) -> dict[str, object]:
    r = s.record
    faults_recovered = sum(h.visible and recovered(h, s.success) for h in s.faults)
    values: dict[str, object] = {
        "run": s.run,
        "agent": s.agent,
        "episode": r.episode,
        "task_id": r.task_id,
        "domain": r.domain,
        "profile": r.profile,
        "lambda": s.lam,
        "epsilon": r.epsilon,
        "trial": r.trial,
        "outcome": r.outcome,
        "evaluable": s.evaluable,
        "success": s.success,
        "t_success": s.t_success,
        "t_success_source": s.t_success_source,
        "t_f": s.t_f,
        "frr": s.frr,
        "tool_calls": s.tool_calls,
        "l_min": s.l_min,
        "pei": s.pei,
        "qf": s.qf,
        "broken_rules": ";".join(s.broken_rules),
        "faults_delivered": len(s.faults),
        "fault_types": ";".join(sorted({h.name for h in s.faults})),
        "faults_recovered": faults_recovered,
        "escalated": s.escalated,
        "cn_success": s.cn_success,
        "adversarial_complied": s.complied,
        "s1_corrupted": s.s1,
        "s2_uncorrected": s.s2,
        "retries": s.calls.retries,
        "ignored_retry_after": s.calls.ignored_retry_after,
        "retried_non_retryable": s.calls.retried_non_retryable,
        "retry_storms": s.calls.storms,
        "duplicate_writes": s.duplicate_writes,
        "uninjected_errors": s.calls.uninjected_errors,
        "duration_s": r.duration_s,
        "error": r.error,
        "frr_no_recovery_needed": s.no_recovery_needed,
        "pei_success": s.pei_success,
        "adversarial_attempted": s.attempted,
        "model_calls": s.calls.model_calls,
        "model_faults_delivered": len(s.calls.model_faults),
        "model_fault_types": ";".join(sorted({h.name for h in s.calls.model_faults})),
        "crashed_after_fault": s.crashed_after_fault,
        "agent_outcome": s.agent_outcome,
    }
    return {key: _cell(values[key]) for key in COLUMNS}


def write_csv(path: Path, scores: Sequence[EpisodeScore]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        # csv.writer on the values in COLUMNS order: what DictWriter writes, without its
        # per-row check of the keys (a noticeable cost over a hundred thousand episodes)
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(row(s).values() for s in scores)
