"""A paper's table as the commands print it and write it (Markdown and CSV, same cells)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

from chaosproxy.scoring.estimate import Estimate


@dataclass
class Table:
    """Cells are the printed strings: the terminal, Markdown and CSV show the same values."""

    key: str
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.key}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def markdown(self) -> str:
        def escape(cell: str) -> str:
            return cell.replace("|", "\\|")

        lines = [f"### {self.title}", ""]
        lines.append("| " + " | ".join(escape(c) for c in self.columns) + " |")
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in self.rows]
        if not self.rows:
            lines.append("| " + " | ".join("—" for _ in self.columns) + " |")
        lines.append("")
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(self.rows)
        return buffer.getvalue()

    def rich(self) -> RichTable:
        table = RichTable(title=self.title, title_justify="left", caption_justify="left")
        for index, column in enumerate(self.columns):
            table.add_column(column, justify="left" if index == 0 else "right", overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        if self.notes:
            table.caption = "\n".join(f"• {note}" for note in self.notes)
        return table


def pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def pct_ci(estimate: Estimate) -> str:
    """`62.5% [40.1, 80.3]`: a share with its interval, in percent."""
    if estimate.value is None:
        return "n/a"
    if estimate.low is None or estimate.high is None:
        return pct(estimate.value)
    return f"{100 * estimate.value:.1f}% [{100 * estimate.low:.1f}, {100 * estimate.high:.1f}]"


def num_ci(estimate: Estimate, digits: int = 2) -> str:
    if estimate.value is None:
        return "n/a"
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.{digits}f}"
    return f"{estimate.value:.{digits}f} [{estimate.low:.{digits}f}, {estimate.high:.{digits}f}]"


def num(value: float | None, digits: int = 2, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def write_tables(tables: list[Table], out: Path, stem: str) -> list[Path]:
    """`out/stem.md` with every table, and `out/stem-<key>.csv` per table."""
    out.mkdir(parents=True, exist_ok=True)
    markdown = out / f"{stem}.md"
    markdown.write_text("\n".join(table.markdown() for table in tables), encoding="utf-8")
    written = [markdown]
    for table in tables:
        path = out / f"{stem}-{table.key}.csv"
        path.write_text(table.csv(), encoding="utf-8")
        written.append(path)
    return written


def print_tables(tables: list[Table], console: Console | None = None) -> None:
    console = console or Console(width=100)
    for table in tables:
        console.print(table.rich())
        console.print()
