"""What `chaosproxy score` prints: rich tables within 100 columns, the pooled figures behind
each tier, and only the key comparisons, marked when their interval excludes 0."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner
from rich.cells import cell_len
from runshapes import QUICKSTART, SMALL, Shape, build_run

from chaosproxy.cli import main
from chaosproxy.report.fmt import est, excludes_zero, render, signed, text_table
from chaosproxy.report.table import summary
from chaosproxy.scoring import score_runs
from chaosproxy.scoring.estimate import Estimate


def _fits(text: str, tmp_path: Path) -> None:
    """Every line within 100 columns, the user's own paths aside."""
    lines = text.replace(str(tmp_path), "RUNS").splitlines()
    wide = [line for line in lines if cell_len(line) > 100]
    assert wide == [], wide


def test_quickstart_summary_fits_100_columns_and_shows_the_pooled_tier_figures(
    tmp_path: Path,
) -> None:
    build_run(tmp_path / "qs", QUICKSTART)
    result = CliRunner().invoke(main, ["score", str(tmp_path / "qs")])
    assert result.exit_code == 0, result.output
    out = result.output
    _fits(out, tmp_path)
    assert "\x1b[" not in out, "no colour codes off a terminal"
    results = score_runs([tmp_path / "qs"]).results
    for g in results.groups:
        row = next(
            line
            for line in out.splitlines()
            if line.startswith(f"{g.agent} ") and g.profile in line
        )
        assert est(g.sr) in row and f"{g.counts.evaluable}/{g.counts.total}" in row
    verdict = out[out.index("Verdict") : out.index("Recovery by fault type")]
    for a in results.agents:
        row = next(line for line in verdict.splitlines() if line.startswith(f"{a.agent} "))
        assert est(a.tier.frr) in row and signed(a.delta_rel) in row
        assert (a.tier.tier or a.tier.status) in row  # a tier, "below", "insufficient data"


def test_comparisons_keep_to_sr_and_frr_and_star_what_excludes_zero(tmp_path: Path) -> None:
    build_run(tmp_path / "qs", QUICKSTART)
    results = score_runs([tmp_path / "qs"]).results
    out = summary(results)
    block = out[out.index("Comparisons") :]
    shown = [c for c in results.comparisons if c.metric in ("SR", "FRR")]
    stars = sum(excludes_zero(c.diff) for c in shown)
    assert block.count(" *") == stars > 0
    pairs = {(c.a, c.profile_a, c.b, c.profile_b) for c in shown}
    rows = [line for line in block.splitlines() if re.match(r"^\w+ @ ", line)]
    assert len(rows) == len(pairs) == 9  # 3 agents vs their λ0, 3 pairs × 2 profiles
    rest = len(results.comparisons) - len(shown)
    assert f"{rest} more comparisons" in block


def test_many_trials_and_two_runs_still_fit(tmp_path: Path) -> None:
    wide = Shape(("naive", "robust"), ("travel",), 3, ("lambda0.0", "lambda0.2"), (0.0,), 8)
    build_run(tmp_path / "a", wide)
    build_run(tmp_path / "b", SMALL, seed=8)
    out = summary(score_runs([tmp_path / "a", tmp_path / "b"]).results)
    _fits(out, tmp_path)
    header = next(line for line in out.splitlines() if line.startswith("agent ") and "SR" in line)
    assert "pass^1" in header and "pass^8" in header and "pass^4" not in header
    assert "naive@a" in out and "robust@b" in out


def test_a_table_for_other_commands() -> None:
    text = text_table(["service", "REST base"], [["travel", "http://127.0.0.1:1/e/x/travel"]])
    lines = text.splitlines()
    assert lines[0].split() == ["service", "REST", "base"]
    assert lines[2].split() == ["travel", "http://127.0.0.1:1/e/x/travel"]


def test_render_never_cuts_a_cell() -> None:
    long = "tests/test_agent.py::test_a_rather_long_name_" + "x" * 90
    text = render(["test", "profile"], [[long, "lambda0.0"]], right_from=2)
    assert long in text and "lambda0.0" in text


def test_excludes_zero() -> None:
    assert excludes_zero(Estimate(value=0.2, n=9, low=0.05, high=0.3))
    assert excludes_zero(Estimate(value=-0.2, n=9, low=-0.3, high=-0.01))
    assert not excludes_zero(Estimate(value=0.1, n=9, low=0.0, high=0.3))
    assert not excludes_zero(Estimate(value=0.1, n=9))
