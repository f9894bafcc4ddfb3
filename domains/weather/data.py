"""The weather world's tables: ten cities and a daily record for any date, from a seeded formula.

Nothing here is random at run time: every value is a hash of (SEED, city, date, field) fed
through a seasonal climate model, so every episode, process and machine sees the same weather.
The tables live here, not in episode state, because the kit copies the whole state into every
journal entry; state keeps only what an episode can change (answers, alerts, outages).
All values are metric and rounded to one decimal; imperial values are converted from them.
"""

from __future__ import annotations

import hashlib
import math
from datetime import date as Date
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

SEED = 20260310

Condition = Literal[
    "Clear", "Partly cloudy", "Cloudy", "Light rain", "Heavy rain", "Thunderstorms", "Snow"
]


class City(BaseModel):
    city_id: str
    name: str
    country: str
    latitude: float
    longitude: float
    utc_offset: str
    station: str
    annual_mean_c: float
    seasonal_amplitude_c: float
    warmest_day_of_year: int
    diurnal_range_c: float
    wet_day_chance: float
    wet_day_mm: float
    wind_kmh: float
    humidity_pct: float


class DailyRecord(BaseModel):
    """One city-day in metric units: the observation in the past, the forecast ahead."""

    city_id: str
    date: str
    high_c: float
    low_c: float
    mean_c: float
    precipitation_mm: float
    precipitation_chance_pct: int
    wind_kmh: float
    humidity_pct: int
    condition: Condition


CITIES: list[City] = [
    City(
        city_id="dubai",
        name="Dubai",
        country="AE",
        latitude=25.2,
        longitude=55.27,
        utc_offset="+04:00",
        station="OMDB",
        annual_mean_c=28.0,
        seasonal_amplitude_c=7.5,
        warmest_day_of_year=215,
        diurnal_range_c=10.0,
        wet_day_chance=0.05,
        wet_day_mm=6.0,
        wind_kmh=16.0,
        humidity_pct=55.0,
    ),
    City(
        city_id="tokyo",
        name="Tokyo",
        country="JP",
        latitude=35.68,
        longitude=139.69,
        utc_offset="+09:00",
        station="RJTT",
        annual_mean_c=16.0,
        seasonal_amplitude_c=10.5,
        warmest_day_of_year=220,
        diurnal_range_c=8.0,
        wet_day_chance=0.35,
        wet_day_mm=9.0,
        wind_kmh=14.0,
        humidity_pct=62.0,
    ),
    City(
        city_id="london",
        name="London",
        country="GB",
        latitude=51.51,
        longitude=-0.13,
        utc_offset="+00:00",
        station="EGLL",
        annual_mean_c=11.5,
        seasonal_amplitude_c=7.0,
        warmest_day_of_year=205,
        diurnal_range_c=7.0,
        wet_day_chance=0.45,
        wet_day_mm=5.0,
        wind_kmh=18.0,
        humidity_pct=78.0,
    ),
    City(
        city_id="sao-paulo",
        name="São Paulo",
        country="BR",
        latitude=-23.55,
        longitude=-46.63,
        utc_offset="-03:00",
        station="SBSP",
        annual_mean_c=20.5,
        seasonal_amplitude_c=3.5,
        warmest_day_of_year=35,
        diurnal_range_c=9.0,
        wet_day_chance=0.5,
        wet_day_mm=12.0,
        wind_kmh=11.0,
        humidity_pct=76.0,
    ),
    City(
        city_id="new-york",
        name="New York",
        country="US",
        latitude=40.71,
        longitude=-74.01,
        utc_offset="-04:00",
        station="KNYC",
        annual_mean_c=13.0,
        seasonal_amplitude_c=12.0,
        warmest_day_of_year=200,
        diurnal_range_c=8.0,
        wet_day_chance=0.33,
        wet_day_mm=8.0,
        wind_kmh=19.0,
        humidity_pct=63.0,
    ),
    City(
        city_id="sydney",
        name="Sydney",
        country="AU",
        latitude=-33.87,
        longitude=151.21,
        utc_offset="+11:00",
        station="YSSY",
        annual_mean_c=18.5,
        seasonal_amplitude_c=5.0,
        warmest_day_of_year=30,
        diurnal_range_c=7.5,
        wet_day_chance=0.4,
        wet_day_mm=10.0,
        wind_kmh=20.0,
        humidity_pct=68.0,
    ),
    City(
        city_id="reykjavik",
        name="Reykjavík",
        country="IS",
        latitude=64.15,
        longitude=-21.94,
        utc_offset="+00:00",
        station="BIRK",
        annual_mean_c=5.0,
        seasonal_amplitude_c=6.5,
        warmest_day_of_year=205,
        diurnal_range_c=5.0,
        wet_day_chance=0.55,
        wet_day_mm=4.0,
        wind_kmh=26.0,
        humidity_pct=77.0,
    ),
    City(
        city_id="mumbai",
        name="Mumbai",
        country="IN",
        latitude=19.08,
        longitude=72.88,
        utc_offset="+05:30",
        station="VABB",
        annual_mean_c=27.5,
        seasonal_amplitude_c=2.5,
        warmest_day_of_year=130,
        diurnal_range_c=7.0,
        wet_day_chance=0.05,
        wet_day_mm=5.0,
        wind_kmh=12.0,
        humidity_pct=70.0,
    ),
    City(
        city_id="cairo",
        name="Cairo",
        country="EG",
        latitude=30.04,
        longitude=31.24,
        utc_offset="+02:00",
        station="HECA",
        annual_mean_c=22.5,
        seasonal_amplitude_c=7.0,
        warmest_day_of_year=210,
        diurnal_range_c=12.0,
        wet_day_chance=0.04,
        wet_day_mm=3.0,
        wind_kmh=15.0,
        humidity_pct=48.0,
    ),
    City(
        city_id="montreal",
        name="Montréal",
        country="CA",
        latitude=45.5,
        longitude=-73.57,
        utc_offset="-04:00",
        station="CYUL",
        annual_mean_c=7.0,
        seasonal_amplitude_c=15.0,
        warmest_day_of_year=200,
        diurnal_range_c=9.0,
        wet_day_chance=0.4,
        wet_day_mm=5.0,
        wind_kmh=17.0,
        humidity_pct=70.0,
    ),
]
CITY_BY_ID: dict[str, City] = {city.city_id: city for city in CITIES}


