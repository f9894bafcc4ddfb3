"""The project's errors, under one root: `except chaosproxy.ChaosError` catches them all.

The errors the public API raises are declared here, once (`chaosproxy.api.errors`
re-exports them); modules with an error of their own derive it from `ChaosError` and give
it a name no other module uses (tests/test_layout.py holds both). Each class also derives
from the built-in exception it refines (ValueError, OSError, LookupError, RuntimeError),
so code written against those keeps working.
"""

from __future__ import annotations


class ChaosError(Exception):
    """Root of every chaosproxy API error."""


class SetupError(ChaosError, ValueError):
    """A bad Environment or episode setting; the message names it."""


class ProfileError(SetupError):
    """A fault profile that does not exist or does not validate (names file, field, reason)."""


class UnknownDomainError(SetupError, KeyError):
    """A domain or upstream name the environment does not serve; lists the ones it does.

    `name` and `known` are set when the domain registry raises it (a `KeyError` there)."""

    def __init__(self, message: str, *, name: str | None = None, known: list[str] | None = None):
        super().__init__(message)
        self.name = name
        self.known = known or []

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownTaskError(SetupError, LookupError):
    """A task id no installed domain declares."""


class PortInUseError(ChaosError, OSError):
    """The proxy could not listen on the requested host and port (`port`: which one)."""

    port: int | None = None


class StartError(ChaosError, RuntimeError):
    """The services or the proxy failed to start; carries the cause."""


class ServicesError(StartError):
    """The built-in domain services' child process failed to start or answer."""


class ServicesOptionError(SetupError):
    """A bad `--services NAME=URL` option, or a service it names that is not reachable."""


class NotRunningError(ChaosError, RuntimeError):
    """The environment is not started (or already closed), or the episode has ended."""


class NoTaskError(ChaosError, LookupError):
    """`verdict()` on an episode created without a task."""


class OracleError(ChaosError, RuntimeError):
    """A domain service's oracle (reset, journal, delete) answered with an error."""
