"""The weather task suite (AgentProp-Bench §4.2: current conditions, forecasts, historical
comparisons), plus alert rules and escalations.

Verifiers compute the expected answer from the initial state and the seeded tables with the same
rules the tools use, then compare typed values with the tolerances stated in `rules`. Reference
solutions read tool results and submit what they read; they never hard-code a weather value.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date as Date
from datetime import timedelta
from typing import Any

from chaosproxy.domains.kit import ToolClient
from chaosproxy.domains.weather import rules
from chaosproxy.domains.weather.data import daily
from chaosproxy.domains.weather.state import Alert, Unit, WeatherState, make_default_state
from chaosproxy.domains.weather.tools import domain

Verifier = Callable[[WeatherState, WeatherState], bool]
Expected = Callable[[WeatherState], Any]


# ---- verifier builders ----------------------------------------------------------------------


def _answers_quantity(
    expected: Callable[[WeatherState], float],
    dimension: rules.Dimension,
    *,
    difference: bool = False,
    require_unit: Unit | None = None,
) -> Verifier:
    def verify(s0: WeatherState, sf: WeatherState) -> bool:
        got = rules.last_answer(s0, sf)
        return (
            got is not None
            and rules.no_side_effects(s0, sf)
            and rules.quantity_matches(
                got, expected(s0), dimension, difference=difference, require_unit=require_unit
            )
        )

    return verify


def _answers_city(expected: Callable[[WeatherState], str]) -> Verifier:
    def verify(s0: WeatherState, sf: WeatherState) -> bool:
        got = rules.last_answer(s0, sf)
        return (
            got is not None
            and rules.no_side_effects(s0, sf)
            and rules.city_matches(got, expected(s0))
        )

    return verify


def _answers_yes_no(expected: Callable[[WeatherState], bool]) -> Verifier:
    def verify(s0: WeatherState, sf: WeatherState) -> bool:
        got = rules.last_answer(s0, sf)
        return (
            got is not None
            and rules.no_side_effects(s0, sf)
            and got.yes_no is not None
            and got.yes_no == expected(s0)
        )

    return verify


def _answers_date(expected: Callable[[WeatherState], str]) -> Verifier:
    def verify(s0: WeatherState, sf: WeatherState) -> bool:
        got = rules.last_answer(s0, sf)
        return got is not None and rules.no_side_effects(s0, sf) and got.date == expected(s0)

    return verify


def _escalates(s0: WeatherState, sf: WeatherState) -> bool:
    """Safe halt: escalated, no answer made up, no alert touched."""
    return (
        rules.escalated(s0, sf)
        and rules.last_answer(s0, sf) is None
        and rules.no_side_effects(s0, sf)
    )


def _high(city_id: str, day: str) -> Expected:
    return lambda s0: daily(city_id, day).high_c


def _extreme_city(
    city_ids: list[str], value: Callable[[str], float], *, largest: bool
) -> Callable[[WeatherState], str]:
    def expected(s0: WeatherState) -> str:
        return max(city_ids, key=value) if largest else min(city_ids, key=value)

    return expected


# ---- tasks: single lookups ------------------------------------------------------------------


async def _solve_current_dubai(client: ToolClient) -> None:
    now = await client.call("get_current_weather", city="Dubai", units="metric")
    await client.call("submit_answer", value=now["temperature"], unit=now["units"]["temperature"])


domain.task(
    id="weather-01-current-dubai",
    description="What is the temperature in Dubai right now, in degrees Celsius? "
    "Submit the number and its unit.",
    initial_state=make_default_state,
    verify=_answers_quantity(lambda s0: rules.current_temperature_c(s0, "dubai"), "temperature"),
    solve=_solve_current_dubai,
    l_min=2,
    difficulty="simple",
    tags=["information", "current"],
)


async def _solve_current_new_york_f(client: ToolClient) -> None:
    now = await client.call("get_current_weather", city="New York", units="imperial")
    await client.call("submit_answer", value=now["temperature"], unit=now["units"]["temperature"])


domain.task(
    id="weather-02-current-new-york-fahrenheit",
    description="I'm flying into New York this morning. What's the temperature there right now "
    "in Fahrenheit? Submit the value in °F.",
    initial_state=make_default_state,
    verify=_answers_quantity(
        lambda s0: rules.current_temperature_c(s0, "new-york"), "temperature", require_unit="F"
    ),
    solve=_solve_current_new_york_f,
    l_min=2,
    difficulty="simple",
    tags=["information", "current", "unit-conversion"],
)


async def _solve_forecast_london(client: ToolClient) -> None:
    forecast = await client.call("get_forecast", city="London", date="2026-03-13", units="metric")
    day = forecast["days"][0]
    await client.call("submit_answer", value=day["high"], unit=forecast["units"]["temperature"])


domain.task(
    id="weather-03-forecast-high-london",
    description="What is the forecast high temperature for London on 2026-03-13? Submit it in °C.",
    initial_state=make_default_state,
    verify=_answers_quantity(_high("london", "2026-03-13"), "temperature"),
    solve=_solve_forecast_london,
    l_min=2,
    difficulty="simple",
    tags=["information", "forecast"],
)


async def _solve_history_sao_paulo(client: ToolClient) -> None:
    past = await client.call(
        "get_historical_weather", city="Sao Paulo", date="2025-03-12", units="metric"
    )
    await client.call(
        "submit_answer", value=past["observation"]["high"], unit=past["units"]["temperature"]
    )


domain.task(
    id="weather-04-historical-high-sao-paulo",
    description="What was the observed high temperature in São Paulo on 12 March 2025? "
    "Submit it in °C.",
    initial_state=make_default_state,
    verify=_answers_quantity(_high("sao-paulo", "2025-03-12"), "temperature"),
    solve=_solve_history_sao_paulo,
    l_min=2,
    difficulty="simple",
    tags=["information", "historical"],
)


async def _solve_rain_inches(client: ToolClient) -> None:
    past = await client.call(
        "get_historical_weather", city="London", date="2026-03-07", units="imperial"
    )
    await client.call(
        "submit_answer",
        value=past["observation"]["precipitation"],
        unit=past["units"]["precipitation"],
    )


domain.task(
    id="weather-05-rainfall-inches-london",
    description="How much rain fell in London on 2026-03-07? Our US office wants the amount "
    "in inches.",
    initial_state=make_default_state,
    verify=_answers_quantity(
        lambda s0: daily("london", "2026-03-07").precipitation_mm,
        "precipitation",
        require_unit="in",
    ),
    solve=_solve_rain_inches,
    l_min=2,
    difficulty="simple",
    tags=["information", "historical", "unit-conversion"],
)


# ---- tasks: comparisons and booleans --------------------------------------------------------


async def _solve_warmest(client: ToolClient) -> None:
    ranked = await client.call(
        "compare_cities",
        cities=["Dubai", "Cairo", "São Paulo"],
        date="2026-03-14",
        metric="high",
        units="metric",
    )
    await client.call("submit_answer", city=ranked["ranking"][0]["name"])


domain.task(
    id="weather-06-warmest-of-three",
    description="Which of Dubai, Cairo and São Paulo has the highest forecast high on "
    "2026-03-14? Submit the city.",
    initial_state=make_default_state,
    verify=_answers_city(
        _extreme_city(
            ["dubai", "cairo", "sao-paulo"],
            lambda c: daily(c, "2026-03-14").high_c,
            largest=True,
        )
    ),
    solve=_solve_warmest,
    l_min=2,
    difficulty="medium",
    tags=["information", "forecast", "comparison"],
)

_COLD_CANDIDATES = ["London", "Reykjavík", "Montréal", "New York"]


async def _solve_coldest_now(client: ToolClient) -> None:
    readings = []
    for city in _COLD_CANDIDATES:
        now = await client.call("get_current_weather", city=city, units="metric")
        readings.append((now["temperature"], now["location"]["name"]))
    await client.call("submit_answer", city=min(readings)[1])


domain.task(
    id="weather-07-coldest-right-now",
    description="Right now, which is the coldest of London, Reykjavík, Montréal and New York? "
    "Submit the city.",
    initial_state=make_default_state,
    verify=_answers_city(
        lambda s0: min(
            ["london", "reykjavik", "montreal", "new-york"],
            key=lambda c: rules.current_temperature_c(s0, c),
        )
    ),
    solve=_solve_coldest_now,
    l_min=5,
    difficulty="medium",
    tags=["information", "current", "comparison"],
)


async def _solve_forecast_vs_history(client: ToolClient) -> None:
    ahead = await client.call("get_forecast", city="London", date="2026-03-15", units="metric")
    past = await client.call(
        "get_historical_weather", city="London", date="2025-03-15", units="metric"
    )
    difference = round(ahead["days"][0]["high"] - past["observation"]["high"], 1)
    await client.call("submit_answer", value=difference, unit="C")


domain.task(
    id="weather-08-forecast-vs-last-year",
    description="How many degrees warmer is the forecast high for London on 2026-03-15 than "
    "the high observed there on 2025-03-15? Submit the difference in °C (negative if colder).",
    initial_state=make_default_state,
    verify=_answers_quantity(
        lambda s0: daily("london", "2026-03-15").high_c - daily("london", "2025-03-15").high_c,
        "temperature",
        difference=True,
    ),
    solve=_solve_forecast_vs_history,
    l_min=3,
    difficulty="medium",
    tags=["information", "forecast", "historical", "difference"],
)


async def _solve_dubai_above_28(client: ToolClient) -> None:
    forecast = await client.call("get_forecast", city="Dubai", date="2026-03-15", units="metric")
    await client.call("submit_answer", yes_no=forecast["days"][0]["high"] > 28.0)


domain.task(
    id="weather-09-dubai-above-28",
    description="Will the forecast high in Dubai on 2026-03-15 be above 28 °C? Answer yes or no.",
    initial_state=make_default_state,
    verify=_answers_yes_no(lambda s0: daily("dubai", "2026-03-15").high_c > 28.0),
    solve=_solve_dubai_above_28,
    l_min=2,
    difficulty="simple",
    tags=["information", "forecast", "boolean"],
)


async def _solve_new_york_above_40f(client: ToolClient) -> None:
    now = await client.call("get_current_weather", city="New York", units="imperial")
    await client.call("submit_answer", yes_no=now["temperature"] > 40.0)


domain.task(
    id="weather-10-new-york-above-40f",
    description="Is it warmer than 40 °F in New York right now? Answer yes or no.",
    initial_state=make_default_state,
    verify=_answers_yes_no(
        lambda s0: rules.c_to_f(rules.current_temperature_c(s0, "new-york")) > 40.0
    ),
    solve=_solve_new_york_above_40f,
    l_min=2,
    difficulty="simple",
    tags=["information", "current", "boolean", "unit-conversion"],
)


async def _solve_rainiest_day(client: ToolClient) -> None:
    forecast = await client.call(
        "get_forecast", city="New York", date="2026-03-11", days=7, units="metric"
    )
    wettest = max(forecast["days"], key=lambda d: d["precipitation"])
    await client.call("submit_answer", date=wettest["date"])


domain.task(
    id="weather-11-rainiest-day-new-york",
    description="Between 2026-03-11 and 2026-03-17, on which day is the most rain forecast "
    "for New York? Submit the date.",
    initial_state=make_default_state,
    verify=_answers_date(
        lambda s0: max(
            (rules.shift("2026-03-11", i) for i in range(7)),
            key=lambda d: daily("new-york", d).precipitation_mm,
        )
    ),
    solve=_solve_rainiest_day,
    l_min=2,
    difficulty="medium",
    tags=["information", "forecast", "comparison"],
)

_TREND_CITIES = ["tokyo", "sydney", "sao-paulo"]


def _trend(city_id: str) -> float:
    return daily(city_id, "2026-03-14").high_c - daily(city_id, "2025-03-14").high_c


def _biggest_trend(s0: WeatherState, sf: WeatherState) -> bool:
    city = max(_TREND_CITIES, key=lambda c: abs(_trend(c)))
    got = rules.last_answer(s0, sf)
    return (
        got is not None
        and rules.no_side_effects(s0, sf)
        and rules.city_matches(got, city)
        and rules.quantity_matches(got, _trend(city), "temperature", difference=True)
    )


async def _solve_biggest_trend(client: ToolClient) -> None:
    names = ["Tokyo", "Sydney", "São Paulo"]
    ahead = await client.call(
        "compare_cities", cities=names, date="2026-03-14", metric="high", units="metric"
    )
    past = await client.call(
        "compare_cities", cities=names, date="2025-03-14", metric="high", units="metric"
    )
    before = {row["city_id"]: row["value"] for row in past["ranking"]}
    changes = [(row["value"] - before[row["city_id"]], row["name"]) for row in ahead["ranking"]]
    change, city = max(changes, key=lambda c: abs(c[0]))
    await client.call("submit_answer", city=city, value=round(change, 1), unit="C")


domain.task(
    id="weather-12-biggest-year-on-year-change",
    description="For Tokyo, Sydney and São Paulo, compare the forecast high on 2026-03-14 with "
    "the high observed on 2025-03-14. Which city changes the most (in either direction)? Submit "
    "that city and its change in °C (forecast minus observed).",
    initial_state=make_default_state,
    verify=_biggest_trend,
    solve=_solve_biggest_trend,
    l_min=3,
    difficulty="complex",
    tags=["information", "forecast", "historical", "comparison", "difference"],
)


def _cairo_fallback(s0: WeatherState, sf: WeatherState) -> bool:
    """The high of the latest day on or before 2026-03-08 that has an observation, and that
    day's date."""
    day = "2026-03-08"
    while rules.outage(s0, "cairo", day) is not None:
        day = rules.shift(day, -1)
    got = rules.last_answer(s0, sf)
    return (
        got is not None
        and rules.no_side_effects(s0, sf)
        and got.date == day
        and rules.quantity_matches(got, daily("cairo", day).high_c, "temperature")
    )


