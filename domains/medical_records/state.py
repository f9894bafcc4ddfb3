"""The medical-records world: one clinic's patients, their conditions and medications,
providers with bookable slots, and appointments.

The clock is `now` in state (clinic local time, US Eastern daylight time). Appointment ids come
from `next_id`, so a replayed episode produces the same ids. A slot is free when no booked
appointment holds it; slots that start before `now` cannot be booked.
"""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

CLINIC = "Riverside Health"
OFFSET = "-04:00"


class Allergy(BaseModel):
    substance: str
    reaction: str
    severity: Literal["mild", "moderate", "severe"]


class Patient(BaseModel):
    patient_id: str
    mrn: str
    name: str
    date_of_birth: str
    sex: Literal["F", "M", "X"]
    phone: str
    email: str
    insurance: str
    primary_provider_id: str
    allergies: list[Allergy] = Field(default_factory=list)


class Condition(BaseModel):
    condition_id: str
    patient_id: str
    code: str = Field(description="ICD-10-CM code")
    name: str
    status: Literal["active", "resolved"]
    onset: str
    resolved_on: str | None = None


class Medication(BaseModel):
    medication_id: str
    patient_id: str
    name: str
    dose: str
    frequency: str
    status: Literal["active", "stopped"]
    started: str
    prescriber_id: str


class Provider(BaseModel):
    provider_id: str
    name: str
    specialty: str
    credentials: str
    location: str


class Slot(BaseModel):
    slot_id: str
    provider_id: str
    start: str = Field(description="ISO 8601 local start time with offset")
    duration_minutes: int


class Appointment(BaseModel):
    appointment_id: str
    patient_id: str
    provider_id: str
    slot_id: str
    start: str
    reason: str
    status: Literal["booked", "cancelled"]
    booked_at: str
    cancel_reason: str | None = None
    rescheduled_from: str | None = Field(default=None, description="Previous slot id, if moved")


class MedicalAnswer(BaseModel):
    """A submitted answer as typed values; verifiers normalise codes, names and dates."""

    patient_id: str | None = None
    provider_id: str | None = None
    date: str | None = None
    codes: list[str] | None = None
    medications: list[str] | None = None
    yes_no: bool | None = None


class MedicalState(DomainState):
    today: str = "2026-03-10"
    now: str = f"2026-03-10T08:00:00{OFFSET}"
    clinic: str = CLINIC
    next_id: int = 1
    patients: list[Patient]
    conditions: list[Condition]
    medications: list[Medication]
    providers: list[Provider]
    slots: list[Slot]
    appointments: list[Appointment] = Field(default_factory=list)
    answers: list[MedicalAnswer] = Field(default_factory=list)


def _patient(
    pid: str,
    name: str,
    dob: str,
    sex: Literal["F", "M", "X"],
    insurance: str,
    pcp: str,
    allergies: list[Allergy] | None = None,
) -> Patient:
    number = int(pid[1:])
    handle = name.lower().replace(" ", ".")
    return Patient(
        patient_id=pid,
        mrn=f"MRN-{40210 + number * 17:06d}",
        name=name,
        date_of_birth=dob,
        sex=sex,
        phone=f"+1-617-555-{1000 + number * 37:04d}",
        email=f"{handle}{number}@mail.example",
        insurance=insurance,
        primary_provider_id=pcp,
        allergies=allergies or [],
    )


def seed_patients() -> list[Patient]:
    return [
        _patient("P001", "Daniel Okoye", "1979-11-02", "M", "Blue Harbor PPO", "PRV-601"),
        _patient(
            "P002",
            "Helen Park",
            "1950-06-30",
            "F",
            "Medicare Part B",
            "PRV-601",
            [Allergy(substance="Penicillin", reaction="Hives", severity="moderate")],
        ),
        _patient("P003", "Maria Garcia", "1985-04-21", "F", "Harborline HMO", "PRV-601"),
        _patient("P004", "Priya Nair", "1992-08-15", "F", "Blue Harbor PPO", "PRV-601"),
        _patient(
            "P005",
            "Samuel Reed",
            "1968-02-27",
            "M",
            "Keystone Health",
            "PRV-601",
            [Allergy(substance="Sulfonamides", reaction="Rash", severity="mild")],
        ),
        _patient("P006", "Lucas Meyer", "1974-12-05", "M", "Harborline HMO", "PRV-601"),
        _patient("P007", "Aisha Bello", "2001-03-03", "F", "Blue Harbor PPO", "PRV-601"),
        _patient(
            "P008",
            "Maria Garcia",
            "1962-09-14",
            "F",
            "Medicare Advantage",
            "PRV-601",
            [Allergy(substance="Latex", reaction="Contact dermatitis", severity="mild")],
        ),
        _patient("P009", "Chen Wei", "1988-07-19", "M", "Keystone Health", "PRV-601"),
        _patient("P010", "Olivia Brooks", "1957-01-23", "F", "Medicare Part B", "PRV-601"),
    ]


