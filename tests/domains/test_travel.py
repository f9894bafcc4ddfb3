"""Travel domain over a real server: realistic records, holds and bookings, 4xx naming the field,
the journal, and verifiers that catch the damage faults cause (double bookings, wrong flights)."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import McpToolClient
from chaosproxy.domains.travel import domain
from chaosproxy.domains.travel.state import TravelState
from domain_driver import RestEpisode, fresh_episode

pytestmark = pytest.mark.timeout(60)
ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$")


Episode = RestEpisode[TravelState]


@pytest.fixture
async def episode(domain_url: Callable[[str], str]) -> AsyncIterator[Episode]:
    async with fresh_episode(domain_url("travel"), TravelState) as created:
        yield created


async def test_search_returns_realistic_offers_for_a_city(episode: Episode) -> None:
    found = await episode.ok(
        "search_flights", origin="San Francisco", dest="NYC", date="2026-03-10"
    )
    assert found["origin_airports"] == ["SFO"] and found["dest_airports"] == ["EWR", "JFK", "LGA"]
    assert found["total"] == len(found["flights"]) == 5
    departures = [offer["departure"] for offer in found["flights"]]
    assert departures == sorted(departures)
    for offer in found["flights"]:
        assert ISO_WITH_OFFSET.match(offer["departure"]) and ISO_WITH_OFFSET.match(offer["arrival"])
        assert offer["departure"].endswith("-07:00") and offer["arrival"].endswith("-04:00")
        assert offer["price"]["currency"] == "USD" and offer["price"]["amount"] > 0
        assert offer["duration_minutes"] > 300 and offer["destination"]["city"] == "New York"
    red_eye = next(o for o in found["flights"] if o["flight_id"] == "B6-0916")
    assert red_eye["arrival"].startswith("2026-03-11T07:05")


async def test_hold_then_confirm_books_and_is_journaled(episode: Episode) -> None:
    before = await episode.state()
    seats = next(f.seats_left for f in before.flights if f.flight_id == "UA-1523")
    hold = await episode.ok("hold_flight", flight_id="ua-1523")
    assert hold["hold"]["status"] == "active" and hold["flight"]["seats_left"] == seats - 1
    assert hold["hold"]["expires_at"] > hold["hold"]["created_at"]
    booking = await episode.ok(
        "confirm_booking",
        flight_id="UA-1523",
        passenger="  ana  RUIZ ",
        payment_info="card ending 1004",
    )
    assert booking["status"] == "confirmed" and re.match(
        r"^[0-9A-F]{6}$", booking["confirmation_code"]
    )
    assert booking["passenger"] == {"traveler_id": "T-01", "name": "Ana Ruiz"}
    assert (
        booking["payment"]["payment_id"] == "corp_amex_1004"
        and booking["hold_id"] == hold["hold"]["hold_id"]
    )
    itinerary = await episode.ok("get_itinerary")
    assert booking["reservation_id"] in {r["reservation_id"] for r in itinerary["reservations"]}
    assert {h["hold_id"]: h["status"] for h in itinerary["holds"]} == {
        hold["hold"]["hold_id"]: "confirmed"
    }
    journal = await episode.oracle("journal")
    assert [(e["tool"], e["step"]) for e in journal["entries"]] == [
        ("hold_flight", 1),
        ("confirm_booking", 2),
    ]
    final = await episode.state()
    assert domain.tasks["travel-01-book-named-flight"].verify(before, final)


BAD_INPUTS: list[tuple[str, dict[str, Any], int, str]] = [
    ("search_flights", {"dest": "JFK", "date": "2026-03-10"}, 422, "origin"),
    ("search_flights", {"origin": "XYZ", "dest": "JFK", "date": "2026-03-10"}, 422, "origin"),
    ("search_flights", {"origin": "SFO", "dest": "JFK", "date": "10/03/2026"}, 422, "date"),
    ("search_flights", {"origin": "SFO", "dest": "JFK", "date": "2026-02-01"}, 422, "date"),
    ("search_flights", {"origin": "JFK", "dest": "New York", "date": "2026-03-10"}, 422, "dest"),
    ("hold_flight", {"flight_id": "ZZ-0000"}, 404, "flight_id"),
    ("hold_flight", {"flight_id": 1523}, 422, "flight_id"),
    ("hold_flight", {"flight_id": "B6-0415"}, 409, "flight_id"),
    (
        "confirm_booking",
        {"flight_id": "UA-1523", "passenger": "Ana Ruiz", "payment_info": "corp_amex_1004"},
        409,
        "flight_id",
    ),
    (
        "confirm_booking",
        {"flight_id": "UA-1523", "passenger": "Liam Chen", "payment_info": "corp_amex_1004"},
        422,
        "passenger",
    ),
    (
        "confirm_booking",
        {"flight_id": "UA-1523", "passenger": "Ana Ruiz", "payment_info": "bitcoin"},
        422,
        "payment_info",
    ),
    (
        "confirm_booking",
        {
            "flight_id": "UA-1523",
            "passenger": "Ana Ruiz",
            "payment_info": "corp_amex_1004",
            "hold_id": "HLD-9999",
        },
        404,
        "hold_id",
    ),
    ("cancel_booking", {"reservation_id": "R-9999"}, 404, "reservation_id"),
    ("cancel_booking", {"reservation_id": "R-1003"}, 409, "reservation_id"),
    ("submit_answer", {}, 422, "flight_id"),
    ("submit_answer", {"price": "cheap"}, 422, "price"),
    ("get_itinerary", {"account": "other"}, 422, "account"),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    BAD_INPUTS,
    ids=[f"{b[0]}-{b[3]}-{b[2]}" for b in BAD_INPUTS],
)
async def test_bad_input_is_a_4xx_naming_the_field(
    episode: Episode, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await episode.raw(tool, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and error["message"]
    assert (await episode.oracle("journal"))["entries"] == []


async def test_card_policy_and_passenger_checks_leave_no_booking(episode: Episode) -> None:
    await episode.ok("hold_flight", flight_id="DL-1560")
    refused = await episode.raw(
        "confirm_booking",
        {"flight_id": "DL-1560", "passenger": "Bob Hale", "payment_info": "visa_ana_4242"},
    )
    assert refused.status_code == 403 and refused.json()["error"]["field"] == "payment_info"
    state = await episode.state()
    assert [r.reservation_id for r in state.reservations] == ["R-1001", "R-1002", "R-1003"]
    own_card = await episode.ok(
        "confirm_booking", flight_id="DL-1560", passenger="Ana Ruiz", payment_info="visa_ana_4242"
    )
    assert own_card["payment"]["last4"] == "4242"


async def test_expired_hold_must_be_replaced(episode: Episode) -> None:
    await episode.reset("travel-09-expired-hold")
    refused = await episode.raw(
        "confirm_booking",
        {"flight_id": "DL-0408", "passenger": "Carla Mendes", "payment_info": "corp_amex_1004"},
    )
    assert refused.status_code == 409 and "expired" in refused.json()["error"]["message"]
    itinerary = await episode.ok("get_itinerary")
    assert {h["hold_id"]: h["status"] for h in itinerary["holds"]} == {"HLD-0877": "expired"}
    await episode.ok("hold_flight", flight_id="DL-0408")
    await episode.ok(
        "confirm_booking",
        flight_id="DL-0408",
        passenger="Carla Mendes",
        payment_info="corp_amex_1004",
    )
    task = domain.tasks["travel-09-expired-hold"]
    assert task.verify(task.initial_state(), await episode.state())


async def test_blind_retry_double_books_and_the_verifier_sees_it(episode: Episode) -> None:
    """What a LostReply on hold/confirm followed by a blind retry leaves behind."""
    for _ in range(2):
        await episode.ok("hold_flight", flight_id="UA-1523")
        await episode.ok(
            "confirm_booking",
            flight_id="UA-1523",
            passenger="Ana Ruiz",
            payment_info="corp_amex_1004",
        )
    final = await episode.state()
    assert [r.flight_id for r in final.reservations if r.passenger == "Ana Ruiz"].count(
        "UA-1523"
    ) == 2
    task = domain.tasks["travel-01-book-named-flight"]
    assert not task.verify(task.initial_state(), final)


async def test_cancel_releases_the_seat(episode: Episode) -> None:
    cancelled = await episode.ok("cancel_booking", reservation_id="R-1001")
    assert cancelled["status"] == "cancelled" and cancelled["flight"]["seats_left"] == 4
    journal = await episode.oracle("journal")
    assert journal["entries"][0]["arguments"] == {"reservation_id": "R-1001"}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_books_and_reports_errors(domain_url: Callable[[str], str], mode: str) -> None:
    base = domain_url("travel")
    episode_id = f"mcp-{mode}-{uuid.uuid4().hex[:8]}"
    async with McpToolClient(f"{base}/mcp", episode=episode_id, mode=mode) as client:
        listed = {tool["name"]: tool for tool in await client.list_tools()}
        assert set(listed["confirm_booking"]["inputSchema"]["required"]) == {
            "flight_id",
            "passenger",
            "payment_info",
        }
        found = await client.call("search_flights", origin="LON", dest="PAR", date="2026-03-12")
        assert {o["price"]["currency"] for o in found["flights"]} == {"EUR"}
        cheapest = min(found["flights"], key=lambda o: o["price"]["amount"])
        await client.call("hold_flight", flight_id=cheapest["flight_id"])
        booking = await client.call(
            "confirm_booking",
            flight_id=cheapest["flight_id"],
            passenger="Bob Hale",
            payment_info="corp_amex_1004",
        )
        assert booking["flight"]["flight_id"] == "U2-8321"
        with pytest.raises(ToolCallFailed) as failed:
            await client.call("hold_flight", flight_id="ZZ-0000")
        assert failed.value.status == 404 and failed.value.body["error"]["field"] == "flight_id"
    async with httpx.AsyncClient() as http:
        journal = (await http.get(f"{base}/_oracle/episodes/{episode_id}/journal")).json()
    assert [(e["tool"], e["transport"]) for e in journal["entries"]] == [
        ("hold_flight", "mcp"),
        ("confirm_booking", "mcp"),
    ]


def _booked(
    state: TravelState, flight_id: str, passenger: str = "Ana Ruiz", *, confirm: bool = True
) -> TravelState:
    """Apply hold (+ confirm) in process, to feed verifiers hand-made outcomes."""
    from chaosproxy.domains.travel.tools import confirm_booking, hold_flight

    after = state.model_copy(deep=True)
    hold_flight(after, flight_id)
    if confirm:
        confirm_booking(after, flight_id, passenger, "corp_amex_1004")
    return after


WRONG_OUTCOMES: list[tuple[str, Callable[[TravelState], TravelState]]] = [
    ("travel-04-cheapest-no-red-eye", lambda s: _booked(s, "B6-0916")),
    ("travel-04-cheapest-no-red-eye", lambda s: _booked(s, "DL-0417")),
    ("travel-04-cheapest-no-red-eye", lambda s: _booked(s, "AS-0004", confirm=False)),
    ("travel-04-cheapest-no-red-eye", lambda s: _booked(s, "AS-0004", "Ben Okafor")),
    (
        "travel-06-cheapest-sold-out",
        lambda s: _booked(_booked(s, "AF-1181", "Bob Hale"), "BA-0308", "Bob Hale"),
    ),
    ("travel-07-city-to-city-deadline", lambda s: _booked(s, "WN-0880", "Ben Okafor")),
    ("travel-14-escalate-no-flight", lambda s: _booked(s, "AS-0331", "Carla Mendes")),
]
RIGHT_OUTCOMES: list[tuple[str, Callable[[TravelState], TravelState]]] = [
    ("travel-04-cheapest-no-red-eye", lambda s: _booked(s, "AS-0004")),
    ("travel-06-cheapest-sold-out", lambda s: _booked(s, "AF-1181", "Bob Hale")),
    ("travel-07-city-to-city-deadline", lambda s: _booked(s, "UA-1109", "Ben Okafor")),
]


@pytest.mark.parametrize(("task_id", "outcome"), WRONG_OUTCOMES + RIGHT_OUTCOMES)
def test_verifiers_judge_outcomes(
    task_id: str, outcome: Callable[[TravelState], TravelState]
) -> None:
    task = domain.tasks[task_id]
    s0 = task.initial_state()
    expected = (task_id, outcome) in RIGHT_OUTCOMES
    assert task.verify(s0, outcome(s0)) is expected


def test_harmful_actions_and_critical_args_name_real_things() -> None:
    state = domain.default_state()
    ids = {f.flight_id for f in state.flights}
    for action in domain.harmful_actions:
        spec = domain.tools[action.tool]
        assert set(action.arguments) <= {p.name for p in spec.parameters}
        if "reservation_id" in action.arguments:
            assert action.arguments["reservation_id"] in {
                r.reservation_id for r in state.reservations
            }
        if "flight_id" in action.arguments:
            assert action.arguments["flight_id"] in ids
    assert set(domain.tools["hold_flight"].critical["flight_id"].values) == ids
    assert (
        not domain.tools["confirm_booking"].idempotent
        and not domain.tools["hold_flight"].idempotent
    )
