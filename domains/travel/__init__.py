"""Travel booking: search flights, hold a seat, confirm it for a traveler, read the itinerary."""

from chaosproxy.domains.travel import tasks as _tasks  # noqa: F401  (registers the suite)
from chaosproxy.domains.travel.tools import domain

__all__ = ["domain"]
