"""How numbers read in tables (n/a for unmeasured, intervals in brackets), and the rich
tables the terminal prints: one look for every table, as wide as the terminal (100 columns
in a pipe), never cutting a value."""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    # typing only: importing the scorer pulls in scipy, seconds that `chaosproxy up`'s
    # endpoint table should not wait for
    from chaosproxy.scoring.estimate import Estimate

NA = "n/a"
MAX_WIDTH = 100
"""Terminal output keeps to this width even on wider terminals, so logs and READMEs match."""


def num(value: float | None, digits: int = 2) -> str:
    return NA if value is None else f"{value:.{digits}f}"


def est(e: Estimate, digits: int = 2, interval: bool = True) -> str:
    """0.87 [0.74, 0.94]; n/a when not measured."""
    if e.value is None:
        return NA
    text = f"{e.value:.{digits}f}"
    if interval and e.low is not None and e.high is not None:
        text += f" [{e.low:.{digits}f}, {e.high:.{digits}f}]"
    return text


def signed(e: Estimate, digits: int = 2) -> str:
    if e.value is None:
        return NA
    text = f"{e.value:+.{digits}f}"
    if e.low is not None and e.high is not None:
        text += f" [{e.low:+.{digits}f}, {e.high:+.{digits}f}]"
    return text


def excludes_zero(e: Estimate) -> bool:
    """The 95 % interval lies wholly on one side of 0: a difference the run can vouch for."""
    return e.low is not None and e.high is not None and (e.low > 0 or e.high < 0)


def lam(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def show_ks(k_max: int) -> list[int]:
    """A few k columns: 1, 2, 4, 8… and k_max."""
    ks, k = [], 1
    while k < k_max:
        ks.append(k)
        k *= 2
    return [*ks, k_max]


def longest_word(cells: Iterable[RenderableType]) -> int:
    """The widest word among the cells: a column narrower than it would split it."""
    words = (w for c in cells for w in (c.plain if isinstance(c, Text) else str(c)).split())
    return max((len(w) for w in words), default=1)


HOUSE_STYLE: dict[str, Any] = {
    "title_justify": "left",
    "title_style": "bold",
    "show_edge": False,
    "pad_edge": False,
    "padding": (0, 1, 0, 0),
}
"""How every terminal table looks (no edges, one space between columns)."""


class FitTable(Table):
    """A table that never cuts a value: when it is wider than the console, its value
    columns are printed in groups, each group beside the label columns (as pandas prints
    a wide frame), so every column is shown and no cell is split inside a word."""

    labels: int = 1

    def _group(self, indexes: Sequence[int], title: str | None, wrap: bool = False) -> Table:
        """These columns as a table of their own; `wrap`: cells may wrap between words."""
        part = Table(box=self.box, title=title, **HOUSE_STYLE)
        for index in indexes:
            column = self.columns[index]
            words = longest_word([str(column.header), *column.cells])
            part.add_column(
                str(column.header),
                justify=column.justify,
                no_wrap=not wrap,
                overflow="fold",
                min_width=words if wrap else None,
            )
        for row in range(self.row_count):
            part.add_row(*[list(self.columns[index].cells)[row] for index in indexes])
        return part

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        def width(part: Table) -> int:
            return Measurement.get(console, options.update(width=10_000), part).maximum

        if width(self) <= options.max_width:
            yield from super().__rich_console__(console, options)
            return
        labels = list(range(min(self.labels, len(self.columns))))
        groups: list[list[int]] = [[]]
        for index in range(len(labels), len(self.columns)):
            wider = self._group([*labels, *groups[-1], index], None)
            if groups[-1] and width(wider) > options.max_width:
                groups.append([])
            groups[-1].append(index)
        parts = [self._group([*labels, *group], None) for group in groups]
        if any(width(part) > options.max_width for part in parts):
            # narrower than the labels and one value: everything wraps between words
            part = self._group(range(len(self.columns)), None, wrap=True)
            part.title = self.title
            yield part
            return
        for number, part in enumerate(parts):
            if number:
                yield Text("")
            else:
                part.title = self.title
            yield part


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str | Text]],
    *,
    left: int = 1,
    title: str | None = None,
) -> Table:
    """A rich table in the house style: the first `left` columns are labels (left-aligned),
    the rest numbers (right-aligned, never wrapped). Wider than the console, it prints its
    value columns in groups beside the labels (FitTable): a number or a name cut short
    ("robu…", "Partia/lRespo") would be read wrong."""
    out = FitTable(box=box.SIMPLE_HEAD, title=title, **HOUSE_STYLE)
    out.labels = left
    for index, header in enumerate(headers):
        if index < left:
            words = [header, *(row[index] for row in rows if index < len(row))]
            out.add_column(header, justify="left", overflow="fold", min_width=longest_word(words))
        else:
            out.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        out.add_row(
            *[Text(c, style="dim" if c == NA else "") if isinstance(c, str) else c for c in row]
        )
    return out


def terminal_width() -> int:
    """The width to print at: $COLUMNS when set, else the terminal's width, else (a pipe, a
    file) MAX_WIDTH, so logs and READMEs match."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((MAX_WIDTH, 24)).columns
    return MAX_WIDTH


def to_text(*renderables: RenderableType, width: int = MAX_WIDTH) -> str:
    """Plain text (no colour codes) of rich renderables, as a file or a test sees them."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    for renderable in renderables:
        console.print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A table as plain text, for commands that print one table (e.g. `up`'s endpoints)."""
    return to_text(table(headers, rows, left=left), width=terminal_width())


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    """A plain-text table (columns from `right_from` on right-aligned), drawn by rich and
    never squeezed: every cell is shown whole, so callers that parse it read full values."""
    return to_text(table(headers, rows, left=right_from), width=10_000)
