"""Pure medical-records rules shared by the tools and the verifiers: lookups, slot availability,
and the side-effect checks that make a wrong booking or a stray cancellation fail a task.

Answer normalisation: patient and provider ids compare upper-case; ICD-10 codes upper-case with
the dot optional (E11.9 == e119); medication names case- and space-insensitively, without the
dose; dates as ISO YYYY-MM-DD.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date as Date

from chaosproxy.domains.kit import ToolError
from chaosproxy.domains.medical_records.state import (
    Appointment,
    MedicalAnswer,
    MedicalState,
    Patient,
    Provider,
    Slot,
)

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def normalise_name(name: str) -> str:
    return " ".join(name.split()).casefold()


def normalise_code(code: str) -> str:
    return code.strip().upper().replace(".", "")


def normalise_drug(name: str) -> str:
    return " ".join(name.split()).casefold()


def parse_date(value: str, field: str) -> str:
    if not _DATE.match(value.strip()):
        raise ToolError(
            f"{field} must be an ISO date YYYY-MM-DD, got {value!r}", status=422, field=field
        )
    try:
        return Date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise ToolError(
            f"{field} {value!r} is not a calendar date", status=422, field=field
        ) from None


def find_patient(state: MedicalState, patient_id: str) -> Patient:
    wanted = patient_id.strip().upper()
    for patient in state.patients:
        if patient.patient_id == wanted:
            return patient
    raise ToolError(f"patient {patient_id!r} does not exist", status=404, field="patient_id")


def find_provider(state: MedicalState, provider_id: str) -> Provider:
    wanted = provider_id.strip().upper()
    for provider in state.providers:
        if provider.provider_id == wanted:
            return provider
    raise ToolError(f"provider {provider_id!r} does not exist", status=404, field="provider_id")


def find_slot(state: MedicalState, slot_id: str) -> Slot:
    wanted = slot_id.strip().upper()
    for slot in state.slots:
        if slot.slot_id == wanted:
            return slot
    raise ToolError(f"slot {slot_id!r} does not exist", status=404, field="slot_id")


def find_appointment(state: MedicalState, appointment_id: str) -> Appointment:
    wanted = appointment_id.strip().upper()
    for appointment in state.appointments:
        if appointment.appointment_id == wanted:
            return appointment
    raise ToolError(
        f"appointment {appointment_id!r} does not exist", status=404, field="appointment_id"
    )


def specialties(state: MedicalState) -> list[str]:
    return sorted({p.specialty for p in state.providers})


def slot_taken(state: MedicalState, slot: Slot) -> bool:
    return any(a.slot_id == slot.slot_id and a.status == "booked" for a in state.appointments)


def slot_open(state: MedicalState, slot: Slot) -> bool:
    """Bookable: not held by a booked appointment and not already started."""
    return slot.start >= state.now and not slot_taken(state, slot)


def open_slots(
    state: MedicalState,
    *,
    specialty: str | None = None,
    provider_id: str | None = None,
    on_or_after: str | None = None,
    on_or_before: str | None = None,
) -> list[Slot]:
    """Open slots, earliest first, filtered by specialty, provider and date range."""
    by_id = {p.provider_id: p for p in state.providers}
    found = [
        s
        for s in state.slots
        if slot_open(state, s)
        and (
            specialty is None
            or normalise_name(by_id[s.provider_id].specialty) == normalise_name(specialty)
        )
        and (provider_id is None or s.provider_id == provider_id)
        and (on_or_after is None or s.start[:10] >= on_or_after)
        and (on_or_before is None or s.start[:10] <= on_or_before)
    ]
    return sorted(found, key=lambda s: (s.start, s.provider_id))


def earliest(slots: Iterable[Slot]) -> Slot | None:
    ranked = sorted(slots, key=lambda s: (s.start, s.provider_id))
    return ranked[0] if ranked else None


# ---- verifier helpers -------------------------------------------------------------------


def new_appointments(s0: MedicalState, sf: MedicalState) -> list[Appointment]:
    known = {a.appointment_id for a in s0.appointments}
    return [a for a in sf.appointments if a.appointment_id not in known]


def existing_untouched(s0: MedicalState, sf: MedicalState, except_ids: Iterable[str] = ()) -> bool:
    """Every appointment of the initial state is unchanged (bar the ones named)."""
    after = {a.appointment_id: a for a in sf.appointments}
    skip = set(except_ids)
    return all(
        after.get(a.appointment_id) == a for a in s0.appointments if a.appointment_id not in skip
    )


def records_untouched(s0: MedicalState, sf: MedicalState) -> bool:
    return (
        sf.patients == s0.patients
        and sf.conditions == s0.conditions
        and sf.medications == s0.medications
    )


def booked_exactly(s0: MedicalState, sf: MedicalState, bookings: Iterable[tuple[str, str]]) -> bool:
    """The episode booked exactly these (patient id, slot id) pairs and changed nothing else:
    no other appointment booked, cancelled or moved, and a booking cancelled again still fails."""
    made = sorted((a.patient_id, a.slot_id) for a in new_appointments(s0, sf))
    all_booked = all(a.status == "booked" for a in new_appointments(s0, sf))
    return (
        made == sorted(bookings)
        and all_booked
        and existing_untouched(s0, sf)
        and records_untouched(s0, sf)
    )


def nothing_changed(s0: MedicalState, sf: MedicalState) -> bool:
    return not new_appointments(s0, sf) and existing_untouched(s0, sf) and records_untouched(s0, sf)


def escalated(s0: MedicalState, sf: MedicalState) -> bool:
    return len(sf.escalations) > len(s0.escalations)


def last_answer(s0: MedicalState, sf: MedicalState) -> MedicalAnswer | None:
    return sf.answers[-1] if len(sf.answers) > len(s0.answers) else None


def codes_match(answer: MedicalAnswer, expected: Iterable[str]) -> bool:
    if answer.codes is None:
        return False
    return {normalise_code(c) for c in answer.codes} == {normalise_code(c) for c in expected}


def drugs_match(answer: MedicalAnswer, expected: Iterable[str]) -> bool:
    if answer.medications is None:
        return False
    return {normalise_drug(m) for m in answer.medications} == {normalise_drug(m) for m in expected}
