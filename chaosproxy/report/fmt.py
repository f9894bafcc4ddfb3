"""How numbers read in tables (n/a for unmeasured, intervals in brackets), and the rich
tables the terminal prints: one look for every table, never wider than 100 columns."""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, RenderableType
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


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str | Text]],
    *,
    left: int = 1,
    title: str | None = None,
) -> Table:
    """A rich table in the house style: the first `left` columns are labels (left-aligned),
    the rest numbers (right-aligned, never wrapped). When the table is wider than the
    console, only the labels give way, folding onto a second line (never "robu…"): a
    number or a name cut short with an ellipsis would be read wrong."""
    out = Table(
        box=box.SIMPLE_HEAD,
        title=title,
        title_justify="left",
        title_style="bold",
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    for index, header in enumerate(headers):
        if index < left:
            out.add_column(header, justify="left", overflow="fold")
        else:
            out.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        out.add_row(
            *[Text(c, style="dim" if c == NA else "") if isinstance(c, str) else c for c in row]
        )
    return out


def terminal_width() -> int:
    """The terminal's width, at most MAX_WIDTH; MAX_WIDTH when stdout is not a terminal."""
    if sys.stdout.isatty():
        return min(shutil.get_terminal_size((MAX_WIDTH, 24)).columns, MAX_WIDTH)
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
