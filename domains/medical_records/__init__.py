"""Medical records and appointments: patient lookup, conditions, medications, scheduling."""

from chaosproxy.domains.medical_records import tasks as _tasks  # noqa: F401  (registers the suite)
from chaosproxy.domains.medical_records.tools import domain

__all__ = ["domain"]