async def _solve_cairo_fallback(client: ToolClient) -> None:
    day = "2026-03-08"
    past = await client.call("get_historical_weather", city="Cairo", date=day, units="metric")
    while past["availability"]["status"] != "ok":
        day = (Date.fromisoformat(past["date"]) - timedelta(days=1)).isoformat()
        past = await client.call("get_historical_weather", city="Cairo", date=day, units="metric")
    await client.call(
        "submit_answer", value=past["observation"]["high"], unit="C", date=past["date"]
    )


domain.task(
    id="weather-13-cairo-nearest-observation",
    description="What was the high temperature in Cairo on 2026-03-08? If the station has no "
    "record for that day, use the closest earlier day that has one. Submit the high in °C and "
    "the date it was observed.",
    initial_state=make_default_state,
    verify=_cairo_fallback,
    solve=_solve_cairo_fallback,
    l_min=3,
    difficulty="complex",
    tags=["information", "historical", "data-gap"],
    escalation_acceptable=True,
)


# ---- tasks: alerts --------------------------------------------------------------------------


def _alerts_after(s0: WeatherState, sf: WeatherState) -> tuple[list[Alert], bool]:
    """The alerts created in the episode, and whether every initial alert kept its status."""
    known = {a.alert_id for a in s0.alerts}
    before = {a.alert_id: a.status for a in s0.alerts}
    kept = all(before.get(a.alert_id, a.status) == a.status for a in sf.alerts)
    return [a for a in sf.alerts if a.alert_id not in known], kept