def _unit(city_id: str, day: str, field: str) -> float:
    """A uniform number in [0, 1) fixed by the seed, the city, the date and the field."""
    digest = hashlib.sha256(f"{SEED}/{city_id}/{day}/{field}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _r1(value: float) -> float:
    return round(value + 0.0, 1)


@lru_cache(maxsize=8192)
def daily(city_id: str, day: str) -> DailyRecord:
    """The weather of one city on one ISO date (the same whether observed or forecast)."""
    city = CITY_BY_ID[city_id]
    doy = Date.fromisoformat(day).timetuple().tm_yday
    season = city.annual_mean_c + city.seasonal_amplitude_c * math.cos(
        2 * math.pi * (doy - city.warmest_day_of_year) / 365.25
    )
    mean = season + (_unit(city_id, day, "anomaly") - 0.5) * 6.0
    high = mean + city.diurnal_range_c / 2 + (_unit(city_id, day, "high") - 0.5) * 2.0
    low = mean - city.diurnal_range_c / 2 + (_unit(city_id, day, "low") - 0.5) * 2.0
    wet = _unit(city_id, day, "wet") < city.wet_day_chance
    amount = -math.log(1.0 - _unit(city_id, day, "amount")) * city.wet_day_mm if wet else 0.0
    sky = _unit(city_id, day, "sky")
    condition: Condition
    if wet and high <= 2.0:
        condition = "Snow"
    elif wet and amount >= 15.0:
        condition = "Heavy rain"
    elif wet and sky > 0.8:
        condition = "Thunderstorms"
    elif wet:
        condition = "Light rain"
    else:
        condition = "Clear" if sky < 0.45 else "Partly cloudy" if sky < 0.75 else "Cloudy"
    chance = 60 + int(_unit(city_id, day, "chance") * 36) if wet else int(sky * 30)
    humidity = city.humidity_pct + (_unit(city_id, day, "humidity") - 0.5) * 20 + (12 if wet else 0)
    return DailyRecord(
        city_id=city_id,
        date=day,
        high_c=_r1(high),
        low_c=_r1(low),
        mean_c=_r1((high + low) / 2),
        precipitation_mm=_r1(max(amount, 0.1) if wet else 0.0),
        precipitation_chance_pct=chance,
        wind_kmh=_r1(city.wind_kmh * (0.5 + _unit(city_id, day, "wind"))),
        humidity_pct=int(min(100.0, max(5.0, humidity))),
        condition=condition,
    )


def local_hour(city: City, utc_hour: float) -> float:
    """The local clock hour (0-24) at a city when it is `utc_hour` in UTC."""
    sign = -1 if city.utc_offset.startswith("-") else 1
    hours, minutes = city.utc_offset[1:].split(":")
    return (utc_hour + sign * (int(hours) + int(minutes) / 60)) % 24


def temperature_at(city_id: str, day: str, hour: float) -> float:
    """Temperature at a local hour: the low at 05:00, the high at 15:00, cosine in between."""
    record = daily(city_id, day)
    phase = math.cos(2 * math.pi * (hour - 15.0) / 24.0)
    return _r1(record.low_c + (record.high_c - record.low_c) * (phase + 1) / 2)
