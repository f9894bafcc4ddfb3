"""Weather: current conditions, 7-day forecasts, a station archive and alert rules."""

from chaosproxy.domains.weather import tasks as _tasks  # noqa: F401  (registers the suite)
from chaosproxy.domains.weather.tools import domain

__all__ = ["domain"]
