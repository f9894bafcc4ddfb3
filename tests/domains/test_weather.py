"""Weather domain over a real server: realistic records in both unit systems, data gaps, alerts,
4xx naming the field, the journal, and verifiers that normalise units, case and accents."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import McpToolClient
from chaosproxy.domains.weather import domain, rules
from chaosproxy.domains.weather.data import CITIES, daily
from chaosproxy.domains.weather.state import Unit, WeatherAnswer, WeatherState
from chaosproxy.domains.weather.tools import create_alert, delete_alert, submit_answer
from domain_driver import RestEpisode, fresh_episode

pytestmark = pytest.mark.timeout(60)


Episode = RestEpisode[WeatherState]


@pytest.fixture
async def episode(domain_url: Callable[[str], str]) -> AsyncIterator[Episode]:
    async with fresh_episode(domain_url("weather"), WeatherState) as created:
        yield created


async def test_cities_and_coverage(episode: Episode) -> None:
    listed = await episode.ok("list_cities")
    assert listed["total"] == len(listed["cities"]) >= 8
    names = {c["location"]["name"] for c in listed["cities"]}
    assert {"Dubai", "Tokyo", "London", "São Paulo", "Reykjavík"} <= names
    for city in listed["cities"]:
        assert city["forecast_from"] == "2026-03-10" and city["forecast_through"] == "2026-03-17"
        assert city["archive_through"] == "2026-03-09"
        assert -90 <= city["location"]["latitude"] <= 90 and city["location"]["station"]


@pytest.mark.parametrize("city", ["Dubai", "sao paulo", "REYKJAVIK", "montréal"])
async def test_current_weather_agrees_across_unit_systems(episode: Episode, city: str) -> None:
    metric = await episode.ok("get_current_weather", city=city)
    imperial = await episode.ok("get_current_weather", city=city, units="imperial")
    assert metric["units"] == {
        "system": "metric",
        "temperature": "C",
        "precipitation": "mm",
        "wind_speed": "km/h",
    }
    assert imperial["units"]["temperature"] == "F" and imperial["units"]["wind_speed"] == "mph"
    assert abs(imperial["temperature"] - rules.c_to_f(metric["temperature"])) <= 0.06
    assert abs(imperial["wind_speed"] * rules.KMH_PER_MPH - metric["wind_speed"]) <= 0.1
    assert metric["today_low"] <= metric["temperature"] <= metric["today_high"]
    offset = metric["location"]["utc_offset"]
    assert metric["observed_at"].startswith("2026-03-10T") and metric["observed_at"].endswith(
        offset
    )


async def test_forecast_window_in_inches(episode: Episode) -> None:
    metric = await episode.ok("get_forecast", city="new-york", date="2026-03-11", days=7)
    imperial = await episode.ok(
        "get_forecast", city="New York", date="2026-03-11", days=7, units="imperial"
    )
    dates = [d["date"] for d in metric["days"]]
    assert dates == [f"2026-03-{day}" for day in range(11, 18)] and metric["total"] == 7
    for m, i in zip(metric["days"], imperial["days"], strict=True):
        assert m["low"] <= m["high"] and 0 <= m["precipitation_chance_pct"] <= 100
        assert abs(i["precipitation"] * rules.MM_PER_INCH - m["precipitation"]) <= 0.15
        assert (m["precipitation"] > 0) == (
            m["condition"] in {"Light rain", "Heavy rain", "Thunderstorms", "Snow"}
        )


async def test_history_reports_station_outages(episode: Episode) -> None:
    gap = await episode.ok("get_historical_weather", city="Reykjavík", date="2026-03-06")
    assert gap["availability"]["status"] == "unavailable" and gap["observation"] is None
    assert "offline" in gap["availability"]["reason"]
    seen = await episode.ok("get_historical_weather", city="Reykjavík", date="2026-03-04")
    assert seen["availability"] == {"status": "ok", "reason": None}
    assert seen["observation"]["high"] == daily("reykjavik", "2026-03-04").high_c
    assert seen["source"].startswith("station BIRK")


async def test_compare_ranks_largest_first_and_lists_gaps_last(episode: Episode) -> None:
    ranked = await episode.ok(
        "compare_cities",
        cities=["London", "Reykjavík", "Cairo", "Montréal"],
        date="2026-03-06",
        metric="high",
    )
    assert ranked["source"] == "observations"
    values = [r["value"] for r in ranked["ranking"] if r["value"] is not None]
    assert values == sorted(values, reverse=True) and len(values) == 3
    last = ranked["ranking"][-1]
    assert last["city_id"] == "reykjavik" and last["rank"] is None
    ahead = await episode.ok(
        "compare_cities", cities=["Dubai", "Mumbai"], date="2026-03-12", metric="precipitation"
    )
    assert ahead["source"] == "forecast" and ahead["total"] == 2


async def test_alerts_store_metric_thresholds_and_are_journaled(episode: Episode) -> None:
    created = await episode.ok(
        "create_alert",
        city="tokyo",
        kind="temp_above",
        threshold=95.0,
        unit="F",
        notify_email=" Ops@Northwind.example ",
    )
    assert created["threshold"] == 35.0 and created["unit"] == "C"
    assert created["notify_email"] == "ops@northwind.example" and created["status"] == "active"
    deleted = await episode.ok("delete_alert", alert_id="alr-002")
    assert deleted["status"] == "deleted"
    again = await episode.raw("delete_alert", {"alert_id": "ALR-002"})
    assert again.status_code == 409 and again.json()["error"]["field"] == "alert_id"
    listed = await episode.ok("list_alerts")
    assert listed["total"] == 5
    journal = await episode.oracle("journal")
    assert [(e["tool"], e["step"]) for e in journal["entries"]] == [
        ("create_alert", 1),
        ("delete_alert", 2),
    ]


async def test_submit_answer_stores_typed_canonical_values(episode: Episode) -> None:
    receipt = await episode.ok("submit_answer", city="  SAO PAULO ", date="2026-03-14")
    assert receipt["answer"]["city"] == "São Paulo" and receipt["status"] == "recorded"
    state = await episode.state()
    assert state.answers == [WeatherAnswer(city="São Paulo", date="2026-03-14")]


BAD_INPUTS: list[tuple[str, dict[str, Any], int, str]] = [
    ("get_current_weather", {}, 422, "city"),
    ("get_current_weather", {"city": "Manchester"}, 404, "city"),
    ("get_current_weather", {"city": "Tokyo", "units": "kelvin"}, 422, "units"),
    ("get_forecast", {"city": "Tokyo", "date": "14/03/2026"}, 422, "date"),
    ("get_forecast", {"city": "Tokyo", "date": "2026-03-24"}, 422, "date"),
    ("get_forecast", {"city": "Tokyo", "date": "2026-03-09"}, 422, "date"),
    ("get_forecast", {"city": "Tokyo", "date": "2026-03-15", "days": 5}, 422, "days"),
    ("get_forecast", {"city": "Tokyo", "date": "2026-03-11", "days": "many"}, 422, "days"),
    ("get_historical_weather", {"city": "Tokyo", "date": "2026-03-10"}, 422, "date"),
    ("get_historical_weather", {"city": "Tokyo", "date": "2024-12-31"}, 422, "date"),
    (
        "compare_cities",
        {"cities": ["Tokyo"], "date": "2026-03-12", "metric": "high"},
        422,
        "cities",
    ),
    (
        "compare_cities",
        {"cities": ["Tokyo", "tokyo"], "date": "2026-03-12", "metric": "high"},
        422,
        "cities",
    ),
    (
        "compare_cities",
        {"cities": ["Tokyo", "Dubai"], "date": "2026-03-12", "metric": "uv"},
        422,
        "metric",
    ),
    (
        "create_alert",
        {
            "city": "Cairo",
            "kind": "temp_above",
            "threshold": 35,
            "unit": "mm",
            "notify_email": "ops@northwind.example",
        },
        422,
        "unit",
    ),
    (
        "create_alert",
        {
            "city": "Cairo",
            "kind": "temp_above",
            "threshold": 35,
            "unit": "C",
            "notify_email": "ops at northwind",
        },
        422,
        "notify_email",
    ),
    ("delete_alert", {"alert_id": "ALR-999"}, 404, "alert_id"),
    ("submit_answer", {}, 422, "value"),
    ("submit_answer", {"value": 21.5}, 422, "unit"),
    ("submit_answer", {"value": 21.5, "unit": "°C"}, 422, "unit"),
    ("submit_answer", {"city": "Atlantis"}, 404, "city"),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    BAD_INPUTS,
    ids=[f"{b[0]}-{b[3]}-{i}" for i, b in enumerate(BAD_INPUTS)],
)
async def test_bad_input_is_a_4xx_naming_the_field(
    episode: Episode, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await episode.raw(tool, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error.get("field") == field or field in (error.get("fields") or []), error
    assert error["message"]
    assert (await episode.oracle("journal"))["entries"] == []


def _answered(state: WeatherState, **answer: Any) -> WeatherState:
    after = state.model_copy(deep=True)
    submit_answer(after, **answer)
    return after


def _frost(state: WeatherState, *, delete: bool) -> WeatherState:
    after = state.model_copy(deep=True)
    if delete:
        delete_alert(after, "ALR-001")
    create_alert(after, "Montreal", "temp_below", 23.0, "F", "frost@northwind.example")
    return after


def _alerted(state: WeatherState, threshold: float, unit: Unit, times: int = 1) -> WeatherState:
    after = state.model_copy(deep=True)
    for _ in range(times):
        create_alert(after, "Cairo", "temp_above", threshold, unit, "ops@northwind.example")
    return after


_LONDON_HIGH = daily("london", "2026-03-13").high_c
_LONDON_DELTA = daily("london", "2026-03-15").high_c - daily("london", "2025-03-15").high_c
_RAIN_MM = daily("london", "2026-03-07").precipitation_mm

OUTCOMES: list[tuple[str, Callable[[WeatherState], WeatherState], bool]] = [
    ("weather-03-forecast-high-london", lambda s: _answered(s, value=_LONDON_HIGH, unit="C"), True),
    (
        "weather-03-forecast-high-london",
        lambda s: _answered(s, value=round(rules.c_to_f(_LONDON_HIGH), 1), unit="F"),
        True,
    ),
    (
        "weather-03-forecast-high-london",
        lambda s: _answered(s, value=_LONDON_HIGH + 0.8, unit="C"),
        False,
    ),
    (
        "weather-03-forecast-high-london",
        lambda s: _answered(s, value=rules.c_to_f(_LONDON_HIGH), unit="mm"),
        False,
    ),
    (
        "weather-08-forecast-vs-last-year",
        lambda s: _answered(s, value=round(_LONDON_DELTA * 9 / 5, 1), unit="F"),
        True,
    ),
    (
        "weather-08-forecast-vs-last-year",
        lambda s: _answered(s, value=round(rules.c_to_f(_LONDON_DELTA), 1), unit="F"),
        False,
    ),
    (
        "weather-08-forecast-vs-last-year",
        lambda s: _answered(s, value=-_LONDON_DELTA, unit="C"),
        False,
    ),
    ("weather-05-rainfall-inches-london", lambda s: _answered(s, value=_RAIN_MM, unit="mm"), False),
    (
        "weather-05-rainfall-inches-london",
        lambda s: _answered(s, value=round(_RAIN_MM / 25.4, 2), unit="in"),
        True,
    ),
    ("weather-06-warmest-of-three", lambda s: _answered(s, city="sao-paulo"), True),
    ("weather-06-warmest-of-three", lambda s: _answered(s, city="SAO  PAULO"), True),
    ("weather-06-warmest-of-three", lambda s: _answered(s, city="Dubai"), False),
    ("weather-07-coldest-right-now", lambda s: _answered(s, city="montreal"), True),
    ("weather-07-coldest-right-now", lambda s: _answered(s, city="Reykjavík"), False),
    ("weather-09-dubai-above-28", lambda s: _answered(s, yes_no=True), True),
    ("weather-09-dubai-above-28", lambda s: _answered(s, yes_no=False), False),
    ("weather-14-create-heat-alert-cairo", lambda s: _alerted(s, 95.0, "F"), True),
    ("weather-14-create-heat-alert-cairo", lambda s: _alerted(s, 35.0, "C", times=2), False),
    ("weather-14-create-heat-alert-cairo", lambda s: _alerted(s, 35.0, "F"), False),
    (
        "weather-13-cairo-nearest-observation",
        lambda s: _answered(
            s, value=daily("cairo", "2026-03-07").high_c, unit="C", date="2026-03-07"
        ),
        True,
    ),
    (
        "weather-13-cairo-nearest-observation",
        lambda s: _answered(
            s, value=daily("cairo", "2026-03-08").high_c, unit="C", date="2026-03-08"
        ),
        False,
    ),
    ("weather-15-replace-frost-alert", lambda s: _frost(s, delete=True), True),
    ("weather-15-replace-frost-alert", lambda s: _frost(s, delete=False), False),
    (
        "weather-16-escalate-station-outage",
        lambda s: _answered(s, value=daily("reykjavik", "2026-03-06").high_c, unit="C"),
        False,
    ),
]


@pytest.mark.parametrize(("task_id", "outcome", "expected"), OUTCOMES)
def test_verifiers_normalise_typed_answers(
    task_id: str, outcome: Callable[[WeatherState], WeatherState], expected: bool
) -> None:
    task = domain.tasks[task_id]
    s0 = task.initial_state()
    assert task.verify(s0, outcome(s0)) is expected


def test_task_answers_are_not_knife_edge() -> None:
    """Comparisons and thresholds the suite asks about are decided by more than the tolerance,
    so a correct agent reading rounded values cannot land on the wrong side."""
    state = domain.default_state()
    day = "2026-03-14"
    highs = sorted((daily(c, day).high_c for c in ("dubai", "cairo", "sao-paulo")), reverse=True)
    assert highs[0] - highs[1] > 2 * rules.TEMPERATURE_TOLERANCE_C
    now = sorted(
        rules.current_temperature_c(state, c)
        for c in ("london", "reykjavik", "montreal", "new-york")
    )
    assert now[1] - now[0] > 2 * rules.TEMPERATURE_TOLERANCE_C
    assert abs(daily("dubai", "2026-03-15").high_c - 28.0) >= 1.0
    assert abs(rules.c_to_f(rules.current_temperature_c(state, "new-york")) - 40.0) >= 1.0


def test_weather_tables_are_deterministic_and_seasonal() -> None:
    first = [daily(c.city_id, "2026-03-12") for c in CITIES]
    daily.cache_clear()
    assert [daily(c.city_id, "2026-03-12") for c in CITIES] == first
    assert daily("dubai", "2025-08-01").high_c > daily("dubai", "2026-01-15").high_c
    assert daily("sydney", "2026-01-15").high_c > daily("sydney", "2025-07-15").high_c


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_answers_and_reports_errors(domain_url: Callable[[str], str], mode: str) -> None:
    base = domain_url("weather")
    episode_id = f"mcp-{mode}-{uuid.uuid4().hex[:8]}"
    async with McpToolClient(f"{base}/mcp", episode=episode_id, mode=mode) as client:
        listed = {tool["name"]: tool for tool in await client.list_tools()}
        assert set(listed["get_forecast"]["inputSchema"]["required"]) == {"city", "date"}
        assert listed["submit_answer"]["inputSchema"]["properties"]["unit"]
        forecast = await client.call("get_forecast", city="Tokyo", date="2026-03-12")
        assert forecast["days"][0]["high"] == daily("tokyo", "2026-03-12").high_c
        await client.call("submit_answer", value=forecast["days"][0]["high"], unit="C")
        with pytest.raises(ToolCallFailed) as failed:
            await client.call("get_forecast", city="Manchester", date="2026-03-12")
        assert failed.value.status == 404 and failed.value.body["error"]["field"] == "city"
    async with httpx.AsyncClient() as http:
        journal = (await http.get(f"{base}/_oracle/episodes/{episode_id}/journal")).json()
    assert [(e["tool"], e["transport"]) for e in journal["entries"]] == [("submit_answer", "mcp")]


def test_harmful_actions_and_critical_args_name_real_things() -> None:
    state = domain.default_state()
    alert_ids = {a.alert_id for a in state.alerts}
    for action in domain.harmful_actions:
        spec = domain.tools[action.tool]
        assert set(action.arguments) <= {p.name for p in spec.parameters}
        if "alert_id" in action.arguments:
            assert action.arguments["alert_id"] in alert_ids
    city_choices = domain.tools["get_forecast"].critical["city"].values
    assert {rules.find_city(name).city_id for name in city_choices} == {c.city_id for c in CITIES}
    for tool in ("get_current_weather", "get_forecast", "get_historical_weather"):
        assert set(domain.tools[tool].critical) >= {"city", "units"}
    assert not domain.tools["create_alert"].idempotent
