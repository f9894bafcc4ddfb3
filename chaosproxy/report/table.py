"""The terminal summary `chaosproxy score` prints: headline, verdicts (with the pooled figures
the tier is judged on), recovery, hygiene, and the key comparisons; rich tables ≤ 100 columns."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from chaosproxy.report.fmt import NA, est, excludes_zero, lam, show_ks, signed, table, to_text
from chaosproxy.scoring.results import Comparison, Counts, GroupMetrics, Results
from chaosproxy.scoring.tier import thresholds_text

TERMINAL_COMPARISONS = ("SR", "FRR")
"""The comparisons the terminal shows; every other one is in the report and results.json."""


def counts_line(c: Counts) -> str:
    infra = c.agent_crash + c.timeout + c.infra_error
    parts = [f"{c.total} episodes, {c.evaluable} evaluable"]
    if infra:
        kinds = [
            f"{getattr(c, k)} {k}"
            for k in ("agent_crash", "timeout", "infra_error")
            if getattr(c, k)
        ]
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
    first and last k only, to keep within 100 columns; the report shows them all."""
    ks = k_columns(results)
    if not all_ks and len(ks) > 2:
        ks = [ks[0], ks[-1]]
    headers = ["agent", "profile", "λ", "n", "SR [95% CI]", "FRR [95% CI]", "n(FRR)"]
    headers += ["PEI", *(["CN-FRR"] if with_cn_frr else []), *[f"pass^{k}" for k in ks]]
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
                *([est(g.cn_frr, interval=False)] if with_cn_frr else []),
                *[est(by_k[k].pass_hat, interval=False) if k in by_k else NA for k in ks],
            ]
        )
    return headers, rows


def headline(results: Results) -> Table:
    headers, rows = headline_rows(results)
    return table(headers, rows, left=2)


def verdict_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    """Per agent: Δ_rel and the pooled FRR and PEI its tier is judged on, then the tier."""
    headers = ["agent", "tier", "Δ_rel [95% CI]", "FRR, pooled", "PEI, pooled"]
    rows = [
        [
            a.agent,
            a.tier.tier or "none",
            signed(a.delta_rel),
            est(a.tier.frr),
            est(a.tier.pei, interval=False),
        ]
        for a in results.agents
    ]
    return headers, rows


def verdicts(results: Results) -> RenderableType:
    headers, rows = verdict_rows(results)
    bases = {
        (a.nominal_profile or "no λ0 profile", ", ".join(a.stressed_profiles) or "none")
        for a in results.agents
    }
    notes = [
        f"Δ_rel = SR at {base} − mean SR of {stressed}; FRR and PEI pooled over all of an "
        "agent's episodes"
        for base, stressed in sorted(bases)
    ]
    notes.append(f"tiers (HB-Eval §7.6): {thresholds_text()}")
    return Group(
        table(headers, rows, left=2, title="Verdict"),
        *[Text(note, style="dim") for note in notes],
    )


def recovery_rows(results: Results) -> list[list[str]]:
    rows = []
    for g in results.groups:
        for r in [*g.recovery, g.recovery_all] if g.recovery else []:
            rows.append(
                [
                    g.agent,
                    g.profile,
                    r.fault,
                    str(r.encountered),
                    est(r.recovered),
                    est(r.extra_calls, 1, False),
                    est(r.latency_steps, 1, False),
                    est(r.latency_s, 2, False),
                ]
            )
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
]


def recovery(results: Results) -> RenderableType:
    rows = recovery_rows(results)
    title = "Recovery by fault type"
    if not rows:
        return Text(f"{title}: no fault reached an agent in this run")
    return Group(
        table(RECOVERY_HEADERS, rows, left=3, title=title),
        Text(
            "seen: faults the agent could observe; recovered: a later call to the same tool "
            "succeeded and the episode succeeded",
            style="dim",
        ),
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


def summary_parts(results: Results) -> list[RenderableType]:
    """Everything `chaosproxy score` prints, in order."""
    runs = ", ".join(r.path for r in results.runs)
    parts: list[RenderableType] = [
        Text(f"chaosproxy score · {runs}", style="bold"),
        Text(counts_line(results.counts)),
        Text(""),
        headline(results),
        Text(""),
        verdicts(results),
        Text(""),
        recovery(results),
    ]
    for extra in (hygiene(results), comparisons(results)):
        if extra is not None:
            parts += [Text(""), extra]
    parts += [Text(""), Text("n/a = not measurable in this run (see docs/metrics.md).", "dim")]
    return parts


def summary(results: Results, width: int = 100) -> str:
    """The summary as plain text."""
    return to_text(*summary_parts(results), width=width)
