"""ISO dates shifted as values, never read from a clock (the engine is pure)."""

from __future__ import annotations

import re
from datetime import date, timedelta

_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(.*)$")


def shift_date(value: str, days: int) -> str | None:
    """Shift an ISO date (or the date of an ISO timestamp) by `days`, keeping the format."""
    match = _DATE.match(value)
    if not match:
        return None
    try:
        day = date.fromisoformat(match.group(1))
    except ValueError:
        return None
    return (day + timedelta(days=days)).isoformat() + match.group(2)
