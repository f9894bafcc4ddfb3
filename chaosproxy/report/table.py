"""The terminal summary `chaosproxy score` prints: headline, verdicts (with the pooled figures
the tier is judged on), recovery, hygiene, and the key comparisons; rich tables ≤ 100 columns."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from chaosproxy.report.fmt import (
    NA,
    est,
    excludes_zero,
    lam,
    num,
    show_ks,
    signed,
    table,
    to_text,
)
from chaosproxy.scoring.delivery import group_line
from chaosproxy.scoring.gate import regressions
from chaosproxy.scoring.results import (
    AgentSummary,
    Comparison,
    Counts,
    FaultDelivery,
    FaultTypeRecovery,
    GroupMetrics,
    LogOnlyRun,
    Results,
)
from chaosproxy.scoring.tier import thresholds_text

TERMINAL_COMPARISONS = ("SR", "FRR")
"""The comparisons the terminal shows; every other one is in the report and results.json."""


def counts_line(c: Counts) -> str:
    infra = c.infrastructure
    parts = [f"{c.total} episodes, {c.evaluable} evaluable"]
    if c.agent_crash_after_fault:
        parts.append(
            f"{c.agent_crash_after_fault} agent_crash right after a delivered fault scored "
            "as the agent's (not infrastructure)"
        )
    if c.timeout_after_fault:
        parts.append(
            f"{c.timeout_after_fault} timeout right after a delivered fault scored as the agent's"
        )
    if c.infra_error_agent_caused:
        parts.append(
            f"{c.infra_error_agent_caused} infra_error caused by a service 5xx to the "
            "agent's own call scored as the agent's"
        )
    if infra:
        shown = {
            "agent_crash": c.agent_crash - c.agent_crash_after_fault,
            "timeout": c.timeout - c.timeout_after_fault,
            "infra_error": c.infra_error - c.infra_error_agent_caused,
        }
        kinds = [f"{n} {k}" for k, n in shown.items() if n]
        parts.append(f"{infra} infrastructure ({', '.join(kinds)}) counted apart")
    if c.no_verdict:
        parts.append(f"{c.no_verdict} completed without a verdict")
    return "; ".join(parts)


def k_columns(results: Results) -> list[int]:
    return show_ks(int(str(results.settings.get("k_max", 1))))


def headline_rows(
    results: Results, *, with_cn_frr: bool = False, all_ks: bool = False
) -> tuple[list[str], list[list[str]]]:
    """The headline table: one row per agent and profile. The terminal shows pass^k at the
    first and last k only, to keep within 100 columns; the report shows them all, with
    CN-FRR and PEI over successes."""
    ks = k_columns(results)
    if not all_ks and len(ks) > 2:
        ks = [ks[0], ks[-1]]
    headers = ["agent", "profile", "λ", "n", "SR [95% CI]", "FRR [95% CI]", "n(FRR)"]
    extra = ["PEI | success", "CN-FRR"] if with_cn_frr else []
    headers += ["PEI", *extra, *[f"pass^{k}" for k in ks]]
    rows = []
    for g in results.groups:
        by_k = {p.k: p for p in g.pass_k}
        rows.append(
            [
                g.agent,
                g.profile,
                lam(g.lam),
                f"{g.counts.evaluable}/{g.counts.total}",
                est(g.sr),
                est(g.frr),
                str(g.frr.n),
                est(g.pei, interval=False),
                *(
                    [est(g.pei_success, interval=False), est(g.cn_frr, interval=False)]
                    if with_cn_frr
                    else []
                ),
                *[est(by_k[k].pass_hat, interval=False) if k in by_k else NA for k in ks],
            ]
        )
    return headers, rows


def headline(results: Results) -> Table:
    headers, rows = headline_rows(results)
    return table(headers, rows, left=2)


def tier_text(a: AgentSummary) -> str:
    """The tier, or why there is none: below Tier-1, insufficient data, n/a."""
    return a.tier.tier or (a.tier.status if a.tier.status != "tier" else "none")


def verdict_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    """Per agent: the tier, Δ_rel, and the pooled FRR and PEI the tier is judged on."""
    headers = ["agent", "tier", "Δ_rel [95% CI]", "FRR, pooled", "n", "PEI, pooled", "n"]
    rows = [
        [
            a.agent,
            tier_text(a),
            signed(a.delta_rel),
            est(a.tier.frr),
            str(a.tier.frr.n),
            est(a.tier.pei, interval=False),
            str(a.tier.pei.n),
        ]
        for a in results.agents
    ]
    return headers, rows


def verdict_notes(results: Results) -> list[str]:
    """What Δ_rel compares and what the tier figures were pooled over, said once per kind."""
    notes: list[str] = []
    for a in results.agents:
        stressed = [p for p in a.stressed_profiles if p not in a.delta_rel_excluded]
        note = (
            f"Δ_rel = SR at {a.nominal_profile or 'no λ0 profile'} − mean SR of "
            f"{', '.join(stressed) or 'no stressed profile'}"
        )
        if a.delta_rel_excluded:
            note += f" (not {', '.join(a.delta_rel_excluded)})"
        pooled = ", ".join(a.tier.profiles)
        if pooled:
            note += f"; tier figures pooled over {pooled}"
        if note not in notes:
            notes.append(note)
    minimum = max((a.tier.min_n for a in results.agents), default=0)
    notes.append(
        f"tiers (HB-Eval §7.6): {thresholds_text()}"
        + (f"; each needs n ≥ {minimum}" if minimum else "")
    )
    return notes


def verdicts(results: Results) -> RenderableType:
    headers, rows = verdict_rows(results)
    notes = verdict_notes(results)
    return Group(
        table(headers, rows, left=2, title="Verdict"),
        *[Text(note, style="dim") for note in notes],
    )


def recovery_cells(agent: str, profile: str, r: FaultTypeRecovery, label: str) -> list[str]:
    return [
        agent,
        profile,
        label,
        str(r.encountered),
        est(r.recovered),
        est(r.extra_calls, 1, False),
        est(r.latency_steps, 1, False),
        est(r.latency_s, 2, False),
        r.rule,
    ]


def recovery_rows(results: Results) -> list[list[str]]:
    """Tool faults by type and over all of them, then model faults (model calls), each
    marked `(model)`: a model call is not a step, so the two are never pooled."""
    rows = []
    for g in results.groups:
        for r in [*g.recovery, g.recovery_all] if g.recovery else []:
            rows.append(recovery_cells(g.agent, g.profile, r, r.fault))
        for r in g.model_recovery:
            rows.append(recovery_cells(g.agent, g.profile, r, f"{r.fault} (model)"))
    return rows


RECOVERY_HEADERS = [
    "agent",
    "profile",
    "fault",
    "seen",
    "recovered [95% CI]",
    "extra\ncalls",
    "latency\n(steps)",
    "latency\n(s)",
    "rule",
]
RECOVERY_NOTE = (
    "seen: faults the agent could observe; recovered, by rule: retry = a later call of the "
    "same tool (for a model fault, to the same model endpoint) came back clean; adapt = a "
    "persistent fault, the episode succeeded"
)


def recovery(results: Results) -> RenderableType:
    rows = recovery_rows(results)
    title = "Recovery by fault type"
    if not rows:
        return Text(f"{title}: no fault reached an agent in this run")
    return Group(
        table(RECOVERY_HEADERS, rows, left=3, title=title),
        Text(RECOVERY_NOTE, style="dim"),
    )


HYGIENE_HEADERS = [
    "agent",
    "profile",
    "retries",
    "ignored\nRetry-After",
    "retried non-\nretryable",
    "retry\nstorms",
    "duplicate\nwrites",
    "uninjected\nerrors",
]


def hygiene_rows(results: Results) -> list[list[str]]:
    rows = []
    for g in results.groups:
        h, of = g.hygiene, g.counts.evaluable
        items = (h.ignored_retry_after, h.retried_non_retryable, h.retry_storms, h.duplicate_writes)
        rows.append(
            [
                g.agent,
                g.profile,
                str(h.retries),
                *[f"{i.count} ({i.affected}/{of})" for i in items],
                str(h.uninjected_errors),
            ]
        )
    return rows


def hygiene_applies(g: GroupMetrics) -> bool:
    h = g.hygiene
    items = (h.ignored_retry_after, h.retried_non_retryable, h.retry_storms, h.duplicate_writes)
    return bool(h.retries or h.uninjected_errors or any(i.count for i in items))


def hygiene(results: Results) -> RenderableType | None:
    if not any(hygiene_applies(g) for g in results.groups):
        return None
    return Group(
        table(HYGIENE_HEADERS, hygiene_rows(results), left=2, title="Retry hygiene"),
        Text("count (episodes affected / evaluable)", style="dim"),
    )


DELIVERY_HEADERS = [
    "agent",
    "profile",
    "calls",
    "fault rate [95% CI]",
    "profile\nrate",
    "delivered/\ndrawn",
    "incident delivered\n(episodes) [95% CI]",
]


def delivery_groups(results: Results) -> list[GroupMetrics]:
    """Groups whose profile draws or plans faults (the ones delivery_lines reports)."""
    return [g for g in results.groups if group_line(g) is not None]


def delivery_table(results: Results) -> tuple[list[str], list[list[str]]]:
    """Headers and rows; the incident column only when some profile plans incidents."""
    return delivery_table_of([(g.agent, g.profile, g.delivery) for g in delivery_groups(results)])


def delivery_table_of(
    items: Sequence[tuple[str, str, FaultDelivery | None]], first: str = "agent"
) -> tuple[list[str], list[list[str]]]:
    rows = delivery_rows_of(items)
    headers = [first, *DELIVERY_HEADERS[1:]]
    if all(row[-1] == NA for row in rows):
        return headers[:-1], [row[:-1] for row in rows]
    return headers, rows


def delivery_rows(results: Results) -> list[list[str]]:
    return delivery_rows_of([(g.agent, g.profile, g.delivery) for g in delivery_groups(results)])


def delivery_rows_of(items: Sequence[tuple[str, str, FaultDelivery | None]]) -> list[list[str]]:
    """One row over tool calls, and one over model calls when the agent's model went
    through the proxy (or the profile weights a model fault): never pooled."""
    rows = []
    for agent, profile, d in items:
        if d is None:
            continue
        rows.append(
            [
                agent,
                profile,
                f"{d.tool_calls} tool",
                est(d.realised_rate, 3),
                NA if d.nominal_rate is None else f"{d.nominal_rate:.3f}",
                f"{d.delivered}/{d.drawn}",
                est(d.incident_delivered),
            ]
        )
        m = d.model
        if m is not None:
            rows.append(
                [
                    agent,
                    profile,
                    f"{m.model_calls} model",
                    est(m.realised_rate, 3),
                    NA if m.nominal_rate is None else f"{m.nominal_rate:.3f}",
                    f"{m.delivered}/{m.drawn}",
                    NA,
                ]
            )
    return rows


DELIVERY_NOTE = (
    "fault rate: calls carrying a freshly drawn, delivered fault / calls (Wilson), tool "
    "calls and model calls apart, beside the profile's failure_rate for that kind of call "
    "(0 when the profile weights no fault of that kind)"
)


def never_delivered(d: FaultDelivery) -> list[str]:
    kinds = [*d.by_fault, *(d.model.by_fault if d.model else [])]
    return [k.fault for k in kinds if k.drawn and not k.delivered]


def delivery(results: Results) -> RenderableType | None:
    groups = delivery_groups(results)
    if not groups:
        return None
    notes = [
        f"{g.agent} · {g.profile}: never delivered: " + ", ".join(never_delivered(g.delivery))
        for g in groups
        if g.delivery is not None and never_delivered(g.delivery)
    ]
    return Group(
        table(*delivery_table(results), left=2, title="Fault delivery"),
        Text(DELIVERY_NOTE, style="dim"),
        *[Text(note, style="dim") for note in notes],
    )


def corruption_groups(results: Results) -> list[GroupMetrics]:
    """Groups under a profile that corrupts parameters or injects instructions."""
    return [
        g
        for g in results.groups
        if g.stage.s1
        or g.stage_model is not None
        or g.adversarial_compliance.value is not None
        or g.adversarial_attempted.value is not None
        or g.adversarial_unjudged
    ]


CORRUPTION_HEADERS = [
    "agent",
    "profile",
    "S1\ncorrupted",
    "S2 un-\ncorrected",
    "rejection\nrate",
    "recovery\nrate",
    "compliance,\nattempted\n[95% CI]",
    "compliance,\napplied\n[95% CI]",
]


def _stages(g: GroupMetrics) -> list[str]:
    """S1, S2, rejection, recovery: the paper's (model-stage: rejection = 1 − P(S1)) where
    the model's tool call was the injection point, else the proxy-side ones."""
    paper = g.stage_model
    if paper is not None:
        return [
            f"{paper.s1}/{paper.n} executed",
            str(paper.s2),
            est(paper.rejection_rate, interval=False),
            est(paper.recovery_rate, interval=False),
        ]
    return [
        str(g.stage.s1),
        str(g.stage.s2),
        est(g.stage.rejection_rate, interval=False),
        est(g.stage.recovery_rate, interval=False),
    ]


