"""ReliabilityBench tables on a run built by hand, each cell worked out in the comments."""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from chaosproxy.papers import reliabilitybench
from chaosproxy.papers.table import Table, print_tables, write_tables
from chaosproxy.scoring import score_runs

_spec = importlib.util.spec_from_file_location(
    "scoring_builder", Path(__file__).parents[1] / "scoring" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
builder = importlib.util.module_from_spec(_spec)
sys.modules["scoring_builder"] = builder
_spec.loader.exec_module(builder)


def _episode(
    run: Any,
    task: str,
    profile: str,
    ok: bool,
    trial: int,
    *,
    eps: float = 0.0,
    agent: str = "react",
    calls: int = 2,
) -> None:
    episode = run.episode(
        task,
        success=ok,
        profile=profile,
        epsilon=eps,
        trial=trial,
        agent=agent,
        t_success=calls if ok else None,
    )
    episode.record.model = "m1"
    for _ in range(calls):
        episode.call("search")


def _run(tmp_path: Path) -> Path:
    run = builder.RunBuilder(path=tmp_path / "run", trials=2)
    run.profiles = {
        name: {"name": name, "failure_rate": rate}
        for name, rate in [("lambda0.0", 0.0), ("lambda0.2", 0.2), ("ablation-timeout", 0.2)]
    }
    run.task("t1", domain="travel").task("t2", domain="scheduling")
    # lambda0.0, ε 0:  t1 [ok, ok]      t2 [ok, fail]
    # lambda0.2, ε 0:  t1 [ok, fail]    t2 [fail, fail]
    for task, profile, outcomes in [
        ("t1", "lambda0.0", (True, True)),
        ("t2", "lambda0.0", (True, False)),
        ("t1", "lambda0.2", (True, False)),
        ("t2", "lambda0.2", (False, False)),
    ]:
        for trial, ok in enumerate(outcomes, start=1):
            _episode(run, task, profile, ok, trial, calls=3 if task == "t1" else 1)
    # ablation-timeout, ε 0: t1 [ok, ok], t2 [fail, ok]
    for task, outcomes in [("t1", (True, True)), ("t2", (False, True))]:
        for trial, ok in enumerate(outcomes, start=1):
            _episode(run, task, "ablation-timeout", ok, trial)
    return run.build()


def _row(table: Table, first: str, second: str | None = None) -> list[str]:
    rows = [r for r in table.rows if r[0] == first and (second is None or r[1] == second)]
    assert len(rows) == 1, (first, second, table.rows)
    return rows[0]


def test_tables_match_hand_computed_values(tmp_path: Path) -> None:
    scored = score_runs([_run(tmp_path)])
    tables = {t.key: t for t in reliabilitybench.tables(scored)}

    # Table 5, model m1 over the main grid (lambda0.0 and lambda0.2 cells):
    # pass^1 per cell = c/n: 1, 1/2, 1/2, 0 → mean 0.5; pass^2 = C(c,2)/C(2,2): 1, 0, 0, 0 → 0.25.
    # Only ε 0 was run: ε 0.1 and 0.2 have no cell.
    row = _row(tables["table5"], "m1")
    assert row[1].startswith("50.0% [") and row[2].startswith("25.0% [")
    assert row[3].startswith("25.0% [") and row[4] == "n/a" and row[5] == "n/a"
    assert row[7] == "n/a"  # no --price, no cost

    # Table 7 at λ 0: travel (t1) pass@1 = 2/2, pass^2 = 1, 3 calls per episode;
    # scheduling (t2) pass@1 = 1/2, pass^2 = 0, 1 call per episode.
    travel = _row(tables["table7"], "react", "travel")
    assert travel[2].startswith("100.0%") and travel[3].startswith("100.0%")
    assert travel[4] == "3.0"
    scheduling = _row(tables["table7"], "react", "scheduling")
    assert scheduling[2].startswith("50.0%") and scheduling[3].startswith("0.0%")
    assert scheduling[4] == "1.0"

    # Table 9 at ε 0: ablation-timeout 3 of 4; mixed (lambda0.2) 1 of 4 → +50 pp.
    timeout = _row(tables["table9"], "Timeout only")
    assert timeout[1] == "4" and timeout[2].startswith("75.0%") and timeout[3] == "+50.00 pp"
    mixed = _row(tables["table9"], "Mixed (baseline)")
    assert mixed[2].startswith("25.0%") and mixed[3] == "—"

    # Figure 2: pass^2 at λ 0 = (1 + 0)/2 = 0.5, at λ 0.2 = 0 → Δ −50 pp, slope −0.5/0.2 = −2.5.
    assert _row(tables["figure2"], "react")[1:] == ["50.0%", "0.0%", "-50.0", "-2.500", "-0.2500"]

    # Table 6: pass^1 at ε 0 over both λ: 4 successes of 8 episodes.
    assert _row(tables["table6"], "react")[2].startswith("50.0% [")


def test_impact_labels_follow_the_rank_rule() -> None:
    label = reliabilitybench.impact_label
    assert [label(v, [0.9, 0.8, 0.95]) for v in (0.9, 0.8, 0.95)] == ["low", "highest", "minimal"]
    assert label(1.0, [1.0, 1.0, 0.75]) == "minimal" and label(0.75, [1.0, 1.0, 0.75]) == "highest"
    assert label(0.5, [0.5, 0.5]) == "none" and label(None, [0.5]) == "n/a"


def test_markdown_csv_and_terminal_show_the_same_cells(tmp_path: Path) -> None:
    tables = reliabilitybench.tables(score_runs([_run(tmp_path)]))
    written = write_tables(tables, tmp_path / "out", "reliabilitybench")
    markdown = written[0].read_text()
    console = Console(width=400, record=True)
    print_tables(tables, console)
    printed = console.export_text()
    for table in tables:
        rows = list(
            csv.reader(
                io.StringIO((tmp_path / "out" / f"reliabilitybench-{table.key}.csv").read_text())
            )
        )
        assert rows == [table.columns, *table.rows]
        assert table.title in markdown and table.title in printed
        for row in table.rows:
            assert "| " + " | ".join(row) + " |" in markdown
            for cell in row:
                assert cell in printed
