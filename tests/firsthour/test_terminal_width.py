"""Every table reads at 80 columns and uses the width it has: no value cut short ("robu…"),
none split inside a word ("Partia/lRespo"), no column dropped (issue 30)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.report.fmt import table, to_text

LABELS = ["robust", "Tier-1 Operational"]
VALUES = ["0.82 [0.74, 0.90]", "+0.01 [-0.02, +0.04]", "124/124", "PartialResponse", "0.94"]
HEADERS = ["agent", "tier", "FRR [95% CI]", "Δ_rel [95% CI]", "n", "fault", "PEI"]


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_a_wide_table_keeps_every_value_whole(width: int) -> None:
    text = to_text(
        table(HEADERS, [LABELS + VALUES, ["naive", "below", *VALUES]], left=2), width=width
    )
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    for value in [*LABELS, *VALUES]:
        assert value in text, f"{value!r} cut or split at {width} columns:\n{text}"
    for header in HEADERS:
        assert header in text, f"column {header!r} dropped at {width} columns"
    # labels repeat beside every group of value columns, so each group reads on its own
    groups = text.count("robust")
    assert groups == 1 if width >= 120 else groups >= 2


def test_a_table_that_fits_is_one_table() -> None:
    text = to_text(table(["agent", "SR"], [["robust", "0.99"]]), width=80)
    assert text.splitlines()[0].split() == ["agent", "SR"] and text.count("robust") == 1


@pytest.mark.parametrize("command", [["domains"], ["profiles"], ["tasks", "--domain", "travel"]])
@pytest.mark.parametrize("columns", ["80", "200"])
def test_listings_read_at_the_terminal_width(command: list[str], columns: str) -> None:
    done = CliRunner().invoke(main, command, env={"COLUMNS": columns})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    assert "…" not in done.output
    words = set(re.findall(r"[A-Za-z_]{3,}", done.output))
    if command == ["domains"]:
        assert {"search_flights", "security_analyzer", "book_rail_freight"} <= words
    if command == ["profiles"]:
        assert "lambda0.2 " in done.output and "ablation-partial " in done.output
