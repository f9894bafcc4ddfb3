"""The report's plots (plotly), each drawn only when the run has the data for it.

Every builder returns a Figure, or a string saying why there is no plot ("insufficient
data"): one ε level makes no surface, k_max = 1 makes no pass^k curve, one comparison makes
no forest plot. Titles live in the HTML above each plot, so plotly's toolbar never covers
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.colors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from chaosproxy.report.fmt import excludes_zero, signed
from chaosproxy.scoring.results import AgentSummary, Comparison, GroupMetrics

PALETTE = plotly.colors.qualitative.Plotly
EXCLUDES = "#c0392b"
INCLUDES = "#8a93a5"
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12}


@dataclass(frozen=True)
class Plot:
    """A figure with the HTML title and caption the template puts around it."""

    id: str
    title: str
    caption: str
    figure: go.Figure


def _layout(figure: go.Figure, height: int) -> None:
    figure.update_layout(
        height=height,
        font=FONT,
        margin={"l": 60, "r": 20, "t": 64, "b": 50},
        plot_bgcolor="#fbfcfe",
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
    )


def surface_plot(agent: AgentSummary, ks: list[int], index: int) -> Plot | str:
    """R(k, ε, λ) as ε × λ heat maps, one per k, for one agent."""
    cells = agent.surface.cells
    lams = sorted({c.lam for c in cells})
    epss = sorted({c.epsilon for c in cells})
    if len(epss) < 2 or len(lams) < 2:
        levels = f"{len(epss)} ε level{'s' * (len(epss) != 1)} and {len(lams)} λ level" + "s" * (
            len(lams) != 1
        )
        return (
            f"Insufficient data for a surface: this run has {levels}; a heat map needs at "
            "least two of each (run with two or more --epsilon and --profile values). "
            "pass^k over k below shows R along k and λ."
        )
    ks = [k for k in ks if any(c.k == k for c in cells)]
    figure = make_subplots(
        rows=1,
        cols=len(ks),
        subplot_titles=[f"k = {k}" for k in ks],
        horizontal_spacing=0.08,
    )
    for column, k in enumerate(ks, start=1):
        grid: list[list[float | None]] = [[None] * len(lams) for _ in epss]
        text: list[list[str]] = [["n/a"] * len(lams) for _ in epss]
        for c in cells:
            if c.k != k:
                continue
            i, j = epss.index(c.epsilon), lams.index(c.lam)
            grid[i][j] = c.value.value
            if c.value.value is not None:
                text[i][j] = f"{c.value.value:.2f}<br>n={c.value.n}"
        figure.add_trace(
            go.Heatmap(
                x=[f"λ={v:g}" for v in lams],
                y=[f"ε={v:g}" for v in epss],
                z=grid,
                text=text,
                texttemplate="%{text}",
                zmin=0.0,
                zmax=1.0,
                colorscale="RdYlGn",
                showscale=column == len(ks),
                colorbar={"title": {"text": "R"}, "len": 0.9},
                hovertemplate=f"k={k}, %{{y}}, %{{x}}: %{{z:.3f}}<extra></extra>",
            ),
            row=1,
            col=column,
        )
    _layout(figure, 140 + 45 * len(epss))
    figure.update_layout(width=min(1150, 160 + len(ks) * (70 + 70 * len(lams))))
    return Plot(
        f"surface-{index}",
        f"{agent.agent}: R(k, ε, λ)",
        "Mean over tasks of pass^k at each perturbation level ε and fault rate λ; "
        "n is the number of tasks in the cell.",
        figure,
    )


def pass_k_plot(groups: list[GroupMetrics], k_max: int) -> Plot | str:
    """pass^k (solid, 95 % interval) and pass@k (dotted) over k: one panel per agent,
    one colour per profile."""
    if k_max < 2:
        return (
            "Insufficient data for a pass^k curve: each task ran once (k_max = 1), so pass^k "
            "is only defined at k = 1, where it equals the success rate above. Run with "
            "--trials 2 or more."
        )
    agents = list(dict.fromkeys(g.agent for g in groups))
    profiles = list(dict.fromkeys(g.profile for g in groups))
    columns = min(3, len(agents))
    rows = -(-len(agents) // columns)
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=agents,
        shared_yaxes=True,
        horizontal_spacing=0.05,
        vertical_spacing=0.18 / rows,
    )
    drawn = False
    for index, agent in enumerate(agents):
        row, col = index // columns + 1, index % columns + 1
        for g in (g for g in groups if g.agent == agent):
            points = [p for p in g.pass_k if p.pass_hat.value is not None]
            if len(points) < 2:
                continue
            drawn = True
            color = PALETTE[profiles.index(g.profile) % len(PALETTE)]
            ks = [p.k for p in points]
            hats = [p.pass_hat.value or 0.0 for p in points]
            figure.add_trace(
                go.Scatter(
                    x=ks,
                    y=hats,
                    mode="lines+markers",
                    name=g.profile,
                    legendgroup=g.profile,
                    showlegend=index == 0,
                    line={"color": color},
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": [
                            (p.pass_hat.high if p.pass_hat.high is not None else h) - h
                            for p, h in zip(points, hats, strict=True)
                        ],
                        "arrayminus": [
                            h - (p.pass_hat.low if p.pass_hat.low is not None else h)
                            for p, h in zip(points, hats, strict=True)
                        ],
                    },
                    hovertemplate=f"{agent} · {g.profile}<br>pass^%{{x}} = %{{y:.3f}}"
                    "<extra></extra>",
                ),
                row=row,
                col=col,
            )
            figure.add_trace(
                go.Scatter(
                    x=ks,
                    y=[p.pass_at.value for p in points],
                    mode="lines",
                    line={"dash": "dot", "color": color},
                    name=f"pass@k {g.profile}",
                    legendgroup=g.profile,
                    showlegend=False,
                    hovertemplate=f"{agent} · {g.profile}<br>pass@%{{x}} = %{{y:.3f}}"
                    "<extra></extra>",
                ),
                row=row,
                col=col,
            )
    if not drawn:
        return "Insufficient data for a pass^k curve: no task has two evaluable trials."
    for name, dash in (
        ("pass^k: all k trials succeed (solid, 95% CI)", "solid"),
        ("pass@k: at least one of k succeeds (dotted)", "dot"),
    ):
        figure.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=name,
                line={"color": "#1d2330", "dash": dash},
                showlegend=True,
            ),
            row=1,
            col=1,
        )
    figure.update_xaxes(dtick=1, title_text="k (trials)", range=[0.8, k_max + 0.2])
    figure.update_yaxes(range=[-0.02, 1.05])
    figure.update_yaxes(title_text="rate", col=1)
    _layout(figure, 130 + 300 * rows)
    return Plot(
        "pass-k",
        "pass^k and pass@k over k",
        "pass^k = C(c, k)/C(n, k) per task (all k trials succeed), averaged over tasks, with "
        "its 95% bootstrap interval; pass@k = 1 − C(n − c, k)/C(n, k) (at least one succeeds). "
        "Lines at 1.0 overlap when every trial succeeded.",
        figure,
    )


def comparison_label(c: Comparison) -> str:
    if c.a == c.b:
        return f"{c.metric} · {c.a}: {c.profile_a} − {c.profile_b}"
    if c.profile_a == c.profile_b:
        return f"{c.metric} · {c.profile_a}: {c.a} − {c.b}"
    return f"{c.metric} · {c.a}@{c.profile_a} − {c.b}@{c.profile_b}"


def forest_plot(comparisons: list[Comparison]) -> Plot | str:
    """Every measured difference with its 95 % interval; intervals excluding 0 in colour."""
    measured = [c for c in comparisons if c.diff.value is not None and c.diff.low is not None]
    if len(measured) < 2:
        return "Insufficient data for a forest plot: fewer than two measured differences."
    labels = [comparison_label(c) for c in measured]
    figure = go.Figure()
    for name, color, symbol, keep in (
        ("95% CI excludes 0", EXCLUDES, "diamond", True),
        ("95% CI includes 0", INCLUDES, "circle-open", False),
    ):
        chosen = [i for i, c in enumerate(measured) if excludes_zero(c.diff) == keep]
        if not chosen:
            continue
        values = [measured[i].diff.value or 0.0 for i in chosen]
        figure.add_trace(
            go.Scatter(
                x=values,
                y=[labels[i] for i in chosen],
                mode="markers",
                name=name,
                marker={"color": color, "symbol": symbol, "size": 10},
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        (measured[i].diff.high or 0.0) - v
                        for i, v in zip(chosen, values, strict=True)
                    ],
                    "arrayminus": [
                        v - (measured[i].diff.low or 0.0)
                        for i, v in zip(chosen, values, strict=True)
                    ],
                    "color": color,
                    "thickness": 2.5 if keep else 1.5,
                    "width": 4,
                },
                customdata=[[signed(measured[i].diff), measured[i].diff.n] for i in chosen],
                hovertemplate="%{y}<br>%{customdata[0]}, n = %{customdata[1]}<extra></extra>",
            )
        )
    figure.add_vline(x=0, line={"color": "#1d2330", "width": 1})
    figure.update_yaxes(
        categoryorder="array", categoryarray=list(reversed(labels)), automargin=True
    )
    figure.update_xaxes(title_text="a − b (difference, 95% CI)", zeroline=False)
    _layout(figure, 110 + 24 * len(measured))
    figure.update_layout(legend={"y": 1.0, "yanchor": "bottom", "x": 0, "orientation": "h"})
    return Plot(
        "forest",
        "Comparisons: differences with 95% intervals",
        "Each row is a − b for one metric; a coloured diamond marks an interval that excludes "
        "0 (a difference the run can vouch for), a grey circle one that includes 0.",
        figure,
    )
