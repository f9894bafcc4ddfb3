"""The errors the public API raises: declared once in `chaosproxy.errors` (one root,
`ChaosError`), re-exported here."""

from __future__ import annotations

from chaosproxy.errors import (
    ChaosError,
    NoTaskError,
    NotRunningError,
    OracleError,
    PortInUseError,
    ProfileError,
    SetupError,
    StartError,
    UnknownDomainError,
    UnknownTaskError,
)

__all__ = [
    "ChaosError",
    "NoTaskError",
    "NotRunningError",
    "OracleError",
    "PortInUseError",
    "ProfileError",
    "SetupError",
    "StartError",
    "UnknownDomainError",
    "UnknownTaskError",
]