def corruption_rows(results: Results) -> list[list[str]]:
    return [
        [
            g.agent,
            g.profile,
            *_stages(g),
            est(g.adversarial_attempted),
            est(g.adversarial_compliance),
        ]
        for g in corruption_groups(results)
    ]


def corruption(results: Results) -> RenderableType | None:
    rows = corruption_rows(results)
    if not rows:
        return None
    rendered = table(CORRUPTION_HEADERS, rows, left=2, title="Corruption and injection")
    if not any(g.stage_model is not None for g in results.groups):
        return rendered
    return Group(rendered, Text(MODEL_STAGE_NOTE, style="dim"))


MODEL_STAGE_NOTE = (
    "Rows with 'executed': AgentProp's injection point (the model's tool call rewritten): S1 = "
    "the executed call carried the injected value, rejection = 1 − P(S1). Other rows are "
    "proxy-side: rejection = 1 − P(S2 | S1), the corrupted call re-issued (docs/metrics.md)."
)


def comparison_pairs(
    comparisons: list[Comparison], metrics: tuple[str, ...]
) -> Iterator[tuple[str, str, dict[str, Comparison]]]:
    """(a, b, {metric: comparison}) per compared pair, in the scorer's order."""
    pairs: dict[tuple[str, str], dict[str, Comparison]] = {}
    for c in comparisons:
        if c.metric in metrics:
            key = (f"{c.a} @ {c.profile_a}", f"{c.b} @ {c.profile_b}")
            pairs.setdefault(key, {})[c.metric] = c
    for (a, b), by_metric in pairs.items():
        yield a, b, by_metric


