"""Presenting scored results: the terminal summary and the self-contained HTML report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chaosproxy.records import REPORT_FILE


def write_report(run_dirs: Path | Sequence[Path], output: Path | None = None) -> Path:
    """Score the run directory (or two, side by side) and write the HTML report; returns
    its path (default RUN_DIR/report.html)."""
    from chaosproxy.report.html import write_html
    from chaosproxy.scoring import score_runs

    paths = [run_dirs] if isinstance(run_dirs, Path) else list(run_dirs)
    target = output or paths[0] / REPORT_FILE
    return write_html(score_runs(paths).results, paths, target)


__all__ = ["write_report"]
