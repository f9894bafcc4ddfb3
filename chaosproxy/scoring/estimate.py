"""The one shape every reported number takes: value, its denominator, a 95 % interval.

`value` is None when the run cannot measure the number (no fault delivered, k > n...);
`note` then says why. A table prints None as "n/a", never as 0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Method = Literal["wilson", "bootstrap", "newcombe", "bootstrap-diff", "mover", "count", "none"]


class Estimate(BaseModel):
    value: float | None
    n: int
    low: float | None = None
    high: float | None = None
    method: Method = "none"
    note: str | None = None

    @classmethod
    def na(cls, note: str, n: int = 0) -> Estimate:
        return cls(value=None, n=n, note=note)

    @property
    def measured(self) -> bool:
        return self.value is not None
