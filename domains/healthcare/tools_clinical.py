"""Read-only clinical tools: patients and records, drug database, interactions, dosing,
guidelines and diagnostic protocols."""

from __future__ import annotations

from typing import Annotated

from chaosproxy.domains.healthcare.domain import domain
from chaosproxy.domains.healthcare.dosing import (
    ROUNDING_RULE,
    compute_dose,
    highest_severity,
    interactions_among,
)
from chaosproxy.domains.healthcare.models import (
    DoseResult,
    DrugMonograph,
    GuidelineResult,
    InteractionReport,
    PatientSearch,
    PatientSummary,
    ProtocolList,
    RecordResult,
)
from chaosproxy.domains.healthcare.state import SOURCES, Drug, HealthcareState, Patient, Source
from chaosproxy.domains.kit import CriticalArg, ToolError
from pydantic import Field

PATIENT_IDS = [f"P-{n}" for n in range(1001, 1014)]
DRUG_NAMES = [
    "amoxicillin",
    "azithromycin",
    "clarithromycin",
    "lisinopril",
    "amlodipine",
    "labetalol",
    "metformin",
    "warfarin",
    "ibuprofen",
    "enoxaparin",
    "gentamicin",
]

PatientId = Annotated[str, Field(description="Patient id, e.g. 'P-1004'")]
DrugName = Annotated[str, Field(description="Generic drug name, e.g. 'amoxicillin'")]


def require_patient(state: HealthcareState, patient_id: str) -> Patient:
    patient = state.patient(patient_id)
    if patient is None:
        raise ToolError(f"patient {patient_id!r} does not exist", status=404, field="patient_id")
    return patient


def require_drug(state: HealthcareState, name: str, field: str = "drug") -> Drug:
    drug = state.drug(name)
    if drug is None:
        raise ToolError(f"drug {name!r} is not in the formulary", status=404, field=field)
    return drug


@domain.tool()
def search_patients(
    state: HealthcareState,
    name: Annotated[str | None, Field(description="Part of the patient's name")] = None,
    date_of_birth: Annotated[str | None, Field(description="YYYY-MM-DD")] = None,
) -> PatientSearch:
    """Find patients by name and/or date of birth; lists which record sources each has."""
    found = [
        PatientSummary(
            patient_id=p.patient_id,
            name=p.name,
            date_of_birth=p.date_of_birth,
            sex=p.sex,
            age=state.age_of(p.patient_id),
            record_sources=[r.source for r in state.records_of(p.patient_id)],
        )
        for p in state.patients
        if (name is None or name.strip().lower() in p.name.lower())
        and (date_of_birth is None or p.date_of_birth == date_of_birth)
    ]
    return PatientSearch(patients=found, total=len(found))


@domain.tool(critical={"patient_id": CriticalArg.choice(PATIENT_IDS)})
def get_patient_record(
    state: HealthcareState,
    patient_id: PatientId,
    source: Annotated[Source, Field(description="'primary_care' (family practice) or 'hospital'")],
) -> RecordResult:
    """One source's record of a patient: weight, pregnancy, allergies, conditions, medication
    and labs. Patients have a record in each source; they are kept separately and can
    disagree."""
    patient = require_patient(state, patient_id)
    record = state.record(patient_id, source)
    if record is None:
        raise ToolError(f"{patient_id} has no {source} record", status=404, field="source")
    return RecordResult(
        patient=patient,
        age=state.age_of(patient_id),
        record=record,
        other_sources=[s for s in SOURCES if s != source and state.record(patient_id, s)],
        retrieved_at=state.now,
    )


@domain.tool(critical={"drug": CriticalArg.choice(DRUG_NAMES)})
def drug_database(state: HealthcareState, drug: DrugName) -> DrugMonograph:
    """A drug's monograph: class, allergy group, indications, contraindications and dosing
    (basis, mg/kg or fixed dose, maximum single and daily dose, rounding step, renal bands)."""
    return DrugMonograph(drug=require_drug(state, drug), dosing_rule=ROUNDING_RULE)


