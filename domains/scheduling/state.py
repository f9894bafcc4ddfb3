"""The scheduling world: Dana Whitfield's calendar, colleagues' free/busy, meeting rooms.

All times are in the calendar's time zone (America/New_York, UTC-05:00 in February 2026);
colleagues abroad have their working hours converted into it. `today` is in state and meeting
ids come from `next_id`, so replays are reproducible.
"""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

WORKDAY = ("09:00", "17:00")


class Person(BaseModel):
    name: str
    email: str
    title: str
    timezone: str
    utc_offset_hours: int = Field(description="Offset of the person's local time in February 2026")


class Room(BaseModel):
    room_id: str
    name: str
    capacity: int
    floor: int


class BusyBlock(BaseModel):
    """Time a colleague or room is taken outside Dana's meetings (their own appointments)."""

    owner: str = Field(description="A person's email or a room id")
    date: str
    start: str
    end: str
    label: str = "busy"


class Meeting(BaseModel):
    meeting_id: str
    date: str
    time: str
    end_time: str
    duration_minutes: int
    topic: str
    participants: list[str] = Field(description="Emails of the invitees (the organizer excluded)")
    room: str | None = None
    status: Literal["scheduled", "cancelled"] = "scheduled"
    created_at: str = "2026-02-09T10:00:00-05:00"


class SchedulingAnswer(BaseModel):
    date: str | None = None
    time: str | None = None
    count: int | None = None


class SchedulingState(DomainState):
    today: str = "2026-02-16"
    now: str = "2026-02-16T08:30:00-05:00"
    timezone: str = "America/New_York"
    utc_offset_hours: int = -5
    working_hours: tuple[str, str] = WORKDAY
    owner: Person
    next_id: int = 100
    people: list[Person]
    rooms: list[Room]
    meetings: list[Meeting]
    busy: list[BusyBlock]
    answers: list[SchedulingAnswer] = Field(default_factory=list)


OWNER = Person(
    name="Dana Whitfield",
    email="dana@northwind.example",
    title="Engineering Manager",
    timezone="America/New_York",
    utc_offset_hours=-5,
)
PEOPLE = [
    Person(
        name="Priya Nair",
        email="priya@northwind.example",
        title="Product Lead",
        timezone="Europe/London",
        utc_offset_hours=0,
    ),
    Person(
        name="Marco Rossi",
        email="marco@northwind.example",
        title="Staff Engineer",
        timezone="America/New_York",
        utc_offset_hours=-5,
    ),
    Person(
        name="Tom Becker",
        email="tom@northwind.example",
        title="Engineer",
        timezone="Europe/Berlin",
        utc_offset_hours=1,
    ),
    Person(
        name="Lena Park",
        email="lena@northwind.example",
        title="Designer",
        timezone="America/Los_Angeles",
        utc_offset_hours=-8,
    ),
]
ROOMS = [
    Room(room_id="hudson", name="Hudson", capacity=8, floor=4),
    Room(room_id="liberty", name="Liberty", capacity=4, floor=4),
    Room(room_id="battery", name="Battery", capacity=6, floor=5),
    Room(room_id="empire", name="Empire", capacity=12, floor=5),
]

_P, _M, _T, _L = (p.email for p in PEOPLE)
WEEKDAYS = [f"2026-02-{d}" for d in (16, 17, 18, 19, 20, 23, 24, 25, 26, 27)]

