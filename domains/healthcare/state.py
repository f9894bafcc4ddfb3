"""Healthcare state: patients with records from two sources, a drug catalogue, guidelines,
diagnostic protocols, and the orders agents write (prescriptions, plans, protocol orders).

Records from primary care and the hospital are kept apart on purpose: when they disagree
(an allergy in one, "no known allergies" in the other) the safe answer is a human.
"""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

Source = Literal["primary_care", "hospital"]
SOURCES: tuple[Source, ...] = ("primary_care", "hospital")
Frequency = Literal[
    "every 6 hours",
    "every 8 hours",
    "every 12 hours",
    "every 24 hours",
    "every 36 hours",
    "every 48 hours",
]
Severity = Literal["none", "minor", "moderate", "major", "contraindicated"]
SEVERITY_ORDER: dict[str, int] = {
    "none": 0,
    "minor": 1,
    "moderate": 2,
    "major": 3,
    "contraindicated": 4,
}


class Allergy(BaseModel):
    substance: str
    allergy_group: str
    reaction: str
    severity: Literal["mild", "moderate", "severe"]
    recorded_on: str


class Condition(BaseModel):
    code: str
    name: str
    key: str
    since: str


class Medication(BaseModel):
    drug: str
    dose_mg: float
    frequency: Frequency
    status: Literal["active", "suspended", "stopped"] = "active"
    started: str


class Lab(BaseModel):
    test: Literal["creatinine_clearance", "serum_creatinine", "potassium", "hba1c", "inr"]
    value: float
    unit: str
    date: str


class PatientRecord(BaseModel):
    record_id: str
    patient_id: str
    source: Source
    facility: str
    last_updated: str
    weight_kg: float
    weight_recorded_on: str
    pregnant: bool = False
    no_known_allergies: bool = False
    allergies: list[Allergy] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)
    medications: list[Medication] = Field(default_factory=list)
    labs: list[Lab] = Field(default_factory=list)


class Patient(BaseModel):
    patient_id: str
    name: str
    date_of_birth: str
    sex: Literal["female", "male"]


class RenalBand(BaseModel):
    """Applies when creatinine clearance is below `crcl_below` (the lowest matching band wins)."""

    crcl_below: float
    dose_factor: float = 1.0
    frequency: Frequency | None = None
    avoid: bool = False


class Dosing(BaseModel):
    basis: Literal["weight", "fixed"]
    mg_per_kg: float | None = None
    fixed_mg: float | None = None
    max_single_mg: float
    max_daily_mg: float
    frequency: Frequency
    round_to_mg: float
    renal: list[RenalBand] = Field(default_factory=list)


class Drug(BaseModel):
    name: str
    brand_names: list[str]
    drug_class: str
    allergy_group: str | None = None
    cross_reactive_groups: list[str] = Field(default_factory=list)
    indications: list[str]
    contraindications: list[str] = Field(default_factory=list)
    dosing: Dosing
    route: Literal["oral", "intravenous", "subcutaneous"] = "oral"


class Interaction(BaseModel):
    drugs: tuple[str, str]
    severity: Severity
    effect: str
    management: str


class Alternative(BaseModel):
    drug: str
    replaces: str
    when: Literal["penicillin_allergy", "pregnancy", "ace_inhibitor_angioedema"]


class Guideline(BaseModel):
    condition: str
    title: str
    first_line: list[str]
    alternatives: list[Alternative] = Field(default_factory=list)
    notes: str = ""


class DiagnosticProtocol(BaseModel):
    protocol_id: str
    name: str
    complaint: str
    priority: int
    min_age: int = 0
    max_age: int = 130
    min_crcl_ml_min: float | None = None
    excluded_in_pregnancy: bool = False
    description: str


class Prescription(BaseModel):
    prescription_id: str
    patient_id: str
    drug: str
    dose_mg: float
    frequency: Frequency
    duration_days: int
    indication: str
    created_at: str
    status: Literal["active", "cancelled"] = "active"
    warnings: list[str] = Field(default_factory=list)


class PlanItem(BaseModel):
    drug: str
    dose_mg: float
    frequency: Frequency


class TreatmentPlan(BaseModel):
    plan_id: str
    patient_id: str
    diagnoses: list[str]
    medications: list[PlanItem]
    notes: str
    created_at: str
    warnings: list[str] = Field(default_factory=list)


class ProtocolOrder(BaseModel):
    order_id: str
    patient_id: str
    protocol_id: str
    reason: str
    created_at: str


class HealthcareAnswer(BaseModel):
    """A typed answer to an information task; unused fields stay None."""

    drug: str | None = None
    dose_mg: float | None = None
    frequency: Frequency | None = None
    max_daily_dose_mg: float | None = None
    severity: Severity | None = None
    interacting_drugs: list[str] | None = None


class HealthcareState(DomainState):
    today: str = "2026-03-02"
    now: str = "2026-03-02T09:00:00+02:00"
    next_id: int = 1
    patients: list[Patient]
    records: list[PatientRecord]
    drugs: list[Drug]
    interactions: list[Interaction]
    guidelines: list[Guideline]
    protocols: list[DiagnosticProtocol]
    prescriptions: list[Prescription] = Field(default_factory=list)
    treatment_plans: list[TreatmentPlan] = Field(default_factory=list)
    protocol_orders: list[ProtocolOrder] = Field(default_factory=list)
    answers: list[HealthcareAnswer] = Field(default_factory=list)

    def issue_id(self, prefix: str) -> str:
        value = f"{prefix}-{self.next_id:05d}"
        self.next_id += 1
        return value

    def patient(self, patient_id: str) -> Patient | None:
        return next((p for p in self.patients if p.patient_id == patient_id), None)

    def record(self, patient_id: str, source: Source) -> PatientRecord | None:
        return next(
            (r for r in self.records if r.patient_id == patient_id and r.source == source), None
        )

    def records_of(self, patient_id: str) -> list[PatientRecord]:
        return [r for r in self.records if r.patient_id == patient_id]

    def drug(self, name: str) -> Drug | None:
        wanted = name.strip().lower()
        return next((d for d in self.drugs if d.name == wanted or wanted in d.brand_names), None)

    def age_of(self, patient_id: str) -> int:
        patient = self.patient(patient_id)
        if patient is None:
            return 0
        born = tuple(int(x) for x in patient.date_of_birth.split("-"))
        now = tuple(int(x) for x in self.today.split("-"))
        return now[0] - born[0] - (1 if now[1:] < born[1:] else 0)
