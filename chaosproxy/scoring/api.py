"""Scoring entry points: one or two run directories in, Results (and the per-episode
scores behind them) out."""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chaosproxy.records import EPISODES_CSV, RESULTS_FILE
from chaosproxy.scoring import agentprop, aggregate, quality
from chaosproxy.scoring.agentprop import ModelInjection
from chaosproxy.scoring.calls import (
    RETRY_AFTER_SLACK_S,
    STORM_GROWTH,
    STORM_MIN_WAIT_S,
    STORM_RETRIES,
    EpisodeCalls,
    collect,
)
from chaosproxy.scoring.compare import compare
from chaosproxy.scoring.csvout import write_csv
from chaosproxy.scoring.episodes import FRR_FULL_WINDOW, EpisodeScore, score_episode
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.logonly import score_log
from chaosproxy.scoring.passk import Surface, pass_table, surface
from chaosproxy.scoring.profiles import profile_lambda
from chaosproxy.scoring.results import (
    METRICS_VERSION,
    AgentSummary,
    Comparison,
    DomainRow,
    GroupMetrics,
    LogOnlyRun,
    Results,
    RunInfo,
)
from chaosproxy.scoring.rundir import RunData, TruncatedLine, iter_call_rows, load_run
from chaosproxy.scoring.stats import BCA_MAX_N, BOOTSTRAP_RESAMPLES, mover_gap
from chaosproxy.scoring.tier import CAVEAT, MIN_TIER_N, TIERS, gaps_by_profile, judge


@dataclass
class Scored:
    results: Results
    episodes: list[EpisodeScore]


def _labels(runs: Sequence[RunData]) -> list[str]:
    labels: list[str] = []
    for run in runs:
        label = run.path.resolve().name or "run"
        while label in labels:
            label += "'"
        labels.append(label)
    return labels


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off while scoring: a run of a hundred thousand episodes
    holds millions of containers, none in a reference cycle, and the collector kept walking
    them all (a quarter of the CPU at 100 k records). Reference counting still frees
    everything; the collector is back on when scoring ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def score_runs(paths: Sequence[Path]) -> Scored:
    """Score one run, or several side by side (an agent that appears in two runs is
    labelled `agent@run`). Reads the run directories only: no domain code is imported."""
    with paused_gc():
        return _score_runs(paths)


def _score_runs(paths: Sequence[Path]) -> Scored:
    runs = [load_run(Path(p)) for p in paths]
    labels = _labels(runs)
    agents_per_run = [{e.agent for e in run.episodes} for run in runs]
    seen: dict[str, int] = defaultdict(int)
    for names in agents_per_run:
        for name in names:
            seen[name] += 1
    seed = runs[0].config.seed
    scores: list[EpisodeScore] = []
    infos: list[RunInfo] = []
    logs: list[LogOnlyRun] = []
    for run, label in zip(runs, labels, strict=True):
        truncated: list[TruncatedLine] = list(run.truncated)
        injections: dict[str, ModelInjection] = {}
        calls = iter_call_rows(run.path, truncated, run.attempts)
        facts = collect(calls, injections, agentprop.observe)
        if run.calls_only:
            logs.append(score_log(run, label, facts, seed))
        known = {e.episode for e in run.episodes}
        lambdas: dict[str, float | None] = {}  # per profile, not per episode
        for record in run.episodes:
            agent = record.agent if seen[record.agent] == 1 else f"{record.agent}@{label}"
            if record.profile not in lambdas:
                resolved = run.config.profiles.get(record.profile)
                lambdas[record.profile] = profile_lambda(record.profile, resolved)
            lam = lambdas[record.profile]
            score = score_episode(
                run,
                label,
                agent,
                record,
                run.tasks.get(record.task_id),
                facts.get(record.episode) or EpisodeCalls(),
                lam,
            )
            score.model_injection = injections.get(record.episode)
            scores.append(score)
        infos.append(
            RunInfo(
                label=label,
                path=str(run.path),
                seed=run.config.seed,
                agent=run.config.agent,
                episode_records=len(run.episodes),
                duplicate_records=run.duplicates,
                calls_without_episode=0 if run.calls_only else len(set(facts) - known),
                provenance=run.provenance,
                truncated=truncated,
            )
        )
    results = build_results(runs, infos, scores, seed)
    results.log_only = logs
    results.warnings = [
        f"{info.label}: {cut.file} line {cut.line} is truncated ({cut.bytes} bytes, no "
        "newline; a writer was killed mid-line?) and was skipped"
        for info in infos
        for cut in info.truncated
    ]
    return Scored(results=results, episodes=scores)


