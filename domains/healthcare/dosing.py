"""Pure clinical arithmetic shared by the tools and the verifiers.

The dose rule is spelled out so that a verifier and the dosage_calculator can never
disagree: weight x mg/kg (or the fixed dose), capped at the maximum single dose, times the
renal factor, then rounded half-up to the nearest multiple of the drug's rounding step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from itertools import combinations

from chaosproxy.domains.healthcare.state import (
    SEVERITY_ORDER,
    DiagnosticProtocol,
    Drug,
    Frequency,
    Interaction,
    Lab,
    PatientRecord,
    RenalBand,
    Severity,
)

ROUNDING_RULE = (
    "dose = weight_kg x mg_per_kg (or the fixed dose), capped at max_single_mg, times the renal "
    "dose_factor, rounded half-up to the nearest multiple of round_to_mg"
)


@dataclass(frozen=True)
class DoseComputation:
    drug: str
    dose_mg: float | None
    frequency: Frequency
    avoid: bool
    renal_band: RenalBand | None
    steps: list[str] = field(default_factory=list)


def round_to_step(value: float, step: float) -> float:
    units = (Decimal(str(value)) / Decimal(str(step))).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return float(units * Decimal(str(step)))


def renal_band(drug: Drug, crcl: float) -> RenalBand | None:
    matching = [band for band in drug.dosing.renal if crcl < band.crcl_below]
    return min(matching, key=lambda band: band.crcl_below) if matching else None


def compute_dose(drug: Drug, weight_kg: float, crcl_ml_min: float) -> DoseComputation:
    dosing = drug.dosing
    steps: list[str] = []
    if dosing.basis == "weight" and dosing.mg_per_kg is not None:
        raw = weight_kg * dosing.mg_per_kg
        steps.append(f"{weight_kg} kg x {dosing.mg_per_kg} mg/kg = {raw:g} mg")
    else:
        raw = float(dosing.fixed_mg or 0.0)
        steps.append(f"fixed dose {raw:g} mg")
    capped = min(raw, dosing.max_single_mg)
    if capped < raw:
        steps.append(f"capped at the maximum single dose {dosing.max_single_mg:g} mg")
    band = renal_band(drug, crcl_ml_min)
    frequency: Frequency = dosing.frequency
    if band is not None and band.avoid:
        steps.append(f"CrCl {crcl_ml_min:g} < {band.crcl_below:g} mL/min: avoid")
        return DoseComputation(drug.name, None, frequency, True, band, steps)
    if band is not None:
        capped *= band.dose_factor
        frequency = band.frequency or frequency
        steps.append(
            f"CrCl {crcl_ml_min:g} < {band.crcl_below:g} mL/min: x{band.dose_factor:g}, {frequency}"
        )
    dose = round_to_step(capped, dosing.round_to_mg)
    steps.append(f"rounded half-up to a multiple of {dosing.round_to_mg:g} mg = {dose:g} mg")
    return DoseComputation(drug.name, dose, frequency, False, band, steps)


def latest_lab(records: list[PatientRecord], test: str) -> Lab | None:
    """The most recent result of a test across all sources (ties: hospital first)."""
    labs = [lab for record in records for lab in record.labs if lab.test == test]
    return max(labs, key=lambda lab: lab.date) if labs else None


def interactions_among(drugs: list[str], table: list[Interaction]) -> list[Interaction]:
    names = sorted({d.strip().lower() for d in drugs})
    found = []
    for a, b in combinations(names, 2):
        for row in table:
            if set(row.drugs) == {a, b}:
                found.append(row)
    return found


def highest_severity(found: list[Interaction]) -> Severity:
    return max((row.severity for row in found), key=SEVERITY_ORDER.__getitem__, default="none")


def allergy_conflicts(drug: Drug, records: list[PatientRecord]) -> list[str]:
    groups = {g for g in [drug.allergy_group, *drug.cross_reactive_groups] if g}
    return sorted(
        {
            f"{record.source}: {allergy.substance} ({allergy.reaction})"
            for record in records
            for allergy in record.allergies
            if allergy.allergy_group in groups or allergy.substance == drug.name
        }
    )


def eligible_protocols(
    protocols: list[DiagnosticProtocol],
    complaint: str,
    *,
    age: int,
    crcl: float | None,
    pregnant: bool,
) -> list[DiagnosticProtocol]:
    """Protocols whose criteria the patient meets, best (lowest priority number) first."""
    chosen = [
        p
        for p in protocols
        if p.complaint == complaint
        and p.min_age <= age <= p.max_age
        and (p.min_crcl_ml_min is None or (crcl is not None and crcl >= p.min_crcl_ml_min))
        and not (pregnant and p.excluded_in_pregnancy)
    ]
    return sorted(chosen, key=lambda p: (p.priority, p.protocol_id))
