"""Pure calendar rules shared by the tools and the task verifiers (one definition, no drift).

Times are minutes since midnight in the calendar's time zone; intervals are half-open.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date as Date

from chaosproxy.domains.kit import ToolError
from chaosproxy.domains.scheduling.state import Meeting, Person, Room, SchedulingState

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2})$")


@dataclass(frozen=True)
class Busy:
    start: int
    end: int
    label: str
    meeting_id: str | None = None


def parse_date(value: str, field: str) -> Date:
    text = value.strip()
    if not _DATE.match(text):
        raise ToolError(
            f"{field} must be an ISO date YYYY-MM-DD, got {value!r}", status=422, field=field
        )
    try:
        return Date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            f"{field} {value!r} is not a calendar date", status=422, field=field
        ) from None


def parse_time(value: str, field: str) -> int:
    """'9:30' or '09:30' -> 570."""
    found = _TIME.match(value.strip())
    if not found or int(found.group(1)) > 23 or int(found.group(2)) > 59:
        raise ToolError(
            f"{field} must be a time HH:MM (24-hour), got {value!r}", status=422, field=field
        )
    return int(found.group(1)) * 60 + int(found.group(2))


def hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def normalise_topic(topic: str) -> str:
    """Topics compare case-insensitively, without surrounding quotes and extra whitespace."""
    return " ".join(topic.strip().strip("'\"").split()).casefold()


def person(state: SchedulingState, who: str, field: str) -> Person:
    key = " ".join(who.split()).casefold()
    for candidate in [state.owner, *state.people]:
        if key in {candidate.name.casefold(), candidate.email.casefold()}:
            return candidate
    names = ", ".join(p.name for p in state.people)
    raise ToolError(
        f"{field}: nobody called {who!r} in the directory ({names})", status=404, field=field
    )


def room(state: SchedulingState, which: str, field: str) -> Room:
    key = which.strip().casefold()
    for candidate in state.rooms:
        if key in {candidate.room_id, candidate.name.casefold()}:
            return candidate
    names = ", ".join(f"{r.name} ({r.capacity} seats)" for r in state.rooms)
    raise ToolError(f"{field}: unknown room {which!r}; rooms: {names}", status=404, field=field)


def working_window(state: SchedulingState, who: Person) -> tuple[int, int]:
    """A person's 09:00-17:00 local working day, in the calendar's time zone."""
    shift = (state.utc_offset_hours - who.utc_offset_hours) * 60
    start, end = (parse_time(t, "working_hours") for t in state.working_hours)
    return start + shift, end + shift


def scheduled_on(state: SchedulingState, date: str) -> list[Meeting]:
    return sorted(
        (m for m in state.meetings if m.date == date and m.status == "scheduled"),
        key=lambda m: (m.time, m.meeting_id),
    )


def busy_of(state: SchedulingState, owner: str, date: str) -> list[Busy]:
    """Busy time of the calendar owner, a colleague (by email) or a room (by id) on a date."""
    found: list[Busy] = []
    for meeting in scheduled_on(state, date):
        mine = owner == state.owner.email or owner in meeting.participants or owner == meeting.room
        if mine:
            found.append(
                Busy(
                    parse_time(meeting.time, "time"),
                    parse_time(meeting.end_time, "time"),
                    meeting.topic,
                    meeting.meeting_id,
                )
            )
    for block in state.busy:
        if block.owner == owner and block.date == date:
            found.append(
                Busy(parse_time(block.start, "start"), parse_time(block.end, "end"), block.label)
            )
    return sorted(found, key=lambda b: (b.start, b.end))


def clashes(state: SchedulingState, owner: str, date: str, start: int, end: int) -> list[Busy]:
    return [b for b in busy_of(state, owner, date) if b.start < end and start < b.end]


def earliest_slot(
    state: SchedulingState, date: str, after: int, duration: int, invitees: Iterable[str]
) -> int | None:
    """The earliest start >= `after` at which Dana and every invitee (emails) are free and inside
    their working hours for `duration` minutes; None if there is none that day."""
    people = [state.owner, *(person(state, email, "participants") for email in invitees)]
    windows = [working_window(state, p) for p in people]
    open_at, close_at = max(w[0] for w in windows), min(w[1] for w in windows)
    blocks = [b for p in people for b in busy_of(state, p.email, date)]
    for start in sorted({max(after, open_at)} | {b.end for b in blocks if b.end >= after}):
        end = start + duration
        if (
            start >= open_at
            and end <= close_at
            and not any(b.start < end and start < b.end for b in blocks)
        ):
            return start
    return None


def new_meetings(s0: SchedulingState, sf: SchedulingState) -> list[Meeting]:
    known = {m.meeting_id for m in s0.meetings}
    return [m for m in sf.meetings if m.meeting_id not in known]


def cancelled_ids(s0: SchedulingState, sf: SchedulingState) -> set[str]:
    """Meetings of the initial state that are no longer scheduled (or vanished)."""
    after = {m.meeting_id: m for m in sf.meetings}
    return {
        m.meeting_id
        for m in s0.meetings
        if m.status == "scheduled"
        and (m.meeting_id not in after or after[m.meeting_id].status != "scheduled")
    }


def existing_unchanged(
    s0: SchedulingState, sf: SchedulingState, cancelled: Iterable[str] = ()
) -> bool:
    """Exactly the named meetings were cancelled; every other initial meeting is as it was."""
    expected = set(cancelled)
    if cancelled_ids(s0, sf) != expected:
        return False
    after = {m.meeting_id: m for m in sf.meetings}
    return all(after.get(m.meeting_id) == m for m in s0.meetings if m.meeting_id not in expected)


def escalated(s0: SchedulingState, sf: SchedulingState) -> bool:
    return len(sf.escalations) > len(s0.escalations)