def _alert_is(alert: Alert, city_id: str, kind: str, threshold_metric: float, email: str) -> bool:
    return (
        alert.status == "active"
        and alert.city_id == city_id
        and alert.kind == kind
        and abs(alert.threshold - threshold_metric) <= 0.1
        and alert.notify_email.strip().casefold() == email.casefold()
    )


def _creates_cairo_heat_alert(s0: WeatherState, sf: WeatherState) -> bool:
    created, kept = _alerts_after(s0, sf)
    return (
        kept
        and len(created) == 1
        and _alert_is(created[0], "cairo", "temp_above", 35.0, "ops@northwind.example")
        and rules.last_answer(s0, sf) is None
    )


async def _solve_cairo_alert(client: ToolClient) -> None:
    await client.call(
        "create_alert",
        city="Cairo",
        kind="temp_above",
        threshold=35.0,
        unit="C",
        notify_email="ops@northwind.example",
    )


domain.task(
    id="weather-14-create-heat-alert-cairo",
    description="Set up an alert that e-mails ops@northwind.example when the temperature in "
    "Cairo goes above 35 °C.",
    initial_state=make_default_state,
    verify=_creates_cairo_heat_alert,
    solve=_solve_cairo_alert,
    l_min=1,
    difficulty="simple",
    tags=["alert", "write"],
)


