"""The report's plots (plotly): the surface as ε × λ heat maps per k, and pass^k over k."""

from __future__ import annotations

import plotly.colors
import plotly.graph_objects as go

from chaosproxy.scoring.results import AgentSummary, GroupMetrics


def surface_heatmap(agent: AgentSummary, k: int) -> go.Figure | None:
    """R(k, ε, λ) for one k; None when the run has a single cell or no λ axis."""
    cells = [c for c in agent.surface.cells if c.k == k]
    if not cells:
        return None
    lams = sorted({c.lam for c in cells})
    epss = sorted({c.epsilon for c in cells})
    grid: list[list[float | None]] = [[None] * len(lams) for _ in epss]
    text: list[list[str]] = [["n/a"] * len(lams) for _ in epss]
    for c in cells:
        i, j = epss.index(c.epsilon), lams.index(c.lam)
        grid[i][j] = c.value.value
        if c.value.value is not None:
            text[i][j] = f"{c.value.value:.2f}<br>n={c.value.n}"
    figure = go.Figure(
        go.Heatmap(
            x=[f"λ={v:g}" for v in lams],
            y=[f"ε={v:g}" for v in epss],
            z=grid,
            text=text,
            texttemplate="%{text}",
            zmin=0.0,
            zmax=1.0,
            colorscale="RdYlGn",
            colorbar={"title": {"text": f"pass^{k}"}},
            hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        title={"text": f"{agent.agent}: R(k={k}, ε, λ)"},
        height=200 + 45 * len(epss),
        width=230 + 75 * len(lams),
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
    )
    return figure


def pass_k_curves(groups: list[GroupMetrics]) -> go.Figure:
    """pass^k (solid, with 95 % bootstrap interval) and pass@k (dotted) over k."""
    figure = go.Figure()
    palette = plotly.colors.qualitative.Plotly
    for index, g in enumerate(groups):
        color = palette[index % len(palette)]
        points = [p for p in g.pass_k if p.pass_hat.value is not None]
        if not points:
            continue
        label = f"{g.agent} · {g.profile}"
        figure.add_trace(
            go.Scatter(
                x=[p.k for p in points],
                y=[p.pass_hat.value for p in points],
                mode="lines+markers",
                name=label,
                legendgroup=label,
                line={"color": color},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        (p.pass_hat.high or p.pass_hat.value or 0) - (p.pass_hat.value or 0)
                        for p in points
                    ],
                    "arrayminus": [
                        (p.pass_hat.value or 0) - (p.pass_hat.low or p.pass_hat.value or 0)
                        for p in points
                    ],
                },
            )
        )
        figure.add_trace(
            go.Scatter(
                x=[p.k for p in points],
                y=[p.pass_at.value for p in points],
                mode="lines",
                line={"dash": "dot", "color": color},
                name=f"pass@k {label}",
                legendgroup=label,
                showlegend=False,
            )
        )
    figure.update_layout(
        title={"text": "pass^k over k (solid, 95% CI); pass@k dotted, same colour"},
        xaxis={"title": {"text": "k (trials)"}, "dtick": 1},
        yaxis={"title": {"text": "rate"}, "range": [0, 1.05]},
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return figure
