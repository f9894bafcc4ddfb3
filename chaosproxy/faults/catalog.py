"""The fault catalogue, derived from the registry (`chaosproxy.faults.kinds.UNITS`).

Nothing here names a fault: a new unit in the registry shows up in `CATALOG`,
`FAULT_NAMES` and every flag set below, and through them in the profile schema
(`profile.FaultParams`) and the scorer (`chaosproxy.scoring.faultnames`).

Defaults keep delays short so CI-scale runs stay fast (holds of ~1 s, latency
spikes of 0.3–1.5 s, Retry-After of 1 s); a profile can raise any of them.
"""

from __future__ import annotations

import difflib

from chaosproxy.faults.kinds import UNITS
from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import FaultUnit

__all__ = [
    "CATALOG",
    "CONNECTION_FAULTS",
    "FAULT_NAMES",
    "INCIDENT_FAULTS",
    "INVISIBLE_FAULTS",
    "MODEL_FAULTS",
    "NON_RETRYABLE_FAULTS",
    "PERSISTENT_DATA_FAULTS",
    "PER_ARGUMENTS_FAULTS",
    "REPLAY_FAULTS",
    "FaultUnit",
    "Params",
    "check_fault_name",
]


def _registered(units: tuple[FaultUnit, ...]) -> dict[str, FaultUnit]:
    catalog: dict[str, FaultUnit] = {}
    for unit in units:
        if unit.name in catalog:
            raise ValueError(f"fault '{unit.name}' is registered twice")
        catalog[unit.name] = unit
    return catalog


CATALOG: dict[str, FaultUnit] = _registered(UNITS)
FAULT_NAMES: tuple[str, ...] = tuple(CATALOG)
MODEL_FAULTS: frozenset[str] = frozenset(n for n, u in CATALOG.items() if u.target == "model")
INCIDENT_FAULTS: frozenset[str] = frozenset(n for n, u in CATALOG.items() if u.incident)
INVISIBLE_FAULTS: frozenset[str] = frozenset(n for n, u in CATALOG.items() if not u.visible)
NON_RETRYABLE_FAULTS: frozenset[str] = frozenset(n for n, u in CATALOG.items() if not u.retryable)
PERSISTENT_DATA_FAULTS: frozenset[str] = frozenset(
    n for n, u in CATALOG.items() if u.persistent_data
)
PER_ARGUMENTS_FAULTS: frozenset[str] = frozenset(n for n, u in CATALOG.items() if u.per_arguments)
REPLAY_FAULTS: frozenset[str] = frozenset(n for n, u in CATALOG.items() if u.replays)
CONNECTION_FAULTS: frozenset[str] = frozenset(
    n for n, u in CATALOG.items() if u.needs == "mcp_initialize"
)
"""Faults that land on the request opening an MCP connection (`initialize`), never on a
tool call: drawn per initialize among themselves, like model faults among model faults."""


def check_fault_name(name: str) -> str:
    """Accept a known fault name, or fail naming the closest one."""
    if name in CATALOG:
        return name
    close = difflib.get_close_matches(name, FAULT_NAMES, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ValueError(f"unknown fault '{name}'{hint} (known: {', '.join(FAULT_NAMES)})")
