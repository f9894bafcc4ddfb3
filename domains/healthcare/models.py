"""Result records of the healthcare tools (what agents see on the wire)."""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.healthcare.state import (
    DiagnosticProtocol,
    Drug,
    Frequency,
    Guideline,
    HealthcareAnswer,
    Interaction,
    Patient,
    PatientRecord,
    Prescription,
    ProtocolOrder,
    RenalBand,
    Severity,
    Source,
    TreatmentPlan,
)
from pydantic import BaseModel


class PatientSummary(BaseModel):
    patient_id: str
    name: str
    date_of_birth: str
    sex: str
    age: int
    record_sources: list[Source]


class PatientSearch(BaseModel):
    patients: list[PatientSummary]
    total: int


class RecordResult(BaseModel):
    patient: Patient
    age: int
    record: PatientRecord
    other_sources: list[Source]
    retrieved_at: str


class DrugMonograph(BaseModel):
    drug: Drug
    dosing_rule: str


class InteractionReport(BaseModel):
    drugs: list[str]
    pairs_checked: int
    interactions: list[Interaction]
    highest_severity: Severity
    checked_at: str


class DoseResult(BaseModel):
    drug: str
    route: str
    weight_kg: float
    creatinine_clearance_ml_min: float
    recommendation: Literal["give", "avoid"]
    dose_mg: float | None
    frequency: Frequency
    max_daily_mg: float
    renal_adjustment: RenalBand | None
    calculation: list[str]
    rounding_rule: str


class GuidelineResult(BaseModel):
    guideline: Guideline
    source: str = "Nile University Hospital formulary, 2026 edition"


class ProtocolList(BaseModel):
    complaint: str
    protocols: list[DiagnosticProtocol]
    selection_rule: str
    total: int


class PrescriptionResult(BaseModel):
    prescription: Prescription
    warnings: list[str]


class PlanResult(BaseModel):
    plan: TreatmentPlan
    warnings: list[str]


class ProtocolOrderResult(BaseModel):
    order: ProtocolOrder
    protocol: DiagnosticProtocol


class MedicationChange(BaseModel):
    patient_id: str
    drug: str
    status: Literal["suspended"]
    records_changed: list[str]
    reason: str


class AllergyChange(BaseModel):
    patient_id: str
    source: Source
    record_id: str
    removed: str
    remaining_allergies: list[str]
    reason: str


class AnswerReceipt(BaseModel):
    answer_id: int
    answer: HealthcareAnswer
    status: Literal["recorded"] = "recorded"
