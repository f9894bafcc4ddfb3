"""The self-contained HTML report: Jinja2 templates (package data under templates/) filled
from the view model in context.py; plotly.js is inlined once, so the file opens offline."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import jinja2
import plotly.io
import plotly.offline

from chaosproxy.report.context import build
from chaosproxy.report.figures import Plot
from chaosproxy.report.fmt import NA
from chaosproxy.scoring.results import Results

PNG_OPTIONS = {"format": "png", "scale": 2}
PLOT_CONFIG: dict[str, object] = {
    "displaylogo": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"],
    "toImageButtonOptions": PNG_OPTIONS,
}
"""plotly's toolbar: the camera saves a PNG at twice the size; the SVG button next to each
plot calls Plotly.downloadImage with format svg."""

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("chaosproxy.report", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _figure_json(plot: Plot) -> str:
    """The figure as JSON safe inside a <script> element."""
    text = plotly.io.to_json(plot.figure, validate=False)
    return text.replace("</", "<\\/")


def _config_json(plot: Plot) -> str:
    config = dict(PLOT_CONFIG)
    config["toImageButtonOptions"] = {**PNG_OPTIONS, "filename": plot.id}
    return json.dumps(config)


def _rate_colour(rate: float | None) -> str:
    """Red (0) → amber → green (1), pale enough to read the text on."""
    if rate is None:
        return "#f1f3f7"
    hue = int(120 * rate)
    return f"hsl({hue}, 62%, 86%)"


_ENV.filters["figure_json"] = _figure_json
_ENV.filters["config_json"] = _config_json
_ENV.filters["rate_colour"] = _rate_colour
_ENV.globals["NA"] = NA


def render_report(results: Results, run_dirs: Sequence[Path], output: Path) -> str:
    report = build(results, run_dirs, output)
    template = _ENV.get_template("report.html")
    return template.render(
        report=report,
        plotly_js=plotly.offline.get_plotlyjs(),
        style=_ENV.loader.get_source(_ENV, "report.css")[0] if _ENV.loader else "",
        script=_ENV.loader.get_source(_ENV, "report.js")[0] if _ENV.loader else "",
    )


def write_html(results: Results, run_dirs: Sequence[Path], path: Path) -> Path:
    path.write_text(render_report(results, run_dirs, path), encoding="utf-8")
    return path