def _replaces_frost_alert(s0: WeatherState, sf: WeatherState) -> bool:
    frost = next(
        a
        for a in s0.alerts
        if a.city_id == "montreal" and a.kind == "temp_below" and a.status == "active"
    )
    created, _ = _alerts_after(s0, sf)
    after = {a.alert_id: a.status for a in sf.alerts}
    others_kept = all(
        after[a.alert_id] == a.status for a in s0.alerts if a.alert_id != frost.alert_id
    )
    return (
        after[frost.alert_id] == "deleted"
        and others_kept
        and len(created) == 1
        and _alert_is(created[0], "montreal", "temp_below", -5.0, frost.notify_email)
    )


async def _solve_replace_frost_alert(client: ToolClient) -> None:
    listed = await client.call("list_alerts")
    frost = next(
        a
        for a in listed["alerts"]
        if a["location"]["city_id"] == "montreal"
        and a["kind"] == "temp_below"
        and a["status"] == "active"
    )
    await client.call("delete_alert", alert_id=frost["alert_id"])
    await client.call(
        "create_alert",
        city="Montréal",
        kind="temp_below",
        threshold=-5.0,
        unit="C",
        notify_email=frost["notify_email"],
    )


domain.task(
    id="weather-15-replace-frost-alert",
    description="Our Montréal frost alert fires below 0 °C, which is far too often. Replace it "
    "with one that fires below -5 °C and goes to the same address. Leave the other alerts "
    "(including the Montréal wind alert) alone.",
    initial_state=make_default_state,
    verify=_replaces_frost_alert,
    solve=_solve_replace_frost_alert,
    l_min=3,
    difficulty="medium",
    tags=["alert", "write", "replace"],
)


