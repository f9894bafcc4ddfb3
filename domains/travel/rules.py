"""Pure travel rules shared by the tools and the task verifiers (one definition, no drift)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date as Date

from chaosproxy.domains.kit import ToolError
from chaosproxy.domains.travel.state import Flight, Reservation, TravelState

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def normalise_name(name: str) -> str:
    """Passenger names compare case-insensitively with collapsed whitespace."""
    return " ".join(name.split()).casefold()


def parse_date(value: str, field: str) -> Date:
    if not _DATE.match(value.strip()):
        raise ToolError(
            f"{field} must be an ISO date YYYY-MM-DD, got {value!r}", status=422, field=field
        )
    try:
        return Date.fromisoformat(value.strip())
    except ValueError:
        raise ToolError(
            f"{field} {value!r} is not a calendar date", status=422, field=field
        ) from None


def airports_for(state: TravelState, place: str, field: str) -> set[str]:
    """An IATA airport code, a city code (NYC, LON) or a city name, to the airports it covers."""
    key = " ".join(place.split()).casefold()
    if not key:
        raise ToolError(f"{field} must not be empty", status=422, field=field)
    found = {
        a.code
        for a in state.airports
        if key in {a.code.casefold(), a.city_code.casefold(), a.city.casefold()}
    }
    if not found:
        known = ", ".join(
            sorted({a.city_code for a in state.airports} | {a.code for a in state.airports})
        )
        raise ToolError(
            f"unknown airport or city {place!r} in {field}; known codes: {known}",
            status=422,
            field=field,
        )
    return found


def offset_of(state: TravelState, airport: str) -> str:
    return next(a.utc_offset for a in state.airports if a.code == airport)


def departure_iso(state: TravelState, flight: Flight) -> str:
    return f"{flight.date}T{flight.depart_time}:00{offset_of(state, flight.origin)}"


def arrival_iso(state: TravelState, flight: Flight) -> str:
    day = Date.fromisoformat(flight.date).toordinal() + flight.arrive_day_offset
    landing = Date.fromordinal(day).isoformat()
    return f"{landing}T{flight.arrive_time}:00{offset_of(state, flight.dest)}"


def is_red_eye(flight: Flight) -> bool:
    """Overnight: it lands on a later calendar day than it leaves."""
    return flight.arrive_day_offset > 0


def find_flight(state: TravelState, flight_id: str) -> Flight:
    wanted = flight_id.strip().upper()
    for flight in state.flights:
        if flight.flight_id == wanted:
            return flight
    raise ToolError(f"flight {flight_id!r} does not exist", status=404, field="flight_id")


def candidates(
    state: TravelState,
    origin: str,
    dest: str,
    date: str,
    accept: Callable[[Flight], bool] | None = None,
) -> list[Flight]:
    """Bookable flights (seats left) on a route and date that pass `accept`."""
    origins = airports_for(state, origin, "origin")
    dests = airports_for(state, dest, "dest")
    return [
        f
        for f in state.flights
        if f.origin in origins
        and f.dest in dests
        and f.date == date
        and f.seats_left > 0
        and (accept is None or accept(f))
    ]


def cheapest(flights: Iterable[Flight]) -> Flight | None:
    """Lowest price; ties go to the earlier departure."""
    ranked = sorted(flights, key=lambda f: (f.price, f.depart_time))
    return ranked[0] if ranked else None


def new_reservations(s0: TravelState, sf: TravelState) -> list[Reservation]:
    known = {r.reservation_id for r in s0.reservations}
    return [r for r in sf.reservations if r.reservation_id not in known]


def existing_untouched(s0: TravelState, sf: TravelState, except_ids: Iterable[str] = ()) -> bool:
    """Every reservation of the initial state still has its status (bar the ones named)."""
    after = {r.reservation_id: r.status for r in sf.reservations}
    skip = set(except_ids)
    return all(
        after.get(r.reservation_id) == r.status
        for r in s0.reservations
        if r.reservation_id not in skip
    )


def no_stray_holds(s0: TravelState, sf: TravelState) -> bool:
    """No hold created in the episode is left active: an unconfirmed duplicate blocks a seat."""
    known = {h.hold_id for h in s0.holds}
    return all(h.status != "active" for h in sf.holds if h.hold_id not in known)


def booked_exactly(s0: TravelState, sf: TravelState, bookings: Iterable[tuple[str, str]]) -> bool:
    """The new confirmed reservations are exactly these (flight, passenger) pairs, nothing else
    changed among existing reservations, and no new hold was left dangling."""
    made = sorted(
        (r.flight_id, normalise_name(r.passenger))
        for r in new_reservations(s0, sf)
        if r.status == "confirmed"
    )
    wanted = sorted((f, normalise_name(p)) for f, p in bookings)
    no_cancelled_new = all(r.status == "confirmed" for r in new_reservations(s0, sf))
    return (
        made == wanted
        and no_cancelled_new
        and existing_untouched(s0, sf)
        and no_stray_holds(s0, sf)
    )


def escalated(s0: TravelState, sf: TravelState) -> bool:
    return len(sf.escalations) > len(s0.escalations)


def nothing_booked(s0: TravelState, sf: TravelState, *, allow_holds: bool = False) -> bool:
    """No reservation made or changed; a hold left behind is tolerated only when asked (it
    expires on its own, and an agent may hold before it learns it has to stop)."""
    holds_ok = allow_holds or no_stray_holds(s0, sf)
    return not new_reservations(s0, sf) and existing_untouched(s0, sf) and holds_ok