def comparisons(results: Results) -> RenderableType | None:
    if not results.comparisons:
        return None
    headers = ["a", "b", *[f"Δ{m} (a − b) [95% CI]" for m in TERMINAL_COMPARISONS]]
    rows: list[list[str | Text]] = []
    for a, b, by_metric in comparison_pairs(results.comparisons, TERMINAL_COMPARISONS):
        cells: list[str | Text] = [a, b]
        for metric in TERMINAL_COMPARISONS:
            c = by_metric.get(metric)
            if c is None:
                cells.append(Text(NA, style="dim"))
            elif excludes_zero(c.diff):
                cells.append(Text(signed(c.diff) + " *", style="bold"))
            else:
                cells.append(signed(c.diff) + "  ")
        rows.append(cells)
    shown = sum(1 for c in results.comparisons if c.metric in TERMINAL_COMPARISONS)
    rest = len(results.comparisons) - shown
    note = "* the 95 % interval excludes 0"
    if rest:
        note += f"; {rest} more comparisons (PEI, pass^k) in report.html and results.json"
    return Group(
        table(headers, rows, left=2, title="Comparisons"),
        Text(note, style="dim"),
    )


LOG_EPISODES_SHOWN = 20
"""The terminal lists this many episodes of a log-only run; results.json has them all."""


