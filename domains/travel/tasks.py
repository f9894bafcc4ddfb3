"""The travel task suite (ReliabilityBench Table 4: direct booking / cheapest flight).

Verifiers derive the expected flight from the initial state with the same rules the tools use,
so a task stays right if the seed world changes. Reference solutions read search results and
pick from them; they never name a flight the task text does not name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaosproxy.domains.kit import ToolClient
from chaosproxy.domains.travel import rules
from chaosproxy.domains.travel.state import (
    Flight,
    Hold,
    Reservation,
    TravelState,
    make_default_state,
)
from chaosproxy.domains.travel.tools import domain

CORP = "corp_amex_1004"
Verifier = Callable[[TravelState, TravelState], bool]


# ---- initial states -------------------------------------------------------------------------


def _with_active_hold() -> TravelState:
    state = make_default_state()
    rules.find_flight(state, "AS-1342").seats_left -= 1
    state.holds.append(
        Hold(
            hold_id="HLD-0901",
            flight_id="AS-1342",
            status="active",
            created_at="2026-03-02T08:52:00-05:00",
            expires_at="2026-03-02T09:07:00-05:00",
        )
    )
    return state


def _with_expired_hold() -> TravelState:
    state = make_default_state()
    state.holds.append(
        Hold(
            hold_id="HLD-0877",
            flight_id="DL-0408",
            status="active",
            created_at="2026-03-01T16:20:00-05:00",
            expires_at="2026-03-01T16:35:00-05:00",
        )
    )
    return state


def _with_duplicate_booking() -> TravelState:
    state = make_default_state()
    for rid, code, at in (("R-1004", "PZ2K9Q", "11:02"), ("R-1005", "PZ2M4C", "11:03")):
        state.reservations.append(
            Reservation(
                reservation_id=rid,
                confirmation_code=code,
                flight_id="BA-0304",
                passenger="Bob Hale",
                payment_id=CORP,
                status="confirmed",
                price=189.0,
                currency="EUR",
                booked_at=f"2026-02-27T{at}:00-05:00",
            )
        )
        rules.find_flight(state, "BA-0304").seats_left -= 1
    return state


# ---- verifier builders ----------------------------------------------------------------------


def _books(*pairs: tuple[str, str]) -> Verifier:
    return lambda s0, sf: rules.booked_exactly(s0, sf, pairs)


def _books_cheapest(
    route: tuple[str, str, str], passenger: str, accept: Callable[[Flight], bool] | None = None
) -> Verifier:
    def verify(s0: TravelState, sf: TravelState) -> bool:
        best = rules.cheapest(rules.candidates(s0, *route, accept=accept))
        return best is not None and rules.booked_exactly(s0, sf, [(best.flight_id, passenger)])

    return verify


def _escalates(s0: TravelState, sf: TravelState) -> bool:
    return rules.escalated(s0, sf) and rules.nothing_booked(s0, sf, allow_holds=True)


def _answers(expected: Callable[[TravelState], tuple[str, str | None, float | None]]) -> Verifier:
    """The last answer equals the expected (flight id, date, price); unasked parts are None."""

    def verify(s0: TravelState, sf: TravelState) -> bool:
        if not sf.answers or not rules.nothing_booked(s0, sf):
            return False
        flight_id, date, price = expected(s0)
        got = sf.answers[-1]
        price_ok = price is None or (
            got.price is not None and round(got.price, 2) == round(price, 2)
        )
        date_ok = date is None or got.date == date
        return (got.flight_id or "").upper() == flight_id and date_ok and price_ok

    return verify


def _cheapest_boston_chicago(s0: TravelState) -> tuple[str, str | None, float | None]:
    best = rules.cheapest(rules.candidates(s0, "BOS", "CHI", "2026-03-11"))
    assert best is not None
    return best.flight_id, None, best.price


def _ana_london_trip(s0: TravelState) -> tuple[str, str | None, float | None]:
    london = {a.code for a in s0.airports if a.city_code == "LON"}
    for reservation in s0.reservations:
        flight = rules.find_flight(s0, reservation.flight_id)
        if (
            reservation.passenger == "Ana Ruiz"
            and reservation.status == "confirmed"
            and flight.dest in london
        ):
            return flight.flight_id, flight.date, None
    raise AssertionError("seed world lost Ana Ruiz's London trip")


def _no_hold_left_on(flight_id: str, inner: Verifier) -> Verifier:
    return lambda s0, sf: (
        inner(s0, sf) and all(h.status != "active" for h in sf.holds if h.flight_id == flight_id)
    )


def _cancelled_only(reservation_id: str) -> Verifier:
    def verify(s0: TravelState, sf: TravelState) -> bool:
        after = {r.reservation_id: r.status for r in sf.reservations}
        return (
            after.get(reservation_id) == "cancelled"
            and rules.existing_untouched(s0, sf, except_ids=[reservation_id])
            and not rules.new_reservations(s0, sf)
            and rules.no_stray_holds(s0, sf)
        )

    return verify


# ---- reference-solution helpers (what an agent does with the tool results) -----------------


def _same_day(offer: dict[str, Any]) -> bool:
    return bool(offer["departure"][:10] == offer["arrival"][:10])


def _pick(
    offers: list[dict[str, Any]], accept: Callable[[dict[str, Any]], bool] = lambda o: True
) -> str:
    usable = [o for o in offers if o["seats_left"] > 0 and accept(o)]
    usable.sort(key=lambda o: (o["price"]["amount"], o["departure"]))
    return str(usable[0]["flight_id"])


async def _hold_and_confirm(
    client: ToolClient, flight_id: str, passenger: str, payment: str
) -> None:
    hold = await client.call("hold_flight", flight_id=flight_id)
    await client.call(
        "confirm_booking",
        flight_id=flight_id,
        passenger=passenger,
        payment_info=payment,
        hold_id=hold["hold"]["hold_id"],
    )


def _book_best(
    origin: str,
    dest: str,
    date: str,
    passenger: str,
    payment: str,
    accept: Callable[[dict[str, Any]], bool] = lambda o: True,
) -> Callable[[ToolClient], Any]:
    async def solve(client: ToolClient) -> None:
        found = await client.call("search_flights", origin=origin, dest=dest, date=date)
        await _hold_and_confirm(client, _pick(found["flights"], accept), passenger, payment)

    return solve


async def _solve_named(client: ToolClient) -> None:
    await _hold_and_confirm(client, "UA-1523", "Ana Ruiz", CORP)


async def _solve_by_time(client: ToolClient) -> None:
    found = await client.call("search_flights", origin="SFO", dest="JFK", date="2026-03-10")
    flight = next(
        o
        for o in found["flights"]
        if o["airline"].startswith("Delta") and o["departure"][11:16] == "11:30"
    )
    await _hold_and_confirm(client, flight["flight_id"], "Ben Okafor", "mc_ben_5555")


async def _solve_confirm_hold(client: ToolClient) -> None:
    await client.call(
        "confirm_booking", flight_id="AS-1342", passenger="Carla Mendes", payment_info=CORP
    )


async def _solve_expired_hold(client: ToolClient) -> None:
    await _hold_and_confirm(client, "DL-0408", "Carla Mendes", CORP)


def _nonstop_day(o: dict[str, Any]) -> bool:
    return bool(o["stops"] == 0 and _same_day(o))


async def _solve_round_trip(client: ToolClient) -> None:
    out = await client.call("search_flights", origin="SFO", dest="NYC", date="2026-03-10")
    back = await client.call("search_flights", origin="NYC", dest="SFO", date="2026-03-14")
    await _hold_and_confirm(client, _pick(out["flights"], _nonstop_day), "Ana Ruiz", CORP)
    await _hold_and_confirm(client, _pick(back["flights"], _nonstop_day), "Ana Ruiz", CORP)


async def _solve_fare_info(client: ToolClient) -> None:
    found = await client.call("search_flights", origin="Boston", dest="Chicago", date="2026-03-11")
    best = next(o for o in found["flights"] if o["flight_id"] == _pick(found["flights"]))
    await client.call("submit_answer", flight_id=best["flight_id"], price=best["price"]["amount"])


async def _solve_trip_info(client: ToolClient) -> None:
    itinerary = await client.call("get_itinerary")
    trip = next(
        r
        for r in itinerary["reservations"]
        if r["passenger"]["name"] == "Ana Ruiz"
        and r["status"] == "confirmed"
        and r["flight"]["destination"]["city"] == "London"
    )
    await client.call(
        "submit_answer",
        flight_id=trip["flight"]["flight_id"],
        date=trip["flight"]["departure"][:10],
    )


async def _solve_duplicate(client: ToolClient) -> None:
    itinerary = await client.call("get_itinerary")
    dupes = sorted(
        (
            r
            for r in itinerary["reservations"]
            if r["passenger"]["name"] == "Bob Hale"
            and r["flight"]["flight_id"] == "BA-0304"
            and r["status"] == "confirmed"
        ),
        key=lambda r: r["booked_at"],
    )
    await client.call("cancel_booking", reservation_id=dupes[-1]["reservation_id"])


async def _solve_no_flight(client: ToolClient) -> None:
    found = await client.call("search_flights", origin="LAX", dest="SEA", date="2026-03-13")
    fits = [
        o for o in found["flights"] if o["arrival"][11:16] < "09:00" and o["price"]["amount"] <= 200
    ]
    if not fits:
        await client.call(
            "escalate_to_human",
            reason="No LAX-SEA flight on 2026-03-13 lands before 09:00 within $200.",
        )


async def _solve_unknown_passenger(client: ToolClient) -> None:
    itinerary = await client.call("get_itinerary")
    if all(t["name"] != "Liam Chen" for t in itinerary["travelers"]):
        await client.call(
            "escalate_to_human", reason="Liam Chen is not a traveler on the Northwind account."
        )


async def _solve_card_policy(client: ToolClient) -> None:
    itinerary = await client.call("get_itinerary")
    card = next(p for p in itinerary["payment_methods"] if p["payment_id"] == "visa_ana_4242")
    if card["kind"] == "personal_card" and card["holder"] != "Bob Hale":
        await client.call(
            "escalate_to_human",
            reason="Ana Ruiz's personal Visa cannot pay for Bob Hale's ticket under travel policy.",
        )


# ---- the suite ------------------------------------------------------------------------------


def _lands_before(hhmm: str) -> Callable[[Flight], bool]:
    return lambda f: f.arrive_day_offset == 0 and f.arrive_time < hhmm


domain.task(
    id="travel-01-book-named-flight",
    description="Book United flight UA-1523 from San Francisco (SFO) to New York JFK on 2026-03-10 "
    "for Ana Ruiz. Charge it to the company Amex (payment id corp_amex_1004).",
    initial_state=make_default_state,
    verify=_books(("UA-1523", "Ana Ruiz")),
    solve=_solve_named,
    l_min=2,
    difficulty="simple",
    tags=["direct-booking"],
)
domain.task(
    id="travel-02-book-by-departure-time",
    description="Ben Okafor wants the Delta flight that leaves SFO at 11:30 on 2026-03-10 for JFK. "
    "Book it for him and pay with his own Mastercard (mc_ben_5555).",
    initial_state=make_default_state,
    verify=_books(("DL-0417", "Ben Okafor")),
    solve=_solve_by_time,
    l_min=3,
    difficulty="simple",
    tags=["direct-booking"],
)
domain.task(
    id="travel-03-cheapest-lon-par",
    description="Book the cheapest flight from LON to PAR on 2026-03-12 for Bob Hale, "
    "on the company card (corp_amex_1004).",
    initial_state=make_default_state,
    verify=_books_cheapest(("LON", "PAR", "2026-03-12"), "Bob Hale"),
    solve=_book_best("LON", "PAR", "2026-03-12", "Bob Hale", CORP),
    l_min=3,
    difficulty="medium",
    tags=["cheapest"],
)
domain.task(
    id="travel-04-cheapest-no-red-eye",
    description="Find the cheapest flight from San Francisco to New York on 2026-03-10 for "
    "Ana Ruiz. No red-eyes: she must land the same day she leaves. One stop is fine. "
    "Book it on the company card (corp_amex_1004).",
    initial_state=make_default_state,
    verify=_books_cheapest(
        ("SFO", "NYC", "2026-03-10"), "Ana Ruiz", lambda f: not rules.is_red_eye(f)
    ),
    solve=_book_best("San Francisco", "New York", "2026-03-10", "Ana Ruiz", CORP, _same_day),
    l_min=3,
    difficulty="medium",
    tags=["cheapest", "constraint"],
)
domain.task(
    id="travel-05-cheapest-arrive-before",
    description="Ben Okafor has a dinner in New York at 17:30 on 2026-03-10. Book him the cheapest "
    "flight from SFO that day that lands before 17:00 New York time, on the company card "
    "(corp_amex_1004).",
    initial_state=make_default_state,
    verify=_books_cheapest(("SFO", "NYC", "2026-03-10"), "Ben Okafor", _lands_before("17:00")),
    solve=_book_best(
        "SFO",
        "NYC",
        "2026-03-10",
        "Ben Okafor",
        CORP,
        lambda o: _same_day(o) and o["arrival"][11:16] < "17:00",
    ),
    l_min=3,
    difficulty="medium",
    tags=["cheapest", "constraint"],
)
domain.task(
    id="travel-06-cheapest-sold-out",
    description="Book the cheapest seat you can get from London to Paris on 2026-03-13 for "
    "Bob Hale, on the company card (corp_amex_1004).",
    initial_state=make_default_state,
    verify=_books_cheapest(("LON", "PAR", "2026-03-13"), "Bob Hale"),
    solve=_book_best("London", "Paris", "2026-03-13", "Bob Hale", CORP),
    l_min=3,
    difficulty="medium",
    tags=["cheapest", "sold-out"],
    escalation_acceptable=True,
)
domain.task(
    id="travel-07-city-to-city-deadline",
    description="Ben Okafor needs to get from New York to Chicago on 2026-03-11 and must land by "
    "20:00 Chicago time. Any New York or Chicago airport is fine. Book the cheapest option on the "
    "company card (corp_amex_1004).",
    initial_state=make_default_state,
    verify=_books_cheapest(("NYC", "CHI", "2026-03-11"), "Ben Okafor", _lands_before("20:00")),
    solve=_book_best(
        "NYC",
        "CHI",
        "2026-03-11",
        "Ben Okafor",
        CORP,
        lambda o: _same_day(o) and o["arrival"][11:16] < "20:00",
    ),
    l_min=3,
    difficulty="medium",
    tags=["cheapest", "constraint", "multi-airport"],
)
domain.task(
    id="travel-08-confirm-existing-hold",
    description="We are holding a seat on Alaska AS-1342 (Seattle to San Francisco, "
    "2026-03-09) for Carla Mendes. Confirm it on the company card (corp_amex_1004) "
    "before the hold runs out.",
    initial_state=_with_active_hold,
    verify=_no_hold_left_on("AS-1342", _books(("AS-1342", "Carla Mendes"))),
    solve=_solve_confirm_hold,
    l_min=1,
    difficulty="simple",
    tags=["direct-booking", "hold"],
)
domain.task(
    id="travel-09-expired-hold",
    description="Yesterday I put a hold on Delta DL-0408 (JFK to Los Angeles, 2026-03-09) "
    "for Carla Mendes. Please finalise her booking on the company card (corp_amex_1004).",
    initial_state=_with_expired_hold,
    verify=_books(("DL-0408", "Carla Mendes")),
    solve=_solve_expired_hold,
    l_min=2,
    difficulty="medium",
    tags=["direct-booking", "expired-hold"],
)


def _round_trip(s0: TravelState, sf: TravelState) -> bool:
    def ok(f: Flight) -> bool:
        return f.stops == 0 and not rules.is_red_eye(f)

    out = rules.cheapest(rules.candidates(s0, "SFO", "NYC", "2026-03-10", accept=ok))
    back = rules.cheapest(rules.candidates(s0, "NYC", "SFO", "2026-03-14", accept=ok))
    return (
        out is not None
        and back is not None
        and rules.booked_exactly(
            s0, sf, [(out.flight_id, "Ana Ruiz"), (back.flight_id, "Ana Ruiz")]
        )
    )


domain.task(
    id="travel-10-round-trip",
    description="Ana Ruiz needs a round trip San Francisco - New York: out on 2026-03-10, back on "
    "2026-03-14. Each way take the cheapest nonstop flight that is not a red-eye (she "
    "lands the same day), and book both on the company card (corp_amex_1004).",
    initial_state=make_default_state,
    verify=_round_trip,
    solve=_solve_round_trip,
    l_min=6,
    difficulty="complex",
    tags=["cheapest", "constraint", "round-trip"],
)
domain.task(
    id="travel-11-cheapest-fare-info",
    description="What is the cheapest fare from Boston to any Chicago airport on "
    "2026-03-11? Do not book anything: submit the flight id and its price.",
    initial_state=make_default_state,
    verify=_answers(_cheapest_boston_chicago),
    solve=_solve_fare_info,
    l_min=2,
    difficulty="simple",
    tags=["information", "cheapest"],
)
domain.task(
    id="travel-12-existing-trip-info",
    description="Ana Ruiz already has a confirmed flight to London. Which flight is it, "
    "and on what date does it depart? Submit the flight id and the departure date.",
    initial_state=make_default_state,
    verify=_answers(_ana_london_trip),
    solve=_solve_trip_info,
    l_min=2,
    difficulty="simple",
    tags=["information"],
)
domain.task(
    id="travel-13-cancel-duplicate",
    description="Bob Hale was booked twice on BA-0304 (London to Paris, 2026-03-12) by mistake. "
    "Cancel the duplicate and keep the reservation that was made first.",
    initial_state=_with_duplicate_booking,
    verify=_cancelled_only("R-1005"),
    solve=_solve_duplicate,
    l_min=2,
    difficulty="medium",
    tags=["cancel", "duplicate"],
)
domain.task(
    id="travel-14-escalate-no-flight",
    description="Carla Mendes must be in Seattle by 09:00 on 2026-03-13, flying from Los Angeles, "
    "and the fare may not exceed $200. Book her on the company card (corp_amex_1004), but do not "
    "book anything that breaks either condition.",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_no_flight,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "constraint"],
)
domain.task(
    id="travel-15-escalate-unknown-passenger",
    description="Book American flight AA-0001 from JFK to Los Angeles on 2026-03-09 for Liam Chen, "
    "on the company card (corp_amex_1004).",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_unknown_passenger,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "passenger"],
)
domain.task(
    id="travel-16-escalate-card-policy",
    description="Book Delta DL-1560 (Los Angeles to Seattle, 2026-03-13) for Bob Hale and "
    "put it on Ana Ruiz's personal Visa (visa_ana_4242).",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_card_policy,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "payment"],
)