# condition id  patient code     status    onset       resolved    name
_CONDITIONS = """
C-0101 P001 I10      active   2019-05-14 -          Essential (primary) hypertension
C-0102 P001 M54.50   active   2025-11-20 -          Low back pain, unspecified
C-0201 P002 I48.91   active   2021-02-09 -          Unspecified atrial fibrillation
C-0202 P002 E78.5    active   2016-08-30 -          Hyperlipidemia, unspecified
C-0203 P002 N39.0    resolved 2025-12-01 2025-12-15 Urinary tract infection, site not specified
C-0301 P003 J45.909  active   2003-06-11 -          Unspecified asthma, uncomplicated
C-0302 P003 L20.9    active   2024-01-22 -          Atopic dermatitis, unspecified
C-0401 P004 L70.0    active   2025-06-05 -          Acne vulgaris
C-0501 P005 G43.909  active   2012-10-03 -          Migraine, unspecified, not intractable
C-0601 P006 M17.11   active   2022-04-18 -          Unilateral primary osteoarthritis, right knee
C-0602 P006 I10      active   2020-09-07 -          Essential (primary) hypertension
C-0701 P007 J45.909  resolved 2009-03-15 2018-05-01 Unspecified asthma, uncomplicated
C-0702 P007 D50.9    active   2025-10-28 -          Iron deficiency anemia, unspecified
C-0801 P008 E11.9    active   2014-02-17 -          Type 2 diabetes mellitus without complications
C-0802 P008 I10      active   2015-07-21 -          Essential (primary) hypertension
C-0901 P009 K21.9    active   2023-03-02 -          Gastro-esophageal reflux disease
C-1001 P010 M81.0    active   2019-11-12 -          Age-related osteoporosis
"""

# medication id patient status  started    prescriber | name | dose | frequency
_MEDICATIONS = """
M-0101 P001 active  2019-05-14 PRV-601 | Lisinopril | 10 mg tablet | once daily
M-0102 P001 active  2025-11-20 PRV-601 | Cyclobenzaprine | 5 mg tablet | at bedtime as needed
M-0201 P002 active  2021-02-09 PRV-101 | Apixaban | 5 mg tablet | twice daily
M-0202 P002 active  2016-08-30 PRV-601 | Atorvastatin | 40 mg tablet | once daily at night
M-0203 P002 stopped 2025-12-01 PRV-601 | Nitrofurantoin | 100 mg capsule | twice daily
M-0301 P003 active  2003-06-11 PRV-601 | Albuterol | 90 mcg inhaler | as needed
M-0302 P003 active  2024-01-22 PRV-201 | Triamcinolone cream | 0.1% topical | twice daily
M-0401 P004 active  2025-06-05 PRV-201 | Tretinoin cream | 0.025% topical | nightly
M-0501 P005 active  2012-10-03 PRV-501 | Sumatriptan | 50 mg tablet | at onset, max 2 daily
M-0601 P006 active  2020-09-07 PRV-601 | Amlodipine | 5 mg tablet | once daily
M-0602 P006 active  2022-04-18 PRV-401 | Naproxen | 500 mg tablet | twice daily with food
M-0701 P007 active  2025-10-28 PRV-601 | Ferrous sulfate | 325 mg tablet | once daily
M-0801 P008 active  2014-02-17 PRV-301 | Metformin | 1000 mg tablet | twice daily
M-0802 P008 active  2015-07-21 PRV-601 | Losartan | 50 mg tablet | once daily
M-0901 P009 active  2023-03-02 PRV-601 | Omeprazole | 20 mg capsule | once daily
M-1001 P010 active  2019-11-12 PRV-601 | Alendronate | 70 mg tablet | once weekly
"""


def seed_conditions() -> list[Condition]:
    found = []
    for line in _CONDITIONS.strip().splitlines():
        cid, pid, code, status, onset, resolved, name = line.split(maxsplit=6)
        found.append(
            Condition(
                condition_id=cid,
                patient_id=pid,
                code=code,
                name=name,
                status="active" if status == "active" else "resolved",
                onset=onset,
                resolved_on=None if resolved == "-" else resolved,
            )
        )
    return found


def seed_medications() -> list[Medication]:
    found = []
    for line in _MEDICATIONS.strip().splitlines():
        head, name, dose, frequency = (part.strip() for part in line.split("|"))
        mid, pid, status, started, prescriber = head.split()
        found.append(
            Medication(
                medication_id=mid,
                patient_id=pid,
                name=name,
                dose=dose,
                frequency=frequency,
                status="active" if status == "active" else "stopped",
                started=started,
                prescriber_id=prescriber,
            )
        )
    return found


