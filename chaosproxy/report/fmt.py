"""How numbers read in tables: n/a for unmeasured, intervals in brackets."""

from __future__ import annotations

from chaosproxy.scoring.estimate import Estimate

NA = "n/a"


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


def lam(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def show_ks(k_max: int) -> list[int]:
    """A few k columns: 1, 2, 4, 8… and k_max."""
    ks, k = [], 1
    while k < k_max:
        ks.append(k)
        k *= 2
    return [*ks, k_max]


def render(headers: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    """A plain aligned text table; columns from `right_from` on are right-aligned."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(w) if i >= right_from else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("─" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])
