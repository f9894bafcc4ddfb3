"""Helpers for reference solutions, which read tool results as plain JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def first(
    items: Iterable[dict[str, Any]], where: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """The first matching record. ValueError (not StopIteration, which an async function
    would turn into RuntimeError) when a result lacks it, so agents report 'could not read'."""
    for item in items:
        if where(item):
            return item
    raise ValueError(f"no {what} in the tool result")