def log_episode_rows(log: LogOnlyRun) -> list[list[str]]:
    return [
        [
            e.episode,
            str(e.tool_calls),
            str(e.model_calls),
            str(e.faults),
            str(e.model_faults),
            str(e.recovered),
            str(e.retries),
            str(e.ignored_retry_after),
        ]
        for e in log.episodes
    ]


LOG_EPISODE_HEADERS = [
    "episode",
    "tool\ncalls",
    "model\ncalls",
    "faults\n(tool)",
    "faults\n(model)",
    "recovered\n(retry)",
    "retries",
    "ignored\nRetry-After",
]


def log_only_parts(log: LogOnlyRun) -> list[RenderableType]:
    """A log-only run (`chaosproxy up`): what calls.jsonl supports, and what it cannot."""
    tool_calls = sum(e.tool_calls for e in log.episodes)
    model_calls = sum(e.model_calls for e in log.episodes)
    profile = log.profile or NA
    parts: list[RenderableType] = [
        Text(
            f"{log.label}: calls.jsonl only, no episodes.jsonl (kind {log.kind}): "
            f"{len(log.episodes)} episodes, {tool_calls} tool calls, {model_calls} model calls"
        ),
        Text(log.not_computed[:1].upper() + log.not_computed[1:] + ".", style="yellow"),
        Text(""),
    ]
    rows = log_episode_rows(log)
    if rows:
        parts.append(table(LOG_EPISODE_HEADERS, rows[:LOG_EPISODES_SHOWN], title="Episodes"))
        if len(rows) > LOG_EPISODES_SHOWN:
            more = len(rows) - LOG_EPISODES_SHOWN
            parts.append(Text(f"... and {more} more episodes in results.json", style="dim"))
        parts.append(
            Text(
                "faults: delivered faults the agent could see; recovered (retry): those a later "
                "clean call of the same tool or model endpoint cleared",
                style="dim",
            )
        )
    parts += [
        Text(""),
        table(
            *delivery_table_of([(log.label, profile, log.delivery)], first="run"),
            left=2,
            title="Fault delivery",
        ),
        Text(DELIVERY_NOTE, style="dim"),
        *[Text(note, style="dim") for note in log.notes],
        Text(""),
    ]
    recovered = [
        *[recovery_cells(log.label, profile, r, r.fault) for r in log.recovery],
        *([recovery_cells(log.label, profile, log.recovery_all, "all")] if log.recovery else []),
        *[recovery_cells(log.label, profile, r, f"{r.fault} (model)") for r in log.model_recovery],
    ]
    if not recovered:
        parts.append(Text("Recovery by fault type: no fault reached the agent in this log"))
    else:
        parts += [
            table(
                ["run", *RECOVERY_HEADERS[1:]], recovered, left=3, title="Recovery by fault type"
            ),
            Text(
                RECOVERY_NOTE + "; adapt needs the episode's verdict: n/a without episodes.jsonl",
                style="dim",
            ),
        ]
    return parts


