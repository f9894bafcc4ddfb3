"""The HTML report is one self-contained file whose plots render in a real headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.scoring.synthetic import write_synthetic_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("report") / "run"
    write_synthetic_run(
        run_dir, calls=2000, tasks=6, trials=3, profiles=("lambda0.0", "lambda0.1", "lambda0.2")
    )
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    return run_dir / "report.html"


def test_report_is_self_contained(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", text), "no external scripts: it must open offline"
    assert "Plotly" in text and text.count("Plotly.newPlot(") == 3 + 1  # k = 1, 2, 3 + curves
    for heading in (
        "Verdict",
        "Headline",
        "Reliability surface",
        "pass^k over k",
        "Recovery by fault type",
        "Retry hygiene",
        "By domain",
    ):
        assert heading in text
    assert "36 / 36" in text  # evaluable n of total per group: 6 tasks × 2 ε × 3 trials


def test_output_option(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    write_synthetic_run(run_dir, calls=200, tasks=2, trials=2)
    target = tmp_path / "elsewhere.html"
    result = CliRunner().invoke(main, ["report", str(run_dir), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert target.stat().st_size > 1_000_000 and not (run_dir / "report.html").exists()


def test_report_of_a_broken_run_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code != 0 and "missing" in result.output


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
def test_plots_render_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        report.resolve().as_uri(),
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=90, check=True).stdout
    # plotly draws each figure as an svg.main-svg once its JS has run
    figures = len(re.findall(r'class="plotly-graph-div', dom))
    assert figures == 4
    assert dom.count('class="main-svg"') >= figures
    assert re.search(r'class="hm"|class="heatmaplayer', dom), "heat maps drawn"
    assert "scatterlayer" in dom, "pass^k curves drawn"
