"""The self-contained HTML report: tables, plots and the tier verdict in one file that
opens offline (plotly.js is inlined once)."""

from __future__ import annotations

import html
from pathlib import Path

import plotly.graph_objects as go
import plotly.offline

from chaosproxy.report import table
from chaosproxy.report.figures import pass_k_curves, surface_heatmap
from chaosproxy.report.fmt import NA, est, show_ks, signed
from chaosproxy.scoring.results import Results
from chaosproxy.scoring.tier import CAVEAT, thresholds_text

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1200px; color: #1d2330; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { margin-top: 2.2rem; font-size: 1.2rem; border-bottom: 1px solid #d8dce5;
     padding-bottom: .3rem; }
.meta { color: #5b6475; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; }
th, td { white-space: nowrap; padding: .3rem .7rem; border-bottom: 1px solid #e5e8ef;
         text-align: right; }
th { background: #f3f5f9; }
td.l, th.l { text-align: left; }
.na { color: #98a0b0; }
.verdict { font-size: 1.05rem; padding: .6rem .9rem; border-radius: 6px; background: #eef6ee;
           margin: .4rem 0; }
.verdict.none { background: #fbefe9; }
.plots { display: flex; flex-wrap: wrap; gap: 1rem; }
.plots > div { flex: 0 0 auto; }
.wide { overflow-x: auto; }
.note { color: #5b6475; font-size: .85rem; }
"""


def _cell(text: str, left: bool = False) -> str:
    cls = ["l"] if left else []
    if text == NA:
        cls.append("na")
    attr = f' class="{" ".join(cls)}"' if cls else ""
    return f"<td{attr}>{html.escape(text)}</td>"


def _table(headers: list[str], rows: list[list[str]], left: int = 2) -> str:
    head = "".join(
        f'<th class="l">{html.escape(h)}</th>' if i < left else f"<th>{html.escape(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>" + "".join(_cell(c, i < left) for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return (
        f"<div class='wide'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def _figure(figure: go.Figure, div_id: str) -> str:
    width = figure.layout.width
    return str(
        figure.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=div_id,
            default_width=f"{width}px" if width else "100%",
            config={"displaylogo": False},
        )
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
                    est(r.extra_calls, 1),
                    est(r.latency_steps, 1),
                    est(r.latency_s, 2),
                ]
            )
    return rows


def render_report(results: Results) -> str:
    runs = ", ".join(r.path for r in results.runs)
    parts = [
        f"<h1>chaosproxy report</h1><p class='meta'>{html.escape(runs)} · "
        f"{html.escape(table.counts_line(results.counts))}</p>",
        "<h2>Verdict</h2>",
    ]
    for a in results.agents:
        cls = "verdict" if a.tier.tier else "verdict none"
        parts.append(
            f"<div class='{cls}'><b>{html.escape(a.agent)}</b>: {html.escape(a.tier.text)} · "
            f"Δ<sub>rel</sub> = {html.escape(signed(a.delta_rel))} "
            f"(SR at {html.escape(a.nominal_profile or 'no λ0 profile')} − mean SR under stress)"
            "</div>"
        )
    parts.append(
        f"<p class='note'>Tiers (HB-Eval §7.6): {html.escape(thresholds_text())}. "
        f"Judged on {html.escape(CAVEAT)}.</p>"
    )
    headers, rows = table.headline_rows(results, with_cn_frr=True)
    parts += ["<h2>Headline</h2>", _table(headers, rows, left=2)]

    parts.append("<h2>Reliability surface R(k, ε, λ)</h2><div class='plots'>")
    k_max = int(str(results.settings.get("k_max", 1)))
    for i, a in enumerate(results.agents):
        for k in show_ks(k_max):
            figure = surface_heatmap(a, k)
            if figure is not None:
                parts.append(f"<div>{_figure(figure, f'surface-{i}-{k}')}</div>")
    parts.append("</div>")
    surf_rows = [
        [
            a.agent,
            est(a.surface.volume),
            est(a.surface.gradient_k),
            est(a.surface.gradient_epsilon),
            est(a.surface.gradient_lambda),
        ]
        for a in results.agents
    ]
    parts.append(
        _table(
            ["agent", "volume", "∂R/∂k (per trial)", "∂R/∂ε (per unit)", "∂R/∂λ (per unit)"],
            surf_rows,
            left=1,
        )
    )

    parts += ["<h2>pass^k over k</h2>", _figure(pass_k_curves(results.groups), "pass-k")]

    recovery = recovery_rows(results)
    parts.append("<h2>Recovery by fault type</h2>")
    parts.append(
        _table(
            [
                "agent",
                "profile",
                "fault",
                "seen",
                "recovered [95% CI]",
                "extra calls",
                "latency (steps)",
                "latency (s)",
            ],
            recovery,
            left=3,
        )
        if recovery
        else "<p>No fault reached an agent in this run.</p>"
    )
    parts.append(
        "<p class='note'>Seen: faults the agent could observe (not HighLatency). "
        "Recovered: a later call to the same tool succeeded and the episode "
        "succeeded.</p>"
    )

    hyg = []
    for g in results.groups:
        h = g.hygiene
        n = g.counts.evaluable
        hyg.append(
            [
                g.agent,
                g.profile,
                str(h.retries),
                *[
                    f"{i.count} ({i.affected}/{n} ep.)"
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
    parts += [
        "<h2>Retry hygiene</h2>",
        _table(
            [
                "agent",
                "profile",
                "retries",
                "ignored Retry-After",
                "retried non-retryable",
                "retry storms",
                "duplicate writes",
                "uninjected errors",
            ],
            hyg,
        ),
    ]

    stage = [
        [
            g.agent,
            g.profile,
            str(g.stage.s1),
            str(g.stage.s2),
            est(g.stage.rejection_rate),
            est(g.stage.recovery_rate),
            est(g.adversarial_compliance),
        ]
        for g in results.groups
    ]
    parts += [
        "<h2>Corruption and injection</h2>",
        _table(
            [
                "agent",
                "profile",
                "S1 corrupted",
                "S2 uncorrected",
                "rejection rate",
                "recovery rate",
                "adversarial compliance",
            ],
            stage,
        ),
    ]

    domains = [
        [
            d.agent,
            d.profile,
            d.domain,
            f"{d.counts.evaluable} / {d.counts.total}",
            est(d.sr),
            est(d.frr),
            est(d.pei, interval=False),
            est(d.pass_k[0].pass_hat, interval=False) if d.pass_k else NA,
        ]
        for d in results.domains
    ]
    parts += [
        "<h2>By domain</h2>",
        _table(
            [
                "agent",
                "profile",
                "domain",
                "evaluable / total",
                "SR [95% CI]",
                "FRR [95% CI]",
                "PEI",
                "pass^1",
            ],
            domains,
            left=3,
        ),
    ]

    if results.comparisons:
        comp = [
            [
                c.metric,
                f"{c.a} @ {c.profile_a}",
                f"{c.b} @ {c.profile_b}",
                signed(c.diff),
                str(c.diff.n),
            ]
            for c in results.comparisons
        ]
        parts += [
            "<h2>Comparisons (a − b, 95% CI)</h2>",
            _table(["metric", "a", "b", "a − b", "n"], comp, left=3),
        ]
    parts.append(
        "<p class='note'>n/a: the run cannot measure this number (no fault "
        "delivered, k larger than the trials, nothing evaluable); it is never shown "
        "as 0. Formulas and sources: docs/metrics.md.</p>"
    )
    plotly_js = plotly.offline.get_plotlyjs()
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<title>chaosproxy report</title>"
        f"<style>{STYLE}</style><script type='text/javascript'>{plotly_js}</script></head>"
        f"<body>{''.join(parts)}</body></html>"
    )


def write_html(results: Results, path: Path) -> Path:
    path.write_text(render_report(results), encoding="utf-8")
    return path
