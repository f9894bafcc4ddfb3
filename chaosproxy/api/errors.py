"""Every error the public API raises, under one root: `except chaosproxy.ChaosError` catches all.

Each class also derives from the built-in exception it refines (ValueError, OSError,
LookupError, RuntimeError), so code written against those keeps working.
"""

from __future__ import annotations


class ChaosError(Exception):
    """Root of every chaosproxy API error."""


class SetupError(ChaosError, ValueError):
    """A bad Environment or episode setting; the message names it."""


class ProfileError(SetupError):
    """A fault profile that does not exist or does not validate (names file, field, reason)."""


class UnknownDomainError(SetupError, LookupError):
    """A domain or upstream name the environment does not serve; lists the ones it does."""


class UnknownTaskError(SetupError, LookupError):
    """A task id no installed domain declares."""


class PortInUseError(ChaosError, OSError):
    """The proxy could not listen on the requested host and port."""


class StartError(ChaosError, RuntimeError):
    """The services or the proxy failed to start; carries the cause."""


class NotRunningError(ChaosError, RuntimeError):
    """The environment is not started (or already closed), or the episode has ended."""


class NoTaskError(ChaosError, LookupError):
    """`verdict()` on an episode created without a task."""


class OracleError(ChaosError, RuntimeError):
    """A domain service's oracle (reset, journal, delete) answered with an error."""