def _k_max(runs: Sequence[RunData], scores: Sequence[EpisodeScore]) -> int:
    per_unit: dict[tuple[str, str, str, float], int] = defaultdict(int)
    for s in scores:
        per_unit[(s.agent, s.record.profile, s.record.task_id, s.record.epsilon)] += 1
    configured = max((run.config.trials or 0 for run in runs), default=0)
    return max(configured, max(per_unit.values(), default=0), 1)


def build_results(
    runs: Sequence[RunData], infos: list[RunInfo], scores: list[EpisodeScore], seed: int
) -> Results:
    k_max = _k_max(runs, scores)
    unchecked = quality.unchecked(
        rule
        for run in runs
        for task in run.tasks.values()
        for rule in (getattr(task, "quality_rules", None) or [])
    )
    by_group: dict[tuple[str, str], list[EpisodeScore]] = defaultdict(list)
    for s in scores:
        by_group[s.key].append(s)
    groups: dict[tuple[str, str], GroupMetrics] = {}
    configs = {label.label: run.config.profiles for label, run in zip(infos, runs, strict=True)}
    for (agent, profile), members in by_group.items():
        groups[(agent, profile)] = aggregate.group_metrics(
            members[0].run,
            agent,
            profile,
            members[0].lam,
            members,
            seed,
            k_max,
            unchecked,
            configs.get(members[0].run, {}).get(profile),
        )
    agents = [
        _agent_summary(
            agent,
            [g for g in groups.values() if g.agent == agent],
            [s for s in scores if s.agent == agent],
            seed,
            k_max,
        )
        for agent in dict.fromkeys(s.agent for s in scores)
    ]
    comparisons = _comparisons(groups, by_group, seed)
    settings: dict[str, object] = {
        "confidence": 0.95,
        "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
        "bootstrap_method": f"BCa (scipy) up to n = {BCA_MAX_N}, percentile above",
        "bootstrap_seed": seed,
        "tier_min_n": MIN_TIER_N,
        "recovery_rules": aggregate.RECOVERY_RULES,
        "k_max": k_max,
        "frr_full_window_steps": FRR_FULL_WINDOW,
        "tiers": [{"tier": n, "frr_min": f, "pei_min": p} for n, f, p in TIERS],
        "tier_caveat": CAVEAT,
        "quality_rules": {name: q for name, (q, _) in quality.RULES.items()},
        "retry_after_slack_s": RETRY_AFTER_SLACK_S,
        "storm": {"retries": STORM_RETRIES, "growth": STORM_GROWTH, "min_wait_s": STORM_MIN_WAIT_S},
    }
    return Results(
        metrics_version=METRICS_VERSION,
        runs=infos,
        settings=settings,
        counts=aggregate.counts(scores),
        groups=sorted(
            groups.values(), key=lambda g: (g.agent, g.lam is None, g.lam or 0, g.profile)
        ),
        agents=agents,
        domains=_domain_rows(scores, seed, k_max),
        comparisons=comparisons,
    )


