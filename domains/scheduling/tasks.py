"""The scheduling task suite (ReliabilityBench Table 4: simple booking / conflict handling).

Verifiers derive the expected slot from the initial state with the same rules the tools use;
reference solutions derive it from what check_calendar returns, as an agent would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from chaosproxy.domains.kit import ToolClient
from chaosproxy.domains.scheduling import rules
from chaosproxy.domains.scheduling.state import SchedulingState, make_default_state
from chaosproxy.domains.scheduling.tools import domain

Verifier = Callable[[SchedulingState, SchedulingState], bool]
ANY_ROOM = "*"
PRIYA, MARCO, TOM, LENA = (
    "priya@northwind.example",
    "marco@northwind.example",
    "tom@northwind.example",
    "lena@northwind.example",
)


# ---- verifier builders ----------------------------------------------------------------------


def _is_booked(
    s0: SchedulingState,
    sf: SchedulingState,
    *,
    date: str,
    time: str,
    duration: int,
    topic: str,
    invitees: Iterable[str],
    room: str | None = ANY_ROOM,
    cancelled: Iterable[str] = (),
) -> bool:
    """Exactly one new meeting, scheduled as asked; exactly `cancelled` initial meetings gone."""
    made = rules.new_meetings(s0, sf)
    if len(made) != 1 or not rules.existing_unchanged(s0, sf, cancelled):
        return False
    meeting = made[0]
    return (
        meeting.status == "scheduled"
        and meeting.date == date
        and meeting.time == time
        and meeting.duration_minutes == duration
        and rules.normalise_topic(meeting.topic) == rules.normalise_topic(topic)
        and set(meeting.participants) == set(invitees)
        and (room == ANY_ROOM or meeting.room == room)
    )


def _books(**wanted: Any) -> Verifier:
    return lambda s0, sf: _is_booked(s0, sf, **wanted)


def _books_earliest(
    days: list[str], after: str, duration: int, topic: str, invitees: list[str]
) -> Verifier:
    """Booked at the earliest slot that suits everyone, searching `days` in order from `after`."""

    def verify(s0: SchedulingState, sf: SchedulingState) -> bool:
        for index, day in enumerate(days):
            start_from = rules.parse_time(after, "after") if index == 0 else 0
            slot = rules.earliest_slot(s0, day, start_from, duration, invitees)
            if slot is not None:
                return _is_booked(
                    s0,
                    sf,
                    date=day,
                    time=rules.hhmm(slot),
                    duration=duration,
                    topic=topic,
                    invitees=invitees,
                )
        return False

    return verify


def _cancels(*meeting_ids: str) -> Verifier:
    return lambda s0, sf: (
        not rules.new_meetings(s0, sf) and rules.existing_unchanged(s0, sf, meeting_ids)
    )


def _escalates(s0: SchedulingState, sf: SchedulingState) -> bool:
    return (
        rules.escalated(s0, sf)
        and not rules.new_meetings(s0, sf)
        and rules.existing_unchanged(s0, sf)
    )


def _answers(
    expected: Callable[[SchedulingState], tuple[str | None, str | None, int | None]],
) -> Verifier:
    def verify(s0: SchedulingState, sf: SchedulingState) -> bool:
        if not sf.answers or rules.new_meetings(s0, sf) or not rules.existing_unchanged(s0, sf):
            return False
        date, time, count = expected(s0)
        got = sf.answers[-1]
        return (
            (date is None or got.date == date)
            and (time is None or got.time == time)
            and (count is None or got.count == count)
        )

    return verify


def _meeting_id(state: SchedulingState, date: str, time: str) -> str:
    return next(m.meeting_id for m in rules.scheduled_on(state, date) if m.time == time)


def _moved(s0: SchedulingState, sf: SchedulingState) -> bool:
    old = next(m for m in rules.scheduled_on(s0, "2026-02-19") if m.time == "15:00")
    return _is_booked(
        s0,
        sf,
        date="2026-02-20",
        time="10:00",
        duration=old.duration_minutes,
        topic=old.topic,
        invitees=old.participants,
        cancelled=[old.meeting_id],
    )


def _board_prep(s0: SchedulingState, sf: SchedulingState) -> bool:
    clashing = [b.meeting_id for b in rules.clashes(s0, s0.owner.email, "2026-02-20", 540, 600)]
    return _is_booked(
        s0,
        sf,
        date="2026-02-20",
        time="09:00",
        duration=60,
        topic="Board prep",
        invitees=[],
        cancelled=[m for m in clashing if m is not None],
    )


def _client_demo(s0: SchedulingState, sf: SchedulingState) -> bool:
    """Hudson if free, else the smallest free room seating at least 6."""
    fits = sorted(
        (r for r in s0.rooms if r.capacity >= 6), key=lambda r: (r.room_id != "hudson", r.capacity)
    )
    free = [r for r in fits if not rules.clashes(s0, r.room_id, "2026-02-19", 600, 645)]
    return bool(free) and _is_booked(
        s0,
        sf,
        date="2026-02-19",
        time="10:00",
        duration=45,
        topic="Client demo",
        invitees=[MARCO, PRIYA],
        room=free[0].room_id,
    )


def _next_with_tom(s0: SchedulingState) -> tuple[str | None, str | None, int | None]:
    found = sorted(
        (m.date, m.time)
        for m in s0.meetings
        if m.status == "scheduled"
        and m.date > s0.today
        and TOM in m.participants
        and rules.normalise_topic(m.topic) != "team standup"
    )
    return found[0][0], found[0][1], None


def _count_week(s0: SchedulingState) -> tuple[str | None, str | None, int | None]:
    count = sum(
        1 for m in s0.meetings if m.status == "scheduled" and "2026-02-23" <= m.date <= "2026-02-27"
    )
    return None, None, count


# ---- reference-solution helpers (computed from tool results, as an agent would) -------------


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:5])


async def _first_free(
    client: ToolClient, date: str, after: str, duration: int, calendars: list[str]
) -> str | None:
    days = [await client.call("check_calendar", date=date, calendar=c) for c in calendars]
    open_at = max(_minutes(d["calendar"]["working_hours"]["start"]) for d in days)
    close_at = min(_minutes(d["calendar"]["working_hours"]["end"]) for d in days)
    busy = [(_minutes(e["time"]), _minutes(e["end_time"])) for d in days for e in d["events"]]
    start_from = _minutes(after)
    for start in sorted({max(start_from, open_at)} | {end for _, end in busy if end >= start_from}):
        end = start + duration
        if start >= open_at and end <= close_at and not any(b < end and start < e for b, e in busy):
            return f"{start // 60:02d}:{start % 60:02d}"
    return None


async def _solve_simple(client: ToolClient) -> None:
    await client.call(
        "book_meeting", date="2026-02-18", time="10:00", topic="Budget review", duration_minutes=30
    )


async def _solve_design_sync(client: ToolClient) -> None:
    await client.call(
        "book_meeting",
        date="2026-02-19",
        time="14:00",
        topic="Design sync",
        duration_minutes=60,
        participants=["Marco Rossi", "Lena Park"],
        room="Hudson",
    )


async def _solve_cancel(client: ToolClient) -> None:
    await client.call("cancel_meeting", date="2026-02-18", time="10:30")


async def _solve_next_with_tom(client: ToolClient) -> None:
    listing = await client.call("list_meetings", start_date="2026-02-17", end_date="2026-04-17")
    first = next(
        m
        for m in listing["meetings"]
        if "Tom Becker" in [p["name"] for p in m["participants"]] and m["topic"] != "Team standup"
    )
    await client.call("submit_answer", date=first["date"], time=first["time"])


async def _solve_count(client: ToolClient) -> None:
    listing = await client.call("list_meetings", start_date="2026-02-23", end_date="2026-02-27")
    await client.call("submit_answer", count=listing["total"])


async def _solve_quarterly(client: ToolClient) -> None:
    slot = await _first_free(client, "2026-02-18", "11:00", 60, ["me", "Marco Rossi"])
    assert slot is not None
    await client.call(
        "book_meeting",
        date="2026-02-18",
        time=slot,
        topic="Quarterly planning",
        duration_minutes=60,
        participants=["Marco Rossi"],
    )


async def _solve_move(client: ToolClient) -> None:
    listing = await client.call("list_meetings", start_date="2026-02-19", end_date="2026-02-19")
    old = next(
        m for m in listing["meetings"] if m["time"] == "15:00" and m["topic"] == "Vendor call"
    )
    await client.call("cancel_meeting", date="2026-02-19", time="15:00")
    await client.call(
        "book_meeting",
        date="2026-02-20",
        time="10:00",
        topic=old["topic"],
        duration_minutes=old["duration_minutes"],
        participants=[p["email"] for p in old["participants"]],
    )


async def _solve_board_prep(client: ToolClient) -> None:
    day = await client.call("check_calendar", date="2026-02-20")
    for event in day["events"]:
        if _minutes(event["time"]) < _minutes("10:00") and _minutes(event["end_time"]) > _minutes(
            "09:00"
        ):
            await client.call("cancel_meeting", date="2026-02-20", time=event["time"])
    await client.call(
        "book_meeting", date="2026-02-20", time="09:00", topic="Board prep", duration_minutes=60
    )


async def _solve_client_demo(client: ToolClient) -> None:
    for room in ("Hudson", "Battery", "Empire"):
        day = await client.call("check_calendar", date="2026-02-19", calendar=room)
        if not any(
            _minutes(e["time"]) < 645 and _minutes(e["end_time"]) > 600 for e in day["events"]
        ):
            await client.call(
                "book_meeting",
                date="2026-02-19",
                time="10:00",
                topic="Client demo",
                duration_minutes=45,
                participants=["Marco Rossi", "Priya Nair"],
                room=room,
            )
            return


async def _solve_sprint_review(client: ToolClient) -> None:
    slot = await _first_free(client, "2026-02-24", "00:00", 30, ["me", "Priya Nair"])
    assert slot is not None
    await client.call(
        "book_meeting",
        date="2026-02-24",
        time=slot,
        topic="Sprint review",
        duration_minutes=30,
        participants=["Priya Nair"],
    )


async def _solve_no_slot(client: ToolClient) -> None:
    slot = await _first_free(client, "2026-02-17", "00:00", 120, ["me", "Priya Nair", "Tom Becker"])
    if slot is None:
        await client.call(
            "escalate_to_human",
            reason="No 2-hour slot on 2026-02-17 fits Dana, Priya and Tom's working hours "
            "without moving meetings.",
        )


async def _solve_ambiguous(client: ToolClient) -> None:
    listing = await client.call("list_meetings", start_date="2026-02-24", end_date="2026-02-24")
    with_marco = [
        m for m in listing["meetings"] if "Marco Rossi" in [p["name"] for p in m["participants"]]
    ]
    if len(with_marco) != 1:
        await client.call(
            "escalate_to_human",
            reason=f"{len(with_marco)} meetings with Marco on 2026-02-24; which one should be "
            f"cancelled?",
        )


async def _solve_contract(client: ToolClient) -> None:
    for date, after in (("2026-02-25", "10:00"), ("2026-02-26", "00:00"), ("2026-02-27", "00:00")):
        slot = await _first_free(client, date, after, 30, ["me", "Tom Becker"])
        if slot is not None:
            await client.call(
                "book_meeting",
                date=date,
                time=slot,
                topic="Contract signing",
                duration_minutes=30,
                participants=["Tom Becker"],
            )
            return


# ---- the suite ------------------------------------------------------------------------------

domain.task(
    id="scheduling-01-simple-booking",
    description="Book a 30-minute meeting about 'Budget review' on 2026-02-18 at 10:00.",
    initial_state=make_default_state,
    verify=_books(date="2026-02-18", time="10:00", duration=30, topic="Budget review", invitees=[]),
    solve=_solve_simple,
    l_min=1,
    difficulty="simple",
    tags=["booking"],
)
domain.task(
    id="scheduling-02-booking-with-room",
    description="Book a 60-minute 'Design sync' with Marco Rossi and Lena Park on 2026-02-19 at "
    "14:00 "
    "in the Hudson room.",
    initial_state=make_default_state,
    verify=_books(
        date="2026-02-19",
        time="14:00",
        duration=60,
        topic="Design sync",
        invitees=[MARCO, LENA],
        room="hudson",
    ),
    solve=_solve_design_sync,
    l_min=1,
    difficulty="simple",
    tags=["booking", "room"],
)
domain.task(
    id="scheduling-03-cancel-meeting",
    description="Cancel my weekly 1:1 with Tom Becker on 2026-02-18 at 10:30. Leave everything "
    "else as is.",
    initial_state=make_default_state,
    verify=lambda s0, sf: _cancels(_meeting_id(s0, "2026-02-18", "10:30"))(s0, sf),
    solve=_solve_cancel,
    l_min=1,
    difficulty="simple",
    tags=["cancel"],
)
domain.task(
    id="scheduling-04-next-meeting-info",
    description="When is my next meeting with Tom Becker after today, not counting the daily "
    "standup? "
    "Submit its date and start time.",
    initial_state=make_default_state,
    verify=_answers(_next_with_tom),
    solve=_solve_next_with_tom,
    l_min=2,
    difficulty="simple",
    tags=["information"],
)
domain.task(
    id="scheduling-05-count-meetings-info",
    description="How many meetings do I have from Monday 2026-02-23 through Friday 2026-02-27? "
    "Cancelled ones don't count. Submit the number.",
    initial_state=make_default_state,
    verify=_answers(_count_week),
    solve=_solve_count,
    l_min=2,
    difficulty="simple",
    tags=["information"],
)
domain.task(
    id="scheduling-06-conflict-next-free-slot",
    description="Book a 1-hour 'Quarterly planning' with Marco Rossi on 2026-02-18 at 11:00. If "
    "that "
    "time doesn't work for both of us, take the earliest later time that day that does, ending "
    "by 17:00.",
    initial_state=make_default_state,
    verify=_books_earliest(["2026-02-18"], "11:00", 60, "Quarterly planning", [MARCO]),
    solve=_solve_quarterly,
    l_min=3,
    difficulty="medium",
    tags=["conflict", "next-free-slot"],
)
domain.task(
    id="scheduling-07-move-meeting",
    description="Move my 'Vendor call' from 2026-02-19 at 15:00 to 2026-02-20 at 10:00, same "
    "length "
    "and same invitees.",
    initial_state=make_default_state,
    verify=_moved,
    solve=_solve_move,
    l_min=3,
    difficulty="medium",
    tags=["conflict", "cancel-and-rebook"],
)
domain.task(
    id="scheduling-08-cancel-conflicts-and-book",
    description="Book a 60-minute 'Board prep' on 2026-02-20 at 09:00. Board prep takes "
    "priority: cancel "
    "whatever overlaps that hour, but nothing else.",
    initial_state=make_default_state,
    verify=_board_prep,
    solve=_solve_board_prep,
    l_min=4,
    difficulty="complex",
    tags=["conflict", "cancel-and-rebook"],
)
domain.task(
    id="scheduling-09-room-conflict",
    description="Book a 45-minute 'Client demo' on 2026-02-19 at 10:00 with Marco Rossi and "
    "Priya Nair. "
    "Use Hudson if it is free; otherwise the smallest free room with at least 6 seats "
    "(Battery seats 6, Empire 12).",
    initial_state=make_default_state,
    verify=_client_demo,
    solve=_solve_client_demo,
    l_min=3,
    difficulty="medium",
    tags=["conflict", "room"],
)
domain.task(
    id="scheduling-10-time-zone-slot",
    description="Set up a 30-minute 'Sprint review' with Priya Nair (she works 09:00-17:00 "
    "London time) "
    "on 2026-02-24, at the earliest time that is inside both our working hours and free for both "
    "of us.",
    initial_state=make_default_state,
    verify=_books_earliest(["2026-02-24"], "00:00", 30, "Sprint review", [PRIYA]),
    solve=_solve_sprint_review,
    l_min=3,
    difficulty="medium",
    tags=["conflict", "time-zone"],
)
domain.task(
    id="scheduling-11-escalate-no-slot",
    description="Book a 2-hour 'Offsite planning' with Priya Nair and Tom Becker on 2026-02-17, "
    "inside "
    "everyone's working hours. Do not move or cancel any existing meeting.",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_no_slot,
    l_min=4,
    difficulty="medium",
    tags=["escalation-expected", "conflict"],
)
domain.task(
    id="scheduling-12-escalate-ambiguous-cancel",
    description="Cancel my meeting with Marco Rossi on 2026-02-24.",
    initial_state=make_default_state,
    verify=_escalates,
    solve=_solve_ambiguous,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "ambiguous"],
)
domain.task(
    id="scheduling-13-out-of-office-reschedule",
    description="Book a 30-minute 'Contract signing' with Tom Becker on 2026-02-25 at 10:00. If he "
    "can't make it, take the earliest time later that week that suits both of us.",
    initial_state=make_default_state,
    verify=_books_earliest(
        ["2026-02-25", "2026-02-26", "2026-02-27"], "10:00", 30, "Contract signing", [TOM]
    ),
    solve=_solve_contract,
    l_min=4,
    difficulty="complex",
    tags=["conflict", "next-free-slot"],
    escalation_acceptable=True,
)