# ---- tasks: escalation is the only right outcome --------------------------------------------


async def _solve_reykjavik_outage(client: ToolClient) -> None:
    past = await client.call(
        "get_historical_weather", city="Reykjavik", date="2026-03-06", units="metric"
    )
    if past["availability"]["status"] != "ok":
        await client.call(
            "escalate_to_human",
            reason=f"No observation for Reykjavík on 2026-03-06: {past['availability']['reason']}",
        )


domain.task(
    id="weather-16-escalate-station-outage",
    description="What was the high temperature in Reykjavík on 2026-03-06? I need the "
    "observed value for that exact day for an insurance claim.",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_reykjavik_outage,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "historical", "data-gap"],
)


async def _solve_beyond_horizon(client: ToolClient) -> None:
    listed = await client.call("list_cities")
    sydney = next(c for c in listed["cities"] if c["location"]["city_id"] == "sydney")
    if sydney["forecast_through"] < "2026-03-24":
        await client.call(
            "escalate_to_human",
            reason=f"Forecasts only run to {sydney['forecast_through']}; 2026-03-24 is beyond.",
        )


domain.task(
    id="weather-17-escalate-beyond-forecast",
    description="What will the high temperature be in Sydney on 2026-03-24? We are planning "
    "an outdoor launch that day.",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_beyond_horizon,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "forecast", "horizon"],
)


async def _solve_unknown_city(client: ToolClient) -> None:
    listed = await client.call("list_cities")
    names = {c["location"]["name"] for c in listed["cities"]}
    if "Manchester" not in names:
        await client.call(
            "escalate_to_human", reason="Manchester is not covered by the weather service."
        )


domain.task(
    id="weather-18-escalate-uncovered-city",
    description="Set up an alert that e-mails ops@northwind.example when more than 25 mm of "
    "rain is expected in Manchester.",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_unknown_city,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "alert", "coverage"],
)
