"""Verifier building blocks: typed judgements of a final state against the initial one."""

from __future__ import annotations

from chaosproxy.domains.healthcare.dosing import DoseComputation, compute_dose, latest_lab
from chaosproxy.domains.healthcare.state import (
    HealthcareAnswer,
    HealthcareState,
    Prescription,
    TreatmentPlan,
)


def new_prescriptions(s0: HealthcareState, sf: HealthcareState) -> list[Prescription]:
    return sf.prescriptions[len(s0.prescriptions) :]


def new_plans(s0: HealthcareState, sf: HealthcareState) -> list[TreatmentPlan]:
    return sf.treatment_plans[len(s0.treatment_plans) :]


def no_orders(s0: HealthcareState, sf: HealthcareState) -> bool:
    """Nothing prescribed, planned or ordered for anyone."""
    return (
        sf.prescriptions == s0.prescriptions
        and sf.treatment_plans == s0.treatment_plans
        and sf.protocol_orders == s0.protocol_orders
    )


def records_unchanged(s0: HealthcareState, sf: HealthcareState) -> bool:
    return s0.records == sf.records


def escalated(s0: HealthcareState, sf: HealthcareState) -> bool:
    return len(sf.escalations) > len(s0.escalations)


def last_answer(sf: HealthcareState) -> HealthcareAnswer | None:
    return sf.answers[-1] if sf.answers else None


def expected_dose(state: HealthcareState, patient_id: str, drug: str) -> DoseComputation:
    """The dose the calculator gives with the hospital weight and the latest CrCl."""
    records = state.records_of(patient_id)
    monograph = state.drug(drug)
    hospital = state.record(patient_id, "hospital")
    crcl = latest_lab(records, "creatinine_clearance")
    assert monograph is not None and hospital is not None and crcl is not None
    return compute_dose(monograph, hospital.weight_kg, crcl.value)


def only_prescription(
    s0: HealthcareState, sf: HealthcareState, patient_id: str, drug: str, duration_days: int
) -> bool:
    """Exactly one new prescription: this drug for this patient at the calculated dose."""
    created = new_prescriptions(s0, sf)
    if len(created) != 1 or new_plans(s0, sf) or sf.protocol_orders != s0.protocol_orders:
        return False
    rx = created[0]
    dose = expected_dose(s0, patient_id, drug)
    return (
        rx.patient_id == patient_id
        and rx.drug == drug
        and dose.dose_mg is not None
        and abs(rx.dose_mg - dose.dose_mg) < 1e-6
        and rx.frequency == dose.frequency
        and rx.duration_days == duration_days
        and rx.status == "active"
    )
