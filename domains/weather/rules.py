"""Pure weather rules shared by the tools and the verifiers: lookups, coverage, units, matching.

Answer matching is explicit normalisation, never substring (AgentProp-Bench: substring judging
agrees with humans at kappa 0.049). The tolerances, applied after converting to metric:
temperatures and temperature differences within 0.5 °C (a difference in °F converts by 5/9 with
no offset), precipitation within 0.5 mm, wind within 1.0 km/h. City names compare without case,
accents, punctuation or extra spaces, so "sao paulo", "São Paulo" and the id "sao-paulo" agree.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date as Date
from datetime import datetime, timedelta
from typing import Literal

from chaosproxy.domains.kit import ToolError
from chaosproxy.domains.weather.data import CITIES, CITY_BY_ID, City, local_hour, temperature_at
from chaosproxy.domains.weather.state import (
    ARCHIVE_START,
    FORECAST_DAYS,
    Outage,
    Unit,
    WeatherAnswer,
    WeatherState,
)

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
Dimension = Literal["temperature", "precipitation", "wind"]

TEMPERATURE_TOLERANCE_C = 0.5
PRECIPITATION_TOLERANCE_MM = 0.5
WIND_TOLERANCE_KMH = 1.0
MM_PER_INCH = 25.4
KMH_PER_MPH = 1.609344

DIMENSION_OF: dict[str, Dimension] = {
    "C": "temperature",
    "F": "temperature",
    "mm": "precipitation",
    "in": "precipitation",
    "km/h": "wind",
    "mph": "wind",
}


def normalise_city(name: str) -> str:
    """Case-, accent- and punctuation-free form of a city name or id."""
    stripped = "".join(
        ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch)
    )
    return " ".join(re.sub(r"[^a-z0-9]+", " ", stripped.casefold()).split())


def find_city(name: str, field: str = "city") -> City:
    key = normalise_city(name)
    for city in CITIES:
        if key in {normalise_city(city.name), normalise_city(city.city_id)}:
            return city
    known = ", ".join(city.name for city in CITIES)
    raise ToolError(
        f"unknown city {name!r} in {field}; this service covers: {known}", status=404, field=field
    )


def parse_date(value: str, field: str = "date") -> str:
    if not _DATE.match(value.strip()):
        raise ToolError(
            f"{field} must be an ISO date YYYY-MM-DD, got {value!r}", status=422, field=field
        )
    try:
        return Date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise ToolError(
            f"{field} {value!r} is not a calendar date", status=422, field=field
        ) from None


def shift(day: str, days: int) -> str:
    return (Date.fromisoformat(day) + timedelta(days=days)).isoformat()


def forecast_through(state: WeatherState) -> str:
    return shift(state.today, FORECAST_DAYS)


def archive_through(state: WeatherState) -> str:
    return shift(state.today, -1)


def check_forecast_range(state: WeatherState, day: str, field: str = "date") -> None:
    if day < state.today:
        raise ToolError(
            f"{field} {day} is in the past (today is {state.today}); "
            "use get_historical_weather for observations",
            status=422,
            field=field,
        )
    if day > forecast_through(state):
        raise ToolError(
            f"{field} {day} is beyond the {FORECAST_DAYS}-day forecast horizon "
            f"(forecasts run {state.today} .. {forecast_through(state)})",
            status=422,
            field=field,
        )


def check_archive_range(state: WeatherState, day: str, field: str = "date") -> None:
    if day >= state.today:
        raise ToolError(
            f"{field} {day} has no observation yet (today is {state.today}); "
            "use get_forecast or get_current_weather",
            status=422,
            field=field,
        )
    if day < ARCHIVE_START:
        raise ToolError(
            f"{field} {day} is before the archive starts ({ARCHIVE_START})",
            status=422,
            field=field,
        )


def outage(state: WeatherState, city_id: str, day: str) -> Outage | None:
    return next((o for o in state.outages if o.city_id == city_id and o.date == day), None)


def c_to_f(celsius: float) -> float:
    return celsius * 9 / 5 + 32


def to_metric(value: float, unit: Unit, *, difference: bool = False) -> float:
    """A value in any unit the service speaks, in °C / mm / km/h. A temperature difference
    converts by scale only: 9 °F warmer is 5 °C warmer, not -12.8 °C."""
    if unit == "F":
        return value * 5 / 9 if difference else (value - 32) * 5 / 9
    if unit == "in":
        return value * MM_PER_INCH
    if unit == "mph":
        return value * KMH_PER_MPH
    return value


def quantity_matches(
    answer: WeatherAnswer,
    expected_metric: float,
    dimension: Dimension,
    *,
    difference: bool = False,
    require_unit: Unit | None = None,
) -> bool:
    """The answer's value, converted to metric, is within the dimension's tolerance."""
    if answer.value is None or answer.unit is None or DIMENSION_OF[answer.unit] != dimension:
        return False
    if require_unit is not None and answer.unit != require_unit:
        return False
    tolerance = {
        "temperature": TEMPERATURE_TOLERANCE_C,
        "precipitation": PRECIPITATION_TOLERANCE_MM,
        "wind": WIND_TOLERANCE_KMH,
    }[dimension]
    got = to_metric(answer.value, answer.unit, difference=difference)
    return abs(got - expected_metric) <= tolerance + 1e-9


def city_matches(answer: WeatherAnswer, city_id: str) -> bool:
    if answer.city is None:
        return False
    city = CITY_BY_ID[city_id]
    return normalise_city(answer.city) in {normalise_city(city.name), normalise_city(city_id)}


def no_side_effects(s0: WeatherState, sf: WeatherState) -> bool:
    """Information tasks leave the alerts exactly as they were."""
    return sf.alerts == s0.alerts


def escalated(s0: WeatherState, sf: WeatherState) -> bool:
    return len(sf.escalations) > len(s0.escalations)


def last_answer(s0: WeatherState, sf: WeatherState) -> WeatherAnswer | None:
    """The last answer submitted in the episode (answers present at the start do not count)."""
    return sf.answers[-1] if len(sf.answers) > len(s0.answers) else None


def local_hour_now(state: WeatherState, city: City) -> float:
    now = datetime.fromisoformat(state.now)
    return local_hour(city, now.hour + now.minute / 60)


def current_temperature_c(state: WeatherState, city_id: str) -> float:
    """What get_current_weather reports as the temperature, in °C."""
    city = CITY_BY_ID[city_id]
    return temperature_at(city_id, state.today, local_hour_now(state, city))
