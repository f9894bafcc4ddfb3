"""Scheduling domain over a real server: realistic records, conflict rules, 4xx naming the field,
the journal, and verifiers that catch wrong slots and collateral cancellations."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import McpToolClient
from chaosproxy.domains.scheduling import domain
from chaosproxy.domains.scheduling.state import SchedulingState
from chaosproxy.domains.scheduling.tools import book_meeting, cancel_meeting
from domain_driver import RestEpisode, fresh_episode

pytestmark = pytest.mark.timeout(60)
ISO_NY = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00-05:00$")


Episode = RestEpisode[SchedulingState]


@pytest.fixture
async def episode(domain_url: Callable[[str], str]) -> AsyncIterator[Episode]:
    async with fresh_episode(domain_url("scheduling"), SchedulingState) as created:
        yield created


async def test_check_calendar_shows_own_colleague_and_room_days(episode: Episode) -> None:
    mine = await episode.ok("check_calendar", date="2026-02-18")
    assert mine["weekday"] == "Wednesday" and mine["calendar"]["kind"] == "person"
    assert [e["time"] for e in mine["events"]] == ["09:00", "10:30", "11:00", "13:00", "16:00"]
    assert all(
        ISO_NY.match(e["start"]) and e["meeting_id"].startswith("MTG-") for e in mine["events"]
    )
    priya = await episode.ok(
        "check_calendar", date="2026-02-24", calendar="priya@northwind.example"
    )
    assert priya["calendar"]["working_hours"] == {"start": "04:00", "end": "12:00"}
    assert priya["calendar"]["timezone"] == "Europe/London"
    assert {"Customer visit", "Team standup"} <= {e["title"] for e in priya["events"]}
    hudson = await episode.ok("check_calendar", date="2026-02-19", calendar="Hudson")
    assert hudson["calendar"]["kind"] == "room" and [e["title"] for e in hudson["events"]] == [
        "Sales all-hands"
    ]


async def test_book_then_list_then_cancel_is_journaled(episode: Episode) -> None:
    booked = await episode.ok(
        "book_meeting",
        date="2026-02-19",
        time="14:00",
        topic="  Design   sync ",
        duration_minutes=60,
        participants=["Marco Rossi", "lena@northwind.example"],
        room="hudson",
    )
    assert (
        booked["topic"] == "Design sync"
        and booked["end_time"] == "15:00"
        and booked["status"] == "scheduled"
    )
    assert booked["start"] == "2026-02-19T14:00:00-05:00" and booked["room"]["capacity"] == 8
    assert [p["name"] for p in booked["participants"]] == ["Marco Rossi", "Lena Park"]
    assert booked["organizer"]["email"] == "dana@northwind.example"
    listing = await episode.ok("list_meetings", start_date="2026-02-19", end_date="2026-02-19")
    assert booked["meeting_id"] in [m["meeting_id"] for m in listing["meetings"]]
    assert listing["total"] == len(listing["meetings"])
    cancelled = await episode.ok("cancel_meeting", date="2026-02-19", time="14:00")
    assert (
        cancelled["meeting"]["meeting_id"] == booked["meeting_id"]
        and cancelled["meeting"]["status"] == "cancelled"
    )
    journal = await episode.oracle("journal")
    assert [e["tool"] for e in journal["entries"]] == ["book_meeting", "cancel_meeting"]
    with_cancelled = await episode.ok(
        "list_meetings", start_date="2026-02-19", end_date="2026-02-19", include_cancelled=True
    )
    assert with_cancelled["total"] == listing["total"]


BAD_INPUTS: list[tuple[str, dict[str, Any], int, str]] = [
    ("book_meeting", {"date": "2026-02-18", "time": "10:00"}, 422, "topic"),
    ("book_meeting", {"date": "18.02.2026", "time": "10:00", "topic": "x"}, 422, "date"),
    ("book_meeting", {"date": "2026-02-21", "time": "10:00", "topic": "x"}, 422, "date"),
    ("book_meeting", {"date": "2026-02-10", "time": "10:00", "topic": "x"}, 422, "date"),
    ("book_meeting", {"date": "2026-02-18", "time": "25:00", "topic": "x"}, 422, "time"),
    ("book_meeting", {"date": "2026-02-18", "time": "08:00", "topic": "x"}, 422, "time"),
    (
        "book_meeting",
        {"date": "2026-02-18", "time": "10:00", "topic": "x", "duration_minutes": "long"},
        422,
        "duration_minutes",
    ),
    (
        "book_meeting",
        {"date": "2026-02-18", "time": "10:00", "topic": "x", "duration_minutes": 5},
        422,
        "duration_minutes",
    ),
    ("book_meeting", {"date": "2026-02-18", "time": "11:00", "topic": "x"}, 409, "time"),
    (
        "book_meeting",
        {"date": "2026-02-18", "time": "12:00", "topic": "x", "participants": ["Marco Rossi"]},
        409,
        "participants",
    ),
    (
        "book_meeting",
        {"date": "2026-02-18", "time": "14:00", "topic": "x", "participants": ["Priya Nair"]},
        422,
        "participants",
    ),
    (
        "book_meeting",
        {"date": "2026-02-18", "time": "10:00", "topic": "x", "participants": ["Zed"]},
        404,
        "participants",
    ),
    (
        "book_meeting",
        {"date": "2026-02-19", "time": "10:00", "topic": "x", "room": "Hudson"},
        409,
        "room",
    ),
    (
        "book_meeting",
        {"date": "2026-02-19", "time": "14:00", "topic": "x", "room": "Attic"},
        404,
        "room",
    ),
    (
        "book_meeting",
        {
            "date": "2026-02-19",
            "time": "14:00",
            "topic": "x",
            "room": "Liberty",
            "participants": ["Marco Rossi", "Lena Park", "Priya Nair", "Tom Becker"],
        },
        422,
        "participants",
    ),
    ("check_calendar", {"date": "2026-02-18", "calendar": "Nobody"}, 404, "calendar"),
    ("check_calendar", {}, 422, "date"),
    ("cancel_meeting", {"date": "2026-02-18", "time": "10:15"}, 404, "time"),
    ("list_meetings", {"start_date": "2026-02-20", "end_date": "2026-02-16"}, 422, "end_date"),
    ("list_meetings", {"start_date": "2026-02-16", "end_date": "2026-06-16"}, 422, "end_date"),
    ("submit_answer", {}, 422, "date"),
    ("submit_answer", {"count": "many"}, 422, "count"),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    BAD_INPUTS,
    ids=[f"{b[0]}-{b[3]}-{b[2]}-{i}" for i, b in enumerate(BAD_INPUTS)],
)
async def test_bad_input_is_a_4xx_naming_the_field(
    episode: Episode, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await episode.raw(tool, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and error["message"]
    assert (await episode.oracle("journal"))["entries"] == []


async def test_answers_are_normalised(episode: Episode) -> None:
    receipt = await episode.ok("submit_answer", date="2026-02-18", time="9:05")
    assert receipt["answer"] == {"date": "2026-02-18", "time": "09:05", "count": None}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_books_and_reports_conflicts(domain_url: Callable[[str], str], mode: str) -> None:
    base = domain_url("scheduling")
    episode_id = f"mcp-{mode}-{uuid.uuid4().hex[:8]}"
    async with McpToolClient(f"{base}/mcp", episode=episode_id, mode=mode) as client:
        listed = {tool["name"]: tool for tool in await client.list_tools()}
        assert set(listed["book_meeting"]["inputSchema"]["required"]) == {"date", "time", "topic"}
        with pytest.raises(ToolCallFailed) as failed:
            await client.call("book_meeting", date="2026-02-18", time="11:00", topic="Clash")
        assert failed.value.status == 409 and "Customer call" in failed.value.message
        booked = await client.call(
            "book_meeting", date="2026-02-18", time="10:00", topic="Budget review"
        )
        assert booked["meeting_id"] == "MTG-0100"
    async with httpx.AsyncClient() as http:
        journal = (await http.get(f"{base}/_oracle/episodes/{episode_id}/journal")).json()
    assert [(e["tool"], e["transport"]) for e in journal["entries"]] == [("book_meeting", "mcp")]


def _book(
    date: str, time: str, topic: str, minutes: int, who: list[str], room: str | None = None
) -> Callable[[SchedulingState], SchedulingState]:
    def apply(state: SchedulingState) -> SchedulingState:
        after = state.model_copy(deep=True)
        book_meeting(after, date, time, topic, minutes, who, room)
        return after

    return apply


def _cancel_then(
    date: str, time: str, then: Callable[[SchedulingState], SchedulingState]
) -> Callable[[SchedulingState], SchedulingState]:
    def apply(state: SchedulingState) -> SchedulingState:
        after = state.model_copy(deep=True)
        cancel_meeting(after, date, time)
        return then(after)

    return apply


OUTCOMES: list[tuple[str, Callable[[SchedulingState], SchedulingState], bool]] = [
    (
        "scheduling-06-conflict-next-free-slot",
        _book("2026-02-18", "15:00", "Quarterly planning", 60, ["Marco Rossi"]),
        True,
    ),
    (
        "scheduling-06-conflict-next-free-slot",
        _book("2026-02-18", "15:00", "quarterly PLANNING", 60, ["Marco Rossi"]),
        True,
    ),
    (
        "scheduling-06-conflict-next-free-slot",
        _book("2026-02-18", "15:00", "Quarterly planning", 30, ["Marco Rossi"]),
        False,
    ),
    (
        "scheduling-06-conflict-next-free-slot",
        _book("2026-02-18", "15:00", "Quarterly planning", 60, []),
        False,
    ),
    (
        "scheduling-06-conflict-next-free-slot",
        _cancel_then(
            "2026-02-18",
            "11:00",
            _book("2026-02-18", "11:00", "Quarterly planning", 60, ["Marco Rossi"]),
        ),
        False,
    ),
    (
        "scheduling-09-room-conflict",
        _book("2026-02-19", "10:00", "Client demo", 45, ["Marco Rossi", "Priya Nair"], "empire"),
        True,
    ),
    (
        "scheduling-09-room-conflict",
        _book("2026-02-19", "10:00", "Client demo", 45, ["Marco Rossi", "Priya Nair"], "liberty"),
        False,
    ),
    (
        "scheduling-10-time-zone-slot",
        _book("2026-02-24", "10:30", "Sprint review", 30, ["Priya Nair"]),
        True,
    ),
    (
        "scheduling-10-time-zone-slot",
        _book("2026-02-24", "11:30", "Sprint review", 30, ["Priya Nair"]),
        False,
    ),
    (
        "scheduling-11-escalate-no-slot",
        _book("2026-02-17", "15:30", "Offsite planning", 90, ["Marco Rossi"]),
        False,
    ),
    (
        "scheduling-13-out-of-office-reschedule",
        _book("2026-02-26", "10:00", "Contract signing", 30, ["Tom Becker"]),
        True,
    ),
    (
        "scheduling-13-out-of-office-reschedule",
        _book("2026-02-27", "09:15", "Contract signing", 30, ["Tom Becker"]),
        False,
    ),
    ("scheduling-03-cancel-meeting", _cancel_then("2026-02-18", "11:00", lambda s: s), False),
]


@pytest.mark.parametrize(("task_id", "outcome", "expected"), OUTCOMES)
def test_verifiers_judge_outcomes(
    task_id: str, outcome: Callable[[SchedulingState], SchedulingState], expected: bool
) -> None:
    task = domain.tasks[task_id]
    s0 = task.initial_state()
    assert task.verify(s0, outcome(s0)) is expected


def test_harmful_actions_target_real_meetings() -> None:
    state = domain.default_state()
    for action in domain.harmful_actions:
        assert set(action.arguments) <= {p.name for p in domain.tools[action.tool].parameters}
        if action.tool == "cancel_meeting":
            after = state.model_copy(deep=True)
            result = cancel_meeting(after, **action.arguments)
            assert result.meeting.status == "cancelled"
    assert not domain.tools["book_meeting"].idempotent