# (date, start, end, topic, participants, room, status)
_MEETINGS: list[tuple[str, str, str, str, list[str], str | None, str]] = [
    ("2026-02-17", "10:00", "11:00", "Hiring sync", [_M], "liberty", "scheduled"),
    (
        "2026-02-17",
        "12:00",
        "13:00",
        "Lunch & learn: observability",
        [_M, _L],
        "empire",
        "scheduled",
    ),
    ("2026-02-17", "14:00", "15:30", "Roadmap review", [_M, _L], "hudson", "scheduled"),
    ("2026-02-18", "10:30", "11:00", "Weekly 1:1 with Tom", [_T], None, "scheduled"),
    ("2026-02-18", "11:00", "12:00", "Customer call - Acme", [_M], None, "scheduled"),
    ("2026-02-18", "13:00", "13:30", "Interview debrief", [_M], "liberty", "scheduled"),
    ("2026-02-18", "16:00", "17:00", "Design critique", [_L], "battery", "scheduled"),
    ("2026-02-19", "11:30", "12:00", "Budget check-in", [_P], None, "scheduled"),
    ("2026-02-19", "15:00", "15:30", "Vendor call", [_M], None, "scheduled"),
    ("2026-02-20", "09:30", "10:00", "Coffee with Marco", [_M], None, "scheduled"),
    ("2026-02-20", "13:00", "14:00", "Incident review", [_M, _L], "hudson", "scheduled"),
    ("2026-02-23", "10:00", "11:00", "Quarterly OKR draft", [_P], None, "scheduled"),
    ("2026-02-23", "14:00", "14:30", "Security training", [], None, "cancelled"),
    ("2026-02-24", "10:00", "10:30", "Interview: backend candidate", [_M], "liberty", "scheduled"),
    ("2026-02-24", "11:00", "11:30", "Pipeline review", [_M], None, "scheduled"),
    ("2026-02-24", "14:00", "15:00", "Offsite logistics", [_M, _L], "battery", "scheduled"),
    ("2026-02-25", "15:00", "16:00", "Architecture forum", [_M, _L], "empire", "scheduled"),
    ("2026-02-26", "13:30", "14:00", "1:1 with Lena", [_L], None, "scheduled"),
    ("2026-02-27", "11:00", "12:00", "Sprint planning", [_P, _M, _T], "hudson", "scheduled"),
]

# (owner, date, start, end, label)
_BUSY: list[tuple[str, str, str, str, str]] = [
    (_M, "2026-02-18", "12:00", "13:00", "Lunch"),
    (_M, "2026-02-18", "14:00", "15:00", "Focus time"),
    (_P, "2026-02-17", "10:00", "11:00", "Exec staff"),
    (_T, "2026-02-17", "03:00", "04:00", "Team sync"),
    (_P, "2026-02-24", "09:15", "10:00", "Customer visit"),
    (_T, "2026-02-25", "03:00", "11:00", "Out of office"),
    (_T, "2026-02-26", "09:15", "10:00", "Dentist"),
    ("hudson", "2026-02-19", "10:00", "11:00", "Sales all-hands"),
    ("battery", "2026-02-19", "09:30", "10:30", "Recruiting interviews"),
    ("empire", "2026-02-19", "14:00", "16:00", "Board dry run"),
]


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def seed_meetings() -> list[Meeting]:
    standups = [
        Meeting(
            meeting_id=f"MTG-{index + 1:04d}",
            date=day,
            time="09:00",
            end_time="09:15",
            duration_minutes=15,
            topic="Team standup",
            participants=[_P, _T],
        )
        for index, day in enumerate(WEEKDAYS)
    ]
    others = [
        Meeting(
            meeting_id=f"MTG-{index + 11:04d}",
            date=day,
            time=start,
            end_time=end,
            duration_minutes=_minutes(end) - _minutes(start),
            topic=topic,
            participants=list(invitees),
            room=room,
            status="cancelled" if status == "cancelled" else "scheduled",
        )
        for index, (day, start, end, topic, invitees, room, status) in enumerate(_MEETINGS)
    ]
    return standups + others


def seed_busy() -> list[BusyBlock]:
    return [BusyBlock(owner=o, date=d, start=s, end=e, label=label) for o, d, s, e, label in _BUSY]


def make_default_state() -> SchedulingState:
    """The calendar a fresh episode (and `chaosproxy up`) gets."""
    return SchedulingState(
        owner=OWNER.model_copy(),
        people=[p.model_copy() for p in PEOPLE],
        rooms=[r.model_copy() for r in ROOMS],
        meetings=seed_meetings(),
        busy=seed_busy(),
    )
