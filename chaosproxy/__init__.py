"""chaosproxy: chaos engineering for tool-using LLM agents.

The public Python API (see docs/pytest.md)::

    import chaosproxy

    with chaosproxy.Environment(domains=["travel"], profile="lambda0.2", seed=7) as env:
        episode = env.episode(task="travel-01-book-cheapest")
        ...

Names are loaded on first use, so `import chaosproxy` stays cheap (the CLI, the pytest
plugin and the domain services all import it).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from chaosproxy.api import (
        ChaosError,
        ControlSettings,
        EndpointSet,
        Environment,
        Episode,
        Fault,
        ForwardSettings,
        NoTaskError,
        NotRunningError,
        OracleError,
        PortInUseError,
        ProfileError,
        SetupError,
        StartError,
        UnknownDomainError,
        UnknownTaskError,
        Verdict,
    )

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
    "__version__",
]


def __getattr__(name: str) -> object:
    if name in __all__ and name != "__version__":
        value = getattr(import_module("chaosproxy.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chaosproxy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
