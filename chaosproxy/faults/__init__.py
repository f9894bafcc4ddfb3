"""The fault engine: a pure core that decides, per tool call, whether and how it fails.

Imports nothing else of chaosproxy. `load_profile` reads YAML (the loader module);
the engine itself takes a validated `Profile` and touches no files, sockets or clocks.
"""

from chaosproxy.faults.catalog import CATALOG, FAULT_NAMES, FaultSpec
from chaosproxy.faults.engine import FaultEngine
from chaosproxy.faults.loader import ProfileError, load_profile, parse_profile, shipped_profiles
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

__all__ = [
    "CATALOG",
    "FAULT_NAMES",
    "CallContext",
    "Decision",
    "DrawKey",
    "FaultEngine",
    "FaultInfo",
    "FaultSpec",
    "PlannedEffect",
    "Profile",
    "ProfileError",
    "ResponseEffect",
    "SyntheticResponse",
    "load_profile",
    "parse_profile",
    "shipped_profiles",
]
