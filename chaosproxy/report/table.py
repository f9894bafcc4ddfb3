"""The terminal summary `chaosproxy score` prints: headline, recovery, hygiene, comparisons."""

from __future__ import annotations

from chaosproxy.report.fmt import est, lam, render, show_ks, signed
from chaosproxy.scoring.results import Counts, Results
from chaosproxy.scoring.tier import thresholds_text


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


def headline_rows(
    results: Results, *, with_cn_frr: bool = False
) -> tuple[list[str], list[list[str]]]:
    """The headline table (terminal and HTML): one row per agent and profile."""
    ks = show_ks(int(str(results.settings.get("k_max", 1))))
    headers = ["agent", "profile", "λ", "evaluable", "SR [95% CI]", "FRR [95% CI]", "n(FRR)"]
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
                *[est(by_k[k].pass_hat, interval=False) if k in by_k else "n/a" for k in ks],
            ]
        )
    return headers, rows


def headline(results: Results) -> str:
    headers, rows = headline_rows(results)
    return render(headers, rows, right_from=2)


def verdicts(results: Results) -> str:
    lines = []
    for a in results.agents:
        gap = signed(a.delta_rel)
        base = a.nominal_profile or "no λ0 profile"
        lines.append(
            f"  {a.agent}: Δ_rel {gap} (SR at {base} − mean SR of "
            f"{', '.join(a.stressed_profiles) or 'no stressed profile'})"
        )
        lines.append(f"  {a.agent}: {a.tier.text}")
    return "\n".join(lines)


def recovery(results: Results) -> str:
    headers = [
        "agent",
        "profile",
        "fault",
        "seen",
        "recovered [95% CI]",
        "extra calls",
        "latency steps",
        "latency s",
    ]
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
    if not rows:
        return "  no fault reached an agent in this run"
    return render(headers, rows, right_from=3)


def hygiene(results: Results) -> str:
    headers = [
        "agent",
        "profile",
        "retries",
        "ignored Retry-After",
        "retried non-retryable",
        "retry storms",
        "duplicate writes",
        "uninjected errors",
    ]

    def item(count: int, episodes: int, of: int) -> str:
        return f"{count} ({episodes}/{of} ep.)"

    rows = []
    for g in results.groups:
        h, of = g.hygiene, g.counts.evaluable
        rows.append(
            [
                g.agent,
                g.profile,
                str(h.retries),
                *[
                    item(i.count, i.affected, of)
                    for i in (
                        h.ignored_retry_after,
                        h.retried_non_retryable,
                        h.retry_storms,
                        h.duplicate_writes,
                    )
                ],
                str(h.uninjected_errors),
            ]
        )
    return render(headers, rows, right_from=2)


def comparisons(results: Results) -> str:
    headers = ["metric", "a", "b", "a − b [95% CI]", "n"]
    rows = [
        [
            c.metric,
            f"{c.a} @ {c.profile_a}",
            f"{c.b} @ {c.profile_b}",
            signed(c.diff),
            str(c.diff.n),
        ]
        for c in results.comparisons
        if c.metric in ("SR", "FRR", "pass^1") or c.a != c.b
    ]
    return render(headers, rows, right_from=3) if rows else ""


def summary(results: Results) -> str:
    runs = ", ".join(r.path for r in results.runs)
    parts = [
        f"chaosproxy score · {runs}",
        counts_line(results.counts),
        "",
        headline(results),
        "",
        verdicts(results),
        f"  tiers (HB-Eval §7.6): {thresholds_text()}",
        "",
        "Recovery by fault type (faults the agent saw; recovered = a later call to the same tool "
        "succeeded and the episode succeeded)",
        recovery(results),
        "",
        "Retry hygiene (count, episodes affected / evaluable)",
        hygiene(results),
    ]
    table = comparisons(results)
    if table:
        parts += ["", "Comparisons (a − b, 95% CI)", table]
    parts += ["", "n/a = not measurable in this run (see docs/metrics.md)."]
    return "\n".join(parts)
