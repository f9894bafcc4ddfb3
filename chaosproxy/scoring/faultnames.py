"""Fault names as the scorer groups them.

The fault engine may spell a fault `LostReply`, `lost_reply` or `lost-reply`; the scorer
folds every spelling onto DESIGN §5's names so tables group one fault type once. Unknown
names are kept as written: a new fault type shows up as its own row, never inside another.
The lists come from the fault registry (`chaosproxy.faults.kinds.UNITS`, through
`chaosproxy.faults.catalog`): a new fault needs no edit here
(`tests/faults/test_fault_units.py` registers a toy fault to show it).
"""

from __future__ import annotations

from chaosproxy.faults.catalog import (
    CONNECTION_FAULTS,
    FAULT_NAMES,
    INVISIBLE_FAULTS,
    MODEL_FAULTS,
    NON_RETRYABLE_FAULTS,
    PERSISTENT_DATA_FAULTS,
)

KNOWN: tuple[str, ...] = FAULT_NAMES
_BY_KEY = {name.lower(): name for name in KNOWN}
_ALIASES = {
    "timeout": "TransientTimeout",
    "ratelimit": "SoftRateLimit",
    "blocking": "BlockingWindow",
}

# The agent cannot see these: the answer arrives normally, only later.
INVISIBLE = INVISIBLE_FAULTS
# Retrying the same call cannot help (DESIGN §5 "recoverable: no" by retry).
NON_RETRYABLE = NON_RETRYABLE_FAULTS
# Faults of model calls (`target: model`): counted apart from tool calls.
MODEL = MODEL_FAULTS
# Faults of the request opening an MCP connection (SlowInitialize): counted apart too.
CONNECTION = CONNECTION_FAULTS
# Persistent data faults: later answers still carry them, yet the call itself went through.
PERSISTENT_DATA = PERSISTENT_DATA_FAULTS


def canonical(name: str) -> str:
    """DESIGN §5 spelling of a fault name; unknown names come back unchanged."""
    known = _CANONICAL.get(name)
    if known is None:
        key = name.replace("_", "").replace("-", "").replace(" ", "").lower()
        known = _CANONICAL[name] = _BY_KEY.get(key) or _ALIASES.get(key) or name
    return known


_CANONICAL: dict[str, str] = {}
"""Names already spelled (a log names a few fault kinds a million times)."""