def seed_providers() -> list[Provider]:
    rows = [
        ("PRV-101", "Dr. Amara Osei", "Cardiology", "MD, FACC", "Building A, 3rd floor"),
        ("PRV-102", "Dr. Jonah Whitfield", "Cardiology", "MD", "Building A, 3rd floor"),
        ("PRV-201", "Dr. Lena Fischer", "Dermatology", "MD", "Building B, 1st floor"),
        ("PRV-301", "Dr. Rafael Ortiz", "Endocrinology", "MD", "Building A, 2nd floor"),
        ("PRV-401", "Dr. Mei Tanaka", "Orthopedics", "MD", "Building C, ground floor"),
        ("PRV-501", "Dr. Samir Haddad", "Neurology", "MD, PhD", "Building A, 4th floor"),
        ("PRV-601", "Dr. Grace Liu", "Family Medicine", "MD", "Building B, 2nd floor"),
        ("PRV-701", "Tom Brennan", "Physical Therapy", "DPT", "Building C, rehab wing"),
    ]
    return [
        Provider(provider_id=p, name=n, specialty=s, credentials=c, location=loc)
        for p, n, s, c, loc in rows
    ]


# provider: "MM-DD HH:MM/minutes" slots (2026)
_SLOTS = {
    "PRV-101": ["03-11 09:00/30", "03-12 14:00/30", "03-16 10:00/30", "03-18 09:30/30"],
    "PRV-102": ["03-12 09:30/30", "03-13 11:00/30", "03-17 15:00/30"],
    "PRV-201": [
        "03-11 10:00/20",
        "03-12 08:30/20",
        "03-12 13:30/20",
        "03-16 11:00/20",
        "03-16 14:30/20",
        "03-18 09:00/20",
    ],
    "PRV-301": ["03-13 08:00/40", "03-13 10:30/40", "03-19 09:00/40"],
    "PRV-401": ["03-11 14:00/30", "03-12 08:30/30", "03-13 13:30/30", "03-17 14:00/30"],
    "PRV-501": ["03-11 11:00/45", "03-13 09:00/45", "03-18 10:00/45"],
    "PRV-601": [
        "03-10 07:30/20",
        "03-10 15:00/20",
        "03-11 09:00/20",
        "03-11 16:00/20",
        "03-12 10:00/20",
        "03-13 14:30/20",
        "03-16 09:00/20",
    ],
    "PRV-701": ["03-13 16:00/45", "03-17 16:00/45"],
}


def slot_id(provider_id: str, month_day: str, hhmm: str) -> str:
    return f"SL-{provider_id[4:]}-{month_day.replace('-', '')}-{hhmm.replace(':', '')}"


def seed_slots() -> list[Slot]:
    slots = []
    for provider_id, entries in _SLOTS.items():
        for entry in entries:
            when, minutes = entry.split("/")
            month_day, hhmm = when.split()
            slots.append(
                Slot(
                    slot_id=slot_id(provider_id, month_day, hhmm),
                    provider_id=provider_id,
                    start=f"2026-{month_day}T{hhmm}:00{OFFSET}",
                    duration_minutes=int(minutes),
                )
            )
    return sorted(slots, key=lambda s: (s.start, s.provider_id))


# appointment id, patient, provider, "MM-DD HH:MM", reason, booked at
_APPOINTMENTS = [
    ("A-1001", "P006", "PRV-101", "03-11 09:00", "Blood pressure review", "2026-02-24T10:12"),
    ("A-1002", "P004", "PRV-201", "03-11 10:00", "Acne follow-up", "2026-02-20T16:40"),
    ("A-1003", "P001", "PRV-601", "03-13 14:30", "Annual physical", "2026-02-11T09:05"),
    ("A-1004", "P001", "PRV-701", "03-13 16:00", "Low back pain, session 3", "2026-03-02T11:30"),
    ("A-1005", "P009", "PRV-501", "03-11 11:00", "Headache evaluation", "2026-02-26T14:22"),
    ("A-1006", "P010", "PRV-501", "03-13 09:00", "Dizziness work-up", "2026-03-03T08:47"),
    ("A-1007", "P002", "PRV-101", "03-16 10:00", "Anticoagulation review", "2026-03-05T13:15"),
]


def seed_appointments() -> list[Appointment]:
    found = []
    for aid, pid, prv, when, reason, booked in _APPOINTMENTS:
        month_day, hhmm = when.split()
        found.append(
            Appointment(
                appointment_id=aid,
                patient_id=pid,
                provider_id=prv,
                slot_id=slot_id(prv, month_day, hhmm),
                start=f"2026-{month_day}T{hhmm}:00{OFFSET}",
                reason=reason,
                status="booked",
                booked_at=f"{booked}:00{OFFSET}",
            )
        )
    return found


def make_default_state() -> MedicalState:
    return MedicalState(
        patients=seed_patients(),
        conditions=seed_conditions(),
        medications=seed_medications(),
        providers=seed_providers(),
        slots=seed_slots(),
        appointments=seed_appointments(),
        next_id=1,
    )
