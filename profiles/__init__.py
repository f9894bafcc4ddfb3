"""Fault profiles: the shipped YAML files (package data) and how any profile file is read.

Reading files lives here, not in chaosproxy.faults, so the engine stays free of I/O: it
takes a validated `Profile` and nothing else.
"""

from chaosproxy.profiles.loader import (
    ProfileError,
    load_profile,
    load_shipped_profile,
    parse_profile,
    shipped_profiles,
    validate_profile,
)

__all__ = [
    "ProfileError",
    "load_profile",
    "load_shipped_profile",
    "parse_profile",
    "shipped_profiles",
    "validate_profile",
]
