"""Scheduling: book, check, cancel and list meetings with colleagues and rooms."""

from chaosproxy.domains.scheduling import tasks as _tasks  # noqa: F401  (registers the suite)
from chaosproxy.domains.scheduling.tools import domain

__all__ = ["domain"]
