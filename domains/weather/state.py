"""What an episode of the weather service can change: answers, alerts, station outages.

The weather itself is module data (`data.py`); state stays small because the kit copies it into
every journal entry. The clock is `now` (UTC) in state: current conditions are read at it, the
forecast covers `today` .. `today + FORECAST_DAYS`, the archive `ARCHIVE_START` .. yesterday.
"""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

FORECAST_DAYS = 7
ARCHIVE_START = "2025-03-01"

Unit = Literal["C", "F", "mm", "in", "km/h", "mph"]
AlertKind = Literal["temp_above", "temp_below", "precip_above", "wind_above"]


class Outage(BaseModel):
    """A city-day the archive has no observation for (station down): data flagged unavailable."""

    city_id: str
    date: str
    reason: str


class Alert(BaseModel):
    """A standing notification rule; thresholds are stored in metric units."""

    alert_id: str
    city_id: str
    kind: AlertKind
    threshold: float
    unit: Literal["C", "mm", "km/h"]
    notify_email: str
    created_at: str
    status: Literal["active", "deleted"] = "active"


class WeatherAnswer(BaseModel):
    """A submitted answer as typed values; verifiers normalise units, case and accents."""

    value: float | None = None
    unit: Unit | None = None
    city: str | None = None
    date: str | None = None
    yes_no: bool | None = None


class WeatherState(DomainState):
    today: str = "2026-03-10"
    now: str = "2026-03-10T12:00:00+00:00"
    account: str = "Northwind Logistics ops desk"
    next_id: int = 1
    outages: list[Outage] = Field(default_factory=list)
    alerts: list[Alert] = Field(default_factory=list)
    answers: list[WeatherAnswer] = Field(default_factory=list)


def seed_outages() -> list[Outage]:
    return [
        Outage(city_id="reykjavik", date=day, reason="BIRK automatic station offline (power)")
        for day in ("2026-03-05", "2026-03-06", "2026-03-07")
    ] + [
        Outage(city_id="cairo", date="2026-03-08", reason="HECA sensor calibration"),
        Outage(city_id="mumbai", date="2025-03-14", reason="VABB data feed lost"),
    ]


def seed_alerts() -> list[Alert]:
    return [
        Alert(
            alert_id="ALR-001",
            city_id="montreal",
            kind="temp_below",
            threshold=0.0,
            unit="C",
            notify_email="frost@northwind.example",
            created_at="2026-01-12T15:04:00+00:00",
        ),
        Alert(
            alert_id="ALR-002",
            city_id="montreal",
            kind="wind_above",
            threshold=50.0,
            unit="km/h",
            notify_email="ops@northwind.example",
            created_at="2026-01-12T15:06:00+00:00",
        ),
        Alert(
            alert_id="ALR-003",
            city_id="london",
            kind="precip_above",
            threshold=20.0,
            unit="mm",
            notify_email="ops@northwind.example",
            created_at="2026-02-02T09:30:00+00:00",
        ),
        Alert(
            alert_id="ALR-004",
            city_id="dubai",
            kind="temp_above",
            threshold=40.0,
            unit="C",
            notify_email="site-dxb@northwind.example",
            created_at="2026-02-20T06:00:00+00:00",
        ),
    ]


def make_default_state() -> WeatherState:
    return WeatherState(outages=seed_outages(), alerts=seed_alerts(), next_id=5)