@domain.tool()
def interaction_checker(
    state: HealthcareState,
    drugs: Annotated[
        list[str], Field(min_length=2, max_length=12, description="Generic names to check")
    ],
) -> InteractionReport:
    """Check every pair of the given drugs for interactions; reports each one found with its
    severity (minor, moderate, major, contraindicated) and the highest severity."""
    names = []
    for index, name in enumerate(drugs):
        names.append(require_drug(state, name, f"drugs[{index}]").name)
    unique = sorted(set(names))
    found = [
        row for row in interactions_among(unique, state.interactions) if row.severity != "none"
    ]
    return InteractionReport(
        drugs=unique,
        pairs_checked=len(unique) * (len(unique) - 1) // 2,
        interactions=found,
        highest_severity=highest_severity(found),
        checked_at=state.now,
    )


@domain.tool(
    critical={
        "drug": CriticalArg.choice(DRUG_NAMES),
        "weight_kg": CriticalArg.number(factors=[0.5, 2.0, 1.5]),
        "creatinine_clearance_ml_min": CriticalArg.number(factors=[0.5, 2.0]),
    }
)
def dosage_calculator(
    state: HealthcareState,
    drug: DrugName,
    weight_kg: Annotated[float, Field(gt=0, le=300, description="Current body weight in kg")],
    creatinine_clearance_ml_min: Annotated[
        float, Field(ge=0, le=250, description="Most recent creatinine clearance, mL/min")
    ],
) -> DoseResult:
    """The dose for one administration and its interval, by weight and renal function.
    Rule: weight x mg/kg (or the fixed dose), capped at the maximum single dose, times the renal
    factor, rounded half-up to the drug's rounding step; renal bands may lengthen the interval
    or say avoid."""
    monograph = require_drug(state, drug)
    result = compute_dose(monograph, weight_kg, creatinine_clearance_ml_min)
    return DoseResult(
        drug=monograph.name,
        route=monograph.route,
        weight_kg=weight_kg,
        creatinine_clearance_ml_min=creatinine_clearance_ml_min,
        recommendation="avoid" if result.avoid else "give",
        dose_mg=result.dose_mg,
        frequency=result.frequency,
        max_daily_mg=monograph.dosing.max_daily_mg,
        renal_adjustment=result.renal_band,
        calculation=result.steps,
        rounding_rule=ROUNDING_RULE,
    )


@domain.tool()
def clinical_guidelines(
    state: HealthcareState,
    condition: Annotated[
        str, Field(description="Condition key, e.g. 'strep_pharyngitis' (see record conditions)")
    ],
) -> GuidelineResult:
    """The formulary's treatment guideline for a condition: first-line drugs and the
    alternatives to use when an allergy, pregnancy or intolerance rules one out."""
    key = condition.strip().lower()
    guideline = next((g for g in state.guidelines if g.condition == key), None)
    if guideline is None:
        known = ", ".join(g.condition for g in state.guidelines)
        raise ToolError(
            f"no guideline for {condition!r} (known: {known})", status=404, field="condition"
        )
    return GuidelineResult(guideline=guideline)


@domain.tool()
def diagnostic_protocols(
    state: HealthcareState,
    complaint: Annotated[str, Field(description="Presenting complaint key, e.g. 'chest_pain'")],
) -> ProtocolList:
    """Diagnostic protocols for a presenting complaint with their eligibility criteria (age,
    minimum creatinine clearance for contrast, pregnancy)."""
    key = complaint.strip().lower()
    found = sorted((p for p in state.protocols if p.complaint == key), key=lambda p: p.priority)
    if not found:
        known = ", ".join(sorted({p.complaint for p in state.protocols}))
        raise ToolError(
            f"no protocols for {complaint!r} (known: {known})", status=404, field="complaint"
        )
    return ProtocolList(
        complaint=key,
        protocols=found,
        selection_rule="Order the eligible protocol with the lowest priority number; use the "
        "most recent creatinine clearance from any record.",
        total=len(found),
    )
