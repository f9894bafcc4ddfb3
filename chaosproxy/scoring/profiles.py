"""λ of a profile: what places it on the surface's fault axis."""

from __future__ import annotations

import re
from typing import Any

_LAMBDA_IN_NAME = re.compile(r"^lambda[_-]?([0-9]+(?:\.[0-9]+)?)$")


def profile_lambda(name: str, resolved: dict[str, Any] | None) -> float | None:
    """The `lambda` field of the resolved profile, else `lambdaX` in its name, else None
    (an ablation or FIT profile: scored, but off the λ axis)."""
    if resolved:
        for key in ("lambda", "lam", "lambda_"):
            value = resolved.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
    match = _LAMBDA_IN_NAME.match(name)
    return float(match.group(1)) if match else None
