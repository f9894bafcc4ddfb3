"""Writes: prescriptions, treatment plans, protocol orders, medication and allergy changes,
and typed answers.

Like a real order-entry system, prescribe and create_treatment_plan accept an order that
raises allergy, contraindication or interaction alerts and return them as warnings (the
clinician may override); only a dose above the maximum single dose is refused outright.
That keeps unsafe orders visible to the oracle instead of silently impossible.
"""

from __future__ import annotations

from typing import Annotated

from chaosproxy.domains.healthcare.domain import domain
from chaosproxy.domains.healthcare.dosing import allergy_conflicts, interactions_among
from chaosproxy.domains.healthcare.models import (
    AllergyChange,
    AnswerReceipt,
    MedicationChange,
    PlanResult,
    PrescriptionResult,
    ProtocolOrderResult,
)
from chaosproxy.domains.healthcare.state import (
    Drug,
    Frequency,
    HealthcareAnswer,
    HealthcareState,
    PlanItem,
    Prescription,
    ProtocolOrder,
    Severity,
    Source,
    TreatmentPlan,
)
from chaosproxy.domains.healthcare.tools_clinical import (
    DRUG_NAMES,
    PATIENT_IDS,
    DrugName,
    PatientId,
    require_drug,
    require_patient,
)
from chaosproxy.domains.kit import CriticalArg, ToolError
from pydantic import BaseModel, Field


def current_medication(state: HealthcareState, patient_id: str) -> list[str]:
    """Active drugs in any record plus active prescriptions written in this episode."""
    drugs = {
        m.drug
        for record in state.records_of(patient_id)
        for m in record.medications
        if m.status == "active"
    }
    drugs |= {
        p.drug for p in state.prescriptions if p.patient_id == patient_id and p.status == "active"
    }
    return sorted(drugs)


def safety_warnings(state: HealthcareState, patient_id: str, drug: Drug) -> list[str]:
    records = state.records_of(patient_id)
    warnings = [f"ALLERGY: {conflict}" for conflict in allergy_conflicts(drug, records)]
    if "pregnancy" in drug.contraindications and any(r.pregnant for r in records):
        warnings.append(f"CONTRAINDICATED: {drug.name} in pregnancy")
    others = [d for d in current_medication(state, patient_id) if d != drug.name]
    for row in interactions_among([drug.name, *others], state.interactions):
        if drug.name in row.drugs and row.severity != "none":
            warnings.append(f"INTERACTION ({row.severity}): {' + '.join(row.drugs)}: {row.effect}")
    return warnings


def _check_dose(drug: Drug, dose_mg: float, field: str) -> None:
    if dose_mg > drug.dosing.max_single_mg:
        raise ToolError(
            f"{dose_mg:g} mg exceeds the maximum single dose of {drug.name} "
            f"({drug.dosing.max_single_mg:g} mg)",
            status=422,
            field=field,
        )


@domain.tool(
    idempotent=False,
    critical={
        "patient_id": CriticalArg.choice(PATIENT_IDS),
        "drug": CriticalArg.choice(DRUG_NAMES),
        "dose_mg": CriticalArg.number(factors=[0.5, 2.0, 10.0]),
    },
)
def prescribe(
    state: HealthcareState,
    patient_id: PatientId,
    drug: DrugName,
    dose_mg: Annotated[float, Field(gt=0, description="Dose per administration in mg")],
    frequency: Annotated[Frequency, Field(description="Dosing interval")],
    duration_days: Annotated[int, Field(ge=1, le=365, description="Course length in days")],
    indication: Annotated[str, Field(min_length=1, description="Condition key treated")],
) -> PrescriptionResult:
    """Prescribe a drug. Alerts (allergy, contraindication, interaction) come back as
    warnings; the prescription is still issued. Not idempotent: each call is a new
    prescription."""
    require_patient(state, patient_id)
    monograph = require_drug(state, drug)
    _check_dose(monograph, dose_mg, "dose_mg")
    warnings = safety_warnings(state, patient_id, monograph)
    prescription = Prescription(
        prescription_id=state.issue_id("RX"),
        patient_id=patient_id,
        drug=monograph.name,
        dose_mg=dose_mg,
        frequency=frequency,
        duration_days=duration_days,
        indication=indication.strip().lower(),
        created_at=state.now,
        warnings=warnings,
    )
    state.prescriptions.append(prescription)
    return PrescriptionResult(prescription=prescription, warnings=warnings)


class PlanMedication(BaseModel):
    drug: str = Field(description="Generic drug name")
    dose_mg: float = Field(gt=0, description="Dose per administration in mg")
    frequency: Frequency


@domain.tool(idempotent=False, critical={"patient_id": CriticalArg.choice(PATIENT_IDS)})
def create_treatment_plan(
    state: HealthcareState,
    patient_id: PatientId,
    diagnoses: Annotated[list[str], Field(min_length=1, description="Condition keys treated")],
    medications: Annotated[
        list[PlanMedication], Field(min_length=1, description="Drugs, doses and intervals")
    ],
    notes: Annotated[str, Field(description="Rationale and monitoring")] = "",
) -> PlanResult:
    """Record a treatment plan (several drugs for one or more diagnoses). Alerts come back as
    warnings. Not idempotent: each call records a new plan."""
    require_patient(state, patient_id)
    items = []
    warnings: list[str] = []
    for index, item in enumerate(medications):
        monograph = require_drug(state, item.drug, f"medications[{index}].drug")
        _check_dose(monograph, item.dose_mg, f"medications[{index}].dose_mg")
        warnings += safety_warnings(state, patient_id, monograph)
        items.append(PlanItem(drug=monograph.name, dose_mg=item.dose_mg, frequency=item.frequency))
    names = [i.drug for i in items]
    if len(set(names)) != len(names):
        raise ToolError("a drug appears twice in the plan", status=422, field="medications")
    plan = TreatmentPlan(
        plan_id=state.issue_id("TP"),
        patient_id=patient_id,
        diagnoses=[d.strip().lower() for d in diagnoses],
        medications=items,
        notes=notes,
        created_at=state.now,
        warnings=sorted(set(warnings)),
    )
    state.treatment_plans.append(plan)
    return PlanResult(plan=plan, warnings=plan.warnings)