def regressions_part(results: Results) -> RenderableType:
    """What got worse from the first run to the second, first: the question a team asks
    after changing its agent."""
    before, after = (run.label for run in results.runs)
    found = regressions(results)
    if not found:
        return Text(
            f"Nothing got worse from {before} to {after} (no difference whose 95 % interval "
            "excludes 0).",
            style="bold",
        )
    rows = [
        [r.agent, r.profile, r.metric, num(r.before), num(r.after), signed(r.comparison.diff)]
        for r in found
    ]
    headers = ["agent", "profile", "metric", before, after, "Δ (before − after) [95% CI]"]
    return table(headers, rows, left=3, title=f"Got worse from {before} to {after}")


def summary_parts(results: Results, brief: bool = False) -> list[RenderableType]:
    """Everything `chaosproxy score` prints, in order; a log-only run (`chaosproxy up`) gets
    what its log supports instead of the verdict-based tables. `brief`: the headline
    table only (the quick start's ending)."""
    runs = ", ".join(r.path for r in results.runs)
    parts: list[RenderableType] = [
        Text(f"chaosproxy score · {runs}", style="bold"),
        *[Text(f"warning: {w}", style="yellow") for w in results.warnings],
    ]
    if len(results.runs) == 2:
        parts += [regressions_part(results), Text("")]
    if brief and (results.counts.total or not results.log_only):
        return [*parts, Text(counts_line(results.counts)), Text(""), headline(results)]
    if results.counts.total or not results.log_only:
        parts += [
            Text(counts_line(results.counts)),
            Text(""),
            headline(results),
            Text(""),
            verdicts(results),
            Text(""),
            recovery(results),
        ]
        for extra in (
            delivery(results),
            corruption(results),
            hygiene(results),
            comparisons(results),
        ):
            if extra is not None:
                parts += [Text(""), extra]
    for log in results.log_only:
        parts += [Text(""), *log_only_parts(log)]
    parts += [Text(""), Text("n/a = not measurable in this run (see docs/metrics.md).", "dim")]
    return parts


def summary(results: Results, width: int = 100) -> str:
    """The summary as plain text."""
    return to_text(*summary_parts(results), width=width)
