"""The public Python API: `Environment`, `Episode` and the `ChaosError` tree.

Import these from `chaosproxy` itself; the modules behind them are private.
"""

from chaosproxy.api.environment import Environment
from chaosproxy.api.episode import EndpointSet, Episode, Fault, Verdict
from chaosproxy.api.errors import (
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
from chaosproxy.api.options import ControlSettings, ForwardSettings

__all__ = [
    "ChaosError",
    "ControlSettings",
    "EndpointSet",
    "Environment",
    "Episode",
    "Fault",
    "ForwardSettings",
    "NoTaskError",
    "NotRunningError",
    "OracleError",
    "PortInUseError",
    "ProfileError",
    "SetupError",
    "StartError",
    "UnknownDomainError",
    "UnknownTaskError",
    "Verdict",
]