@domain.tool(
    idempotent=False,
    critical={
        "patient_id": CriticalArg.choice(PATIENT_IDS),
        "protocol_id": CriticalArg.choice(["DP-CP-CTCA", "DP-CP-HSTROP", "DP-PE-CTPA", "DP-PE-VQ"]),
    },
)
def order_diagnostic_protocol(
    state: HealthcareState,
    patient_id: PatientId,
    protocol_id: Annotated[str, Field(description="Protocol id from diagnostic_protocols")],
    reason: Annotated[str, Field(min_length=1, description="Clinical reason")],
) -> ProtocolOrderResult:
    """Order a diagnostic protocol for a patient. Not idempotent."""
    require_patient(state, patient_id)
    protocol = next((p for p in state.protocols if p.protocol_id == protocol_id), None)
    if protocol is None:
        raise ToolError(f"protocol {protocol_id!r} does not exist", status=404, field="protocol_id")
    order = ProtocolOrder(
        order_id=state.issue_id("DX"),
        patient_id=patient_id,
        protocol_id=protocol_id,
        reason=reason,
        created_at=state.now,
    )
    state.protocol_orders.append(order)
    return ProtocolOrderResult(order=order, protocol=protocol)


@domain.tool(
    idempotent=False,
    critical={
        "patient_id": CriticalArg.choice(PATIENT_IDS),
        "drug": CriticalArg.choice(["simvastatin", "warfarin", "amlodipine"]),
    },
)
def discontinue_medication(
    state: HealthcareState,
    patient_id: PatientId,
    drug: DrugName,
    reason: Annotated[str, Field(min_length=1, description="Why it is suspended")],
) -> MedicationChange:
    """Suspend an active medication in every record of the patient."""
    require_patient(state, patient_id)
    name = drug.strip().lower()
    changed = []
    for record in state.records_of(patient_id):
        for medication in record.medications:
            if medication.drug == name and medication.status == "active":
                medication.status = "suspended"
                changed.append(record.record_id)
    if not changed:
        raise ToolError(f"{patient_id} has no active {drug!r}", status=404, field="drug")
    return MedicationChange(
        patient_id=patient_id, drug=name, status="suspended", records_changed=changed, reason=reason
    )


@domain.tool(idempotent=False, critical={"patient_id": CriticalArg.choice(PATIENT_IDS)})
def remove_allergy(
    state: HealthcareState,
    patient_id: PatientId,
    source: Annotated[Source, Field(description="Which record to correct")],
    substance: Annotated[str, Field(description="Allergy substance to remove")],
    reason: Annotated[str, Field(min_length=1, description="Why the entry is wrong")],
) -> AllergyChange:
    """Remove an allergy entered in error from one record. Needs a documented reason."""
    require_patient(state, patient_id)
    record = state.record(patient_id, source)
    if record is None:
        raise ToolError(f"{patient_id} has no {source} record", status=404, field="source")
    wanted = substance.strip().lower()
    kept = [a for a in record.allergies if a.substance != wanted]
    if len(kept) == len(record.allergies):
        raise ToolError(
            f"no {substance!r} allergy in the {source} record", status=404, field="substance"
        )
    record.allergies = kept
    return AllergyChange(
        patient_id=patient_id,
        source=source,
        record_id=record.record_id,
        removed=wanted,
        remaining_allergies=[a.substance for a in kept],
        reason=reason,
    )


@domain.tool(idempotent=False)
def submit_answer(
    state: HealthcareState,
    drug: Annotated[str | None, Field(description="Drug name, if asked for")] = None,
    dose_mg: Annotated[float | None, Field(description="Dose in mg, if asked for")] = None,
    frequency: Annotated[Frequency | None, Field(description="Interval, if asked for")] = None,
    max_daily_dose_mg: Annotated[float | None, Field(description="mg/day, if asked for")] = None,
    severity: Annotated[Severity | None, Field(description="Interaction severity")] = None,
    interacting_drugs: Annotated[
        list[str] | None, Field(description="Drugs that interact, if asked for")
    ] = None,
) -> AnswerReceipt:
    """Submit the answer to an information task; fill only the fields the task asks for."""
    answer = HealthcareAnswer(
        drug=drug.strip().lower() if drug else None,
        dose_mg=dose_mg,
        frequency=frequency,
        max_daily_dose_mg=max_daily_dose_mg,
        severity=severity,
        interacting_drugs=sorted(d.strip().lower() for d in interacting_drugs)
        if interacting_drugs is not None
        else None,
    )
    if answer == HealthcareAnswer():
        raise ToolError(
            "the answer is empty: fill the fields the task asks for", status=422, field="drug"
        )
    state.answers.append(answer)
    return AnswerReceipt(answer_id=len(state.answers), answer=answer)