def _agent_summary(
    agent: str, groups: list[GroupMetrics], scores: list[EpisodeScore], seed: int, k_max: int
) -> AgentSummary:
    # Δ_rel over the λ family only: λ = 0 against the λ > 0 profiles. Adversarial,
    # AgentProp, FIT and ablation profiles stress other things and are named apart.
    nominal = next((g for g in groups if g.lam == 0.0), None)
    stressed = [g for g in groups if g.lam is not None and g.lam > 0.0]
    excluded = [g.profile for g in groups if g is not nominal and g not in stressed]
    gap = mover_gap(
        nominal.sr if nominal else Estimate.na("no λ = 0 profile"), [g.sr for g in stressed]
    )
    if gap.value is not None and nominal is not None:
        pooled = ", ".join(g.profile for g in stressed)
        gap.note = f"SR({nominal.profile}) − mean SR over {pooled}"
    name = f"{agent}/all"
    frr = aggregate.frr(scores, seed, name)
    pei = aggregate.pei(scores, seed, name)
    units: dict[tuple[str, float, str], list[tuple[int, bool]]] = defaultdict(list)
    for s in scores:
        if s.evaluable:
            key = (s.record.task_id, s.record.epsilon, s.record.profile)
            units[key].append((s.record.trial, bool(s.success)))
    lambdas = {g.profile: g.lam for g in groups if g.lam is not None}
    surf: Surface = surface(units, lambdas, k_max, seed, agent)
    return AgentSummary(
        run=groups[0].run,
        agent=agent,
        nominal_profile=nominal.profile if nominal else None,
        stressed_profiles=[g.profile for g in stressed],
        delta_rel=gap,
        frr=frr,
        pei=pei,
        tier=judge(groups, scores, seed, name),
        surface=surf,
        delta_rel_excluded=excluded,
        frr_no_recovery_needed=aggregate.no_recovery_needed(scores),
        pei_success=aggregate.pei_success(scores, seed, name),
        delta_rel_by_profile=gaps_by_profile(groups),
    )


def _domain_rows(scores: list[EpisodeScore], seed: int, k_max: int) -> list[DomainRow]:
    by_key: dict[tuple[str, str, str], list[EpisodeScore]] = defaultdict(list)
    for s in scores:
        by_key[(s.agent, s.record.profile, s.record.domain)].append(s)
    rows = []
    for (agent, profile, domain), members in sorted(by_key.items()):
        name = f"{agent}/{profile}/{domain}"
        rows.append(
            DomainRow(
                agent=agent,
                profile=profile,
                domain=domain,
                counts=aggregate.counts(members),
                sr=aggregate.sr(members),
                frr=aggregate.frr(members, seed, name),
                pei=aggregate.pei(members, seed, name),
                pass_k=pass_table(aggregate.units(members), k_max, seed, name),
            )
        )
    return rows


def _comparisons(
    groups: dict[tuple[str, str], GroupMetrics],
    members: dict[tuple[str, str], list[EpisodeScore]],
    seed: int,
) -> list[Comparison]:
    out: list[Comparison] = []
    agents = list(dict.fromkeys(agent for agent, _ in groups))
    for agent in agents:
        mine = [g for (a, _), g in groups.items() if a == agent]
        nominal = next((g for g in mine if g.lam == 0.0), None)
        if nominal is None:
            continue
        for g in mine:
            if g is not nominal:
                key_g, key_n = (agent, g.profile), (agent, nominal.profile)
                out += compare(g, members[key_g], nominal, members[key_n], seed, ("SR", "pass^k"))
    for i, a in enumerate(agents):
        for b in agents[i + 1 :]:
            for (agent, profile), g in groups.items():
                if agent == a and (b, profile) in groups:
                    out += compare(
                        g, members[(a, profile)], groups[(b, profile)], members[(b, profile)], seed
                    )
    return out


def write_outputs(scored: Scored, run_dir: Path) -> tuple[Path, Path]:
    """results.json and episodes.csv into the run directory."""
    results_path, csv_path = run_dir / RESULTS_FILE, run_dir / EPISODES_CSV
    with paused_gc():
        results_path.write_text(scored.results.model_dump_json(indent=2) + "\n", encoding="utf-8")
        write_csv(csv_path, scored.episodes)
    return results_path, csv_path


def score_run_dir(path: Path) -> Results:
    """Score one run directory (what benchmarks/harness.py times)."""
    return score_runs([path]).results
