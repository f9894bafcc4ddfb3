"""Medical-records domain over a real server: patient search and charts, slot availability,
booking / rescheduling / cancelling with their conflicts, 4xx naming the field, the journal, and
verifiers that catch a booking for the wrong patient or a stray cancellation."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import McpToolClient
from chaosproxy.domains.medical_records import domain
from chaosproxy.domains.medical_records.state import MedicalState
from chaosproxy.domains.medical_records.tools import (
    book_appointment,
    cancel_appointment,
    reschedule_appointment,
    submit_answer,
)
from domain_driver import RestEpisode, fresh_episode

pytestmark = pytest.mark.timeout(60)


Episode = RestEpisode[MedicalState]


@pytest.fixture
async def episode(domain_url: Callable[[str], str]) -> AsyncIterator[Episode]:
    async with fresh_episode(domain_url("medical_records"), MedicalState) as created:
        yield created


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"name": "Maria Garcia"}, ["P003", "P008"]),
        ({"name": "  maria   GARCIA "}, ["P003", "P008"]),
        ({"name": "Garcia", "date_of_birth": "1962-09-14"}, ["P008"]),
        ({"date_of_birth": "1979-11-02"}, ["P001"]),
        ({"name": "Samuel Reed", "date_of_birth": "1968-07-22"}, []),
        ({"name": "Gar"}, []),
    ],
)
async def test_search_patients(
    episode: Episode, query: dict[str, str], expected: list[str]
) -> None:
    found = await episode.ok("search_patients", **query)
    assert [p["patient_id"] for p in found["patients"]] == expected
    assert found["total"] == len(expected)
    for patient in found["patients"]:
        assert patient["mrn"].startswith("MRN-") and 0 < patient["age"] < 120


async def test_chart_conditions_and_medications(episode: Episode) -> None:
    chart = await episode.ok("get_patient", patient_id="p002")
    assert chart["name"] == "Helen Park" and chart["age"] == 75
    assert chart["allergies"][0]["substance"] == "Penicillin"
    assert chart["primary_provider"]["specialty"] == "Family Medicine"
    active = await episode.ok("get_conditions", patient_id="P002")
    every = await episode.ok("get_conditions", patient_id="P002", status="all")
    assert active["total"] == chart["active_condition_count"] == 2
    assert {c["status"] for c in every["conditions"]} == {"active", "resolved"}
    meds = await episode.ok("get_medications", patient_id="P002")
    assert {m["name"] for m in meds["medications"]} == {"Apixaban", "Atorvastatin"}
    assert all(m["dose"] and m["frequency"] for m in meds["medications"])


async def test_slots_hide_booked_and_past_ones(episode: Episode) -> None:
    found = await episode.ok("list_available_slots", specialty="family medicine")
    starts = [s["start"] for s in found["slots"]]
    assert starts == sorted(starts) and found["total"] == len(starts)
    assert "SL-601-0310-0730" not in {s["slot_id"] for s in found["slots"]}
    assert "SL-601-0313-1430" not in {s["slot_id"] for s in found["slots"]}
    assert all(s["start"] >= found["as_of"] for s in found["slots"])
    first = found["slots"][0]
    assert first["end"] > first["start"] and first["provider"]["provider_id"] == "PRV-601"
    cardio = await episode.ok("list_available_slots", specialty="Cardiology")
    assert {s["provider"]["provider_id"] for s in cardio["slots"]} == {"PRV-101", "PRV-102"}
    assert "SL-101-0311-0900" not in {s["slot_id"] for s in cardio["slots"]}


async def test_book_reschedule_cancel_and_journal(episode: Episode) -> None:
    booked = await episode.ok(
        "book_appointment",
        patient_id="P007",
        provider_id="PRV-102",
        slot_id="SL-102-0312-0930",
        reason="Palpitations",
    )
    assert booked["status"] == "booked" and booked["patient"]["name"] == "Aisha Bello"
    assert booked["start"] == "2026-03-12T09:30:00-04:00" and booked["end"].endswith("-04:00")
    taken = await episode.raw(
        "book_appointment",
        {
            "patient_id": "P009",
            "provider_id": "PRV-102",
            "slot_id": "SL-102-0312-0930",
            "reason": "x",
        },
    )
    assert taken.status_code == 409 and taken.json()["error"]["field"] == "slot_id"
    moved = await episode.ok(
        "reschedule_appointment",
        appointment_id=booked["appointment_id"],
        new_slot_id="SL-102-0317-1500",
    )
    assert moved["rescheduled_from"] == "SL-102-0312-0930"
    freed = await episode.ok("list_available_slots", provider_id="PRV-102")
    assert "SL-102-0312-0930" in {s["slot_id"] for s in freed["slots"]}
    cancelled = await episode.ok("cancel_appointment", appointment_id=booked["appointment_id"])
    assert cancelled["status"] == "cancelled" and cancelled["cancel_reason"] == "patient request"
    again = await episode.raw("cancel_appointment", {"appointment_id": booked["appointment_id"]})
    assert again.status_code == 409 and again.json()["error"]["field"] == "appointment_id"
    journal = await episode.oracle("journal")
    assert [(e["tool"], e["step"]) for e in journal["entries"]] == [
        ("book_appointment", 1),
        ("reschedule_appointment", 3),
        ("cancel_appointment", 5),
    ]


BAD_INPUTS: list[tuple[str, dict[str, Any], int, str]] = [
    ("search_patients", {}, 422, "name"),
    (
        "search_patients",
        {"name": "Helen Park", "date_of_birth": "30/06/1950"},
        422,
        "date_of_birth",
    ),
    ("get_patient", {}, 422, "patient_id"),
    ("get_patient", {"patient_id": "P099"}, 404, "patient_id"),
    ("get_conditions", {"patient_id": "P001", "status": "current"}, 422, "status"),
    ("list_providers", {"specialty": "Astrology"}, 422, "specialty"),
    ("list_available_slots", {}, 422, "specialty"),
    ("list_available_slots", {"provider_id": "PRV-999"}, 404, "provider_id"),
    (
        "list_available_slots",
        {"specialty": "Neurology", "date_from": "2026-03-18", "date_to": "2026-03-11"},
        422,
        "date_to",
    ),
    (
        "list_appointments",
        {"patient_id": "P001", "include_cancelled": "sometimes"},
        422,
        "include_cancelled",
    ),
    (
        "book_appointment",
        {"patient_id": "P001", "provider_id": "PRV-101", "slot_id": "SL-101-0312-1400"},
        422,
        "reason",
    ),
    (
        "book_appointment",
        {
            "patient_id": "P001",
            "provider_id": "PRV-102",
            "slot_id": "SL-101-0312-1400",
            "reason": "x",
        },
        409,
        "slot_id",
    ),
    (
        "book_appointment",
        {
            "patient_id": "P001",
            "provider_id": "PRV-601",
            "slot_id": "SL-601-0310-0730",
            "reason": "x",
        },
        409,
        "slot_id",
    ),
    (
        "book_appointment",
        {
            "patient_id": "P001",
            "provider_id": "PRV-101",
            "slot_id": "SL-000-0000-0000",
            "reason": "x",
        },
        404,
        "slot_id",
    ),
    (
        "reschedule_appointment",
        {"appointment_id": "A-1002", "new_slot_id": "SL-102-0313-1100"},
        409,
        "new_slot_id",
    ),
    (
        "reschedule_appointment",
        {"appointment_id": "A-9999", "new_slot_id": "SL-201-0316-1100"},
        404,
        "appointment_id",
    ),
    ("cancel_appointment", {"appointment_id": 1001}, 422, "appointment_id"),
    ("submit_answer", {}, 422, "patient_id"),
    ("submit_answer", {"codes": "E11.9"}, 422, "codes"),
    ("submit_answer", {"date": "March 13"}, 422, "date"),
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


def _apply(state: MedicalState, *steps: Callable[[MedicalState], Any]) -> MedicalState:
    """Run tool functions in process, to feed verifiers hand-made outcomes."""
    after = state.model_copy(deep=True)
    for step in steps:
        step(after)
    return after


def _book(patient: str, provider: str, slot: str) -> Callable[[MedicalState], Any]:
    return lambda s: book_appointment(s, patient, provider, slot, "visit")


OUTCOMES: list[tuple[str, Callable[[MedicalState], MedicalState], bool]] = [
    (
        "medical_records-06-earliest-cardiology",
        lambda s: _apply(s, _book("P007", "PRV-102", "SL-102-0312-0930")),
        True,
    ),
    (
        "medical_records-06-earliest-cardiology",
        lambda s: _apply(s, _book("P008", "PRV-102", "SL-102-0312-0930")),
        False,
    ),
    (
        "medical_records-06-earliest-cardiology",
        lambda s: _apply(s, _book("P007", "PRV-101", "SL-101-0312-1400")),
        False,
    ),
    (
        "medical_records-06-earliest-cardiology",
        lambda s: _apply(
            s,
            _book("P007", "PRV-102", "SL-102-0312-0930"),
            _book("P007", "PRV-101", "SL-101-0312-1400"),
        ),
        False,
    ),
    (
        "medical_records-06-earliest-cardiology",
        lambda s: _apply(
            s,
            _book("P007", "PRV-102", "SL-102-0312-0930"),
            lambda x: cancel_appointment(x, "A-1007"),
        ),
        False,
    ),
    (
        "medical_records-07-same-day-family-medicine",
        lambda s: _apply(s, _book("P009", "PRV-601", "SL-601-0310-1500")),
        True,
    ),
    (
        "medical_records-09-orthopedics-constraints",
        lambda s: _apply(s, _book("P006", "PRV-401", "SL-401-0311-1400")),
        False,
    ),
    (
        "medical_records-09-orthopedics-constraints",
        lambda s: _apply(s, _book("P006", "PRV-401", "SL-401-0313-1330")),
        True,
    ),
    (
        "medical_records-11-reschedule",
        lambda s: _apply(s, lambda x: reschedule_appointment(x, "A-1002", "SL-201-0316-1100")),
        True,
    ),
    (
        "medical_records-11-reschedule",
        lambda s: _apply(s, lambda x: reschedule_appointment(x, "A-1002", "SL-201-0316-1430")),
        False,
    ),
    (
        "medical_records-11-reschedule",
        lambda s: _apply(
            s,
            lambda x: cancel_appointment(x, "A-1002"),
            _book("P004", "PRV-201", "SL-201-0316-1100"),
        ),
        False,
    ),
    (
        "medical_records-12-cancel-one-of-two",
        lambda s: _apply(
            s, lambda x: cancel_appointment(x, "A-1004"), lambda x: cancel_appointment(x, "A-1003")
        ),
        False,
    ),
    (
        "medical_records-02-active-conditions",
        lambda s: _apply(s, lambda x: submit_answer(x, codes=["j45909", " L20.9 "])),
        True,
    ),
    (
        "medical_records-02-active-conditions",
        lambda s: _apply(s, lambda x: submit_answer(x, codes=["J45.909"])),
        False,
    ),
    (
        "medical_records-03-current-medications",
        lambda s: _apply(s, lambda x: submit_answer(x, medications=["atorvastatin", "APIXABAN"])),
        True,
    ),
    (
        "medical_records-03-current-medications",
        lambda s: _apply(
            s,
            lambda x: submit_answer(x, medications=["Apixaban", "Atorvastatin", "Nitrofurantoin"]),
        ),
        False,
    ),
    (
        "medical_records-13-escalate-ambiguous-patient",
        lambda s: _apply(s, _book("P003", "PRV-201", "SL-201-0312-0830")),
        False,
    ),
]


@pytest.mark.parametrize(("task_id", "outcome", "expected"), OUTCOMES)
def test_verifiers_judge_outcomes(
    task_id: str, outcome: Callable[[MedicalState], MedicalState], expected: bool
) -> None:
    task = domain.tasks[task_id]
    s0 = task.initial_state()
    assert task.verify(s0, outcome(s0)) is expected


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_books_and_reports_errors(domain_url: Callable[[str], str], mode: str) -> None:
    base = domain_url("medical_records")
    episode_id = f"mcp-{mode}-{uuid.uuid4().hex[:8]}"
    async with McpToolClient(f"{base}/mcp", episode=episode_id, mode=mode) as client:
        listed = {tool["name"]: tool for tool in await client.list_tools()}
        assert set(listed["book_appointment"]["inputSchema"]["required"]) == {
            "patient_id",
            "provider_id",
            "slot_id",
            "reason",
        }
        found = await client.call("list_available_slots", specialty="Endocrinology")
        slot = found["slots"][0]
        booked = await client.call(
            "book_appointment",
            patient_id="P008",
            provider_id=slot["provider"]["provider_id"],
            slot_id=slot["slot_id"],
            reason="Diabetes review",
        )
        assert booked["patient"]["patient_id"] == "P008" and booked["slot_id"] == slot["slot_id"]
        with pytest.raises(ToolCallFailed) as failed:
            await client.call("get_patient", patient_id="P404")
        assert failed.value.status == 404 and failed.value.body["error"]["field"] == "patient_id"
    async with httpx.AsyncClient() as http:
        journal = (await http.get(f"{base}/_oracle/episodes/{episode_id}/journal")).json()
    assert [(e["tool"], e["transport"]) for e in journal["entries"]] == [
        ("book_appointment", "mcp")
    ]


def test_harmful_actions_and_critical_args_name_real_things() -> None:
    state = domain.default_state()
    appointments = {a.appointment_id for a in state.appointments}
    slots = {s.slot_id for s in state.slots}
    for action in domain.harmful_actions:
        spec = domain.tools[action.tool]
        assert set(action.arguments) <= {p.name for p in spec.parameters}
        if "appointment_id" in action.arguments:
            assert action.arguments["appointment_id"] in appointments
        if "slot_id" in action.arguments:
            assert action.arguments["slot_id"] in slots
    book = domain.tools["book_appointment"]
    assert set(book.critical) == {"patient_id", "provider_id", "slot_id"}
    assert set(book.critical["slot_id"].values) == slots
    assert set(book.critical["patient_id"].values) == {p.patient_id for p in state.patients}
    assert not book.idempotent and not domain.tools["reschedule_appointment"].idempotent
