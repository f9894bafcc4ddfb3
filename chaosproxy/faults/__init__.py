"""The fault engine: a pure core that decides, per tool call, whether and how it fails.

Imports nothing else of chaosproxy, and touches no files, sockets or clocks: it takes a
validated `Profile` (read from YAML by chaosproxy.profiles) and returns decisions.
"""

from chaosproxy.faults.catalog import CATALOG, FAULT_NAMES
from chaosproxy.faults.engine import FaultEngine
from chaosproxy.faults.models import (
    CallContext,
    Decision,
    DrawKey,
    FaultInfo,
    PlannedEffect,
    ResponseEffect,
    SyntheticResponse,
)
from chaosproxy.faults.profile import Profile
from chaosproxy.faults.unit import FaultUnit

__all__ = [
    "CATALOG",
    "FAULT_NAMES",
    "CallContext",
    "Decision",
    "DrawKey",
    "FaultEngine",
    "FaultInfo",
    "FaultUnit",
    "PlannedEffect",
    "Profile",
    "ResponseEffect",
    "SyntheticResponse",
]
