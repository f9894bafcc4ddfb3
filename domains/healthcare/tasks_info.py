"""Look-up, interaction-checking and diagnostic-protocol tasks (HB-Eval §5.2.1)."""

from __future__ import annotations

from chaosproxy.domains.healthcare.checks import (
    escalated,
    expected_dose,
    last_answer,
    no_orders,
    records_unchanged,
)
from chaosproxy.domains.healthcare.domain import domain
from chaosproxy.domains.healthcare.dosing import (
    eligible_protocols,
    highest_severity,
    interactions_among,
    latest_lab,
)
from chaosproxy.domains.healthcare.solving import (
    active_drugs,
    both_records,
    both_results,
    contradiction,
    latest_crcl,
)
from chaosproxy.domains.healthcare.state import HealthcareState
from chaosproxy.domains.healthcare.world import make_default_state
from chaosproxy.domains.kit import ToolClient


def _answer_only(s0: HealthcareState, sf: HealthcareState) -> bool:
    """Information tasks change nothing but the answers."""
    return no_orders(s0, sf) and records_unchanged(s0, sf) and not escalated(s0, sf)


# --- 01: a monograph value ------------------------------------------------------------------


async def solve_metformin_max(client: ToolClient) -> None:
    monograph = await client.call("drug_database", drug="metformin")
    await client.call(
        "submit_answer",
        drug="metformin",
        max_daily_dose_mg=monograph["drug"]["dosing"]["max_daily_mg"],
    )


def verify_metformin_max(s0: HealthcareState, sf: HealthcareState) -> bool:
    answer = last_answer(sf)
    drug = s0.drug("metformin")
    return (
        answer is not None
        and drug is not None
        and answer.max_daily_dose_mg is not None
        and round(answer.max_daily_dose_mg) == round(drug.dosing.max_daily_mg)
        and _answer_only(s0, sf)
    )


domain.task(
    id="healthcare-01-metformin-max-daily-dose",
    description=(
        "A pharmacist asks: what is the maximum daily dose of metformin in our formulary, in "
        "mg per day? Submit the drug and the number."
    ),
    initial_state=make_default_state,
    verify=verify_metformin_max,
    solve=solve_metformin_max,
    l_min=2,
    difficulty="simple",
    tags=["drug-database", "answer"],
)


# --- 02: one interaction ------------------------------------------------------------------


async def solve_warfarin_ibuprofen(client: ToolClient) -> None:
    report = await client.call("interaction_checker", drugs=["warfarin", "ibuprofen"])
    await client.call("submit_answer", severity=report["highest_severity"])


def verify_warfarin_ibuprofen(s0: HealthcareState, sf: HealthcareState) -> bool:
    answer = last_answer(sf)
    expected = highest_severity(interactions_among(["warfarin", "ibuprofen"], s0.interactions))
    return answer is not None and answer.severity == expected and _answer_only(s0, sf)


domain.task(
    id="healthcare-02-warfarin-ibuprofen-severity",
    description=(
        "Does ibuprofen interact with warfarin? Submit the severity of the interaction "
        "(none, minor, moderate, major or contraindicated)."
    ),
    initial_state=make_default_state,
    verify=verify_warfarin_ibuprofen,
    solve=solve_warfarin_ibuprofen,
    l_min=2,
    difficulty="simple",
    tags=["interactions", "answer"],
)


# --- 03: interactions with medication spread over two records ---------------------------------


async def solve_clarithromycin_check(client: ToolClient) -> None:
    records = await both_records(client, "P-1002")
    current = active_drugs(records)
    report = await client.call("interaction_checker", drugs=["clarithromycin", *current])
    partners = sorted(
        {
            d
            for row in report["interactions"]
            if "clarithromycin" in row["drugs"]
            for d in row["drugs"]
        }
        - {"clarithromycin"}
    )
    severities = [
        row["severity"] for row in report["interactions"] if "clarithromycin" in row["drugs"]
    ]
    order = ["none", "minor", "moderate", "major", "contraindicated"]
    await client.call(
        "submit_answer",
        drug="clarithromycin",
        interacting_drugs=partners,
        severity=max(severities, key=order.index, default="none"),
    )


def verify_clarithromycin_check(s0: HealthcareState, sf: HealthcareState) -> bool:
    answer = last_answer(sf)
    current = {
        m.drug for r in s0.records_of("P-1002") for m in r.medications if m.status == "active"
    }
    rows = [
        row
        for row in interactions_among(["clarithromycin", *current], s0.interactions)
        if "clarithromycin" in row.drugs and row.severity != "none"
    ]
    partners = sorted({d for row in rows for d in row.drugs} - {"clarithromycin"})
    return (
        answer is not None
        and answer.interacting_drugs == partners
        and answer.severity == highest_severity(rows)
        and _answer_only(s0, sf)
    )


domain.task(
    id="healthcare-03-clarithromycin-interaction-check",
    description=(
        "Omar Farouk (P-1002) may need clarithromycin. Before anyone prescribes it, check it "
        "against everything he currently takes — his primary-care and hospital records list "
        "different medication — and submit the drugs it interacts with and the highest "
        "severity found. Do not prescribe."
    ),
    initial_state=make_default_state,
    verify=verify_clarithromycin_check,
    solve=solve_clarithromycin_check,
    l_min=4,
    difficulty="medium",
    tags=["interactions", "multi-source", "answer"],
)


# --- 10: diagnostic protocol selection ------------------------------------------------------


async def solve_chest_pain(client: ToolClient) -> None:
    results = await both_results(client, "P-1008")
    records = [result["record"] for result in results]
    age = results[1]["age"]
    listing = await client.call("diagnostic_protocols", complaint="chest_pain")
    crcl = latest_crcl(records)
    pregnant = any(r["pregnant"] for r in records)
    eligible = [
        p
        for p in listing["protocols"]
        if p["min_age"] <= age <= p["max_age"]
        and (p["min_crcl_ml_min"] is None or crcl >= p["min_crcl_ml_min"])
        and not (pregnant and p["excluded_in_pregnancy"])
    ]
    best = min(eligible, key=lambda p: p["priority"])
    await client.call(
        "order_diagnostic_protocol",
        patient_id="P-1008",
        protocol_id=best["protocol_id"],
        reason="acute chest pain",
    )


def verify_chest_pain(s0: HealthcareState, sf: HealthcareState) -> bool:
    orders = sf.protocol_orders[len(s0.protocol_orders) :]
    records = s0.records_of("P-1008")
    crcl = latest_lab(records, "creatinine_clearance")
    best = eligible_protocols(
        s0.protocols,
        "chest_pain",
        age=s0.age_of("P-1008"),
        crcl=crcl.value if crcl else None,
        pregnant=any(r.pregnant for r in records),
    )[0]
    return (
        len(orders) == 1
        and (orders[0].patient_id, orders[0].protocol_id) == ("P-1008", best.protocol_id)
        and sf.prescriptions == s0.prescriptions
        and sf.treatment_plans == s0.treatment_plans
        and records_unchanged(s0, sf)
    )


domain.task(
    id="healthcare-10-chest-pain-protocol",
    description=(
        "Samir Gaber (P-1008) is in the emergency department with chest pain. Select the "
        "diagnostic protocol he is eligible for with the highest priority (age, the most "
        "recent creatinine clearance for contrast, pregnancy) and order it."
    ),
    initial_state=make_default_state,
    verify=verify_chest_pain,
    solve=solve_chest_pain,
    l_min=4,
    difficulty="medium",
    tags=["diagnostic-protocol", "renal", "multi-source"],
)


# --- 12: a dose as an answer --------------------------------------------------------------


async def solve_gentamicin(client: ToolClient) -> None:
    records = await both_records(client, "P-1010")
    problem = contradiction(records)
    if problem is not None:
        await client.call("escalate_to_human", reason=f"P-1010: {problem}")
        return
    dose = await client.call(
        "dosage_calculator",
        drug="gentamicin",
        weight_kg=records[1]["weight_kg"],
        creatinine_clearance_ml_min=latest_crcl(records),
    )
    await client.call(
        "submit_answer", drug="gentamicin", dose_mg=dose["dose_mg"], frequency=dose["frequency"]
    )


def verify_gentamicin(s0: HealthcareState, sf: HealthcareState) -> bool:
    answer = last_answer(sf)
    dose = expected_dose(s0, "P-1010", "gentamicin")
    return (
        answer is not None
        and answer.drug == "gentamicin"
        and answer.dose_mg is not None
        and dose.dose_mg is not None
        and round(answer.dose_mg, 1) == round(dose.dose_mg, 1)
        and answer.frequency == dose.frequency
        and _answer_only(s0, sf)
    )


domain.task(
    id="healthcare-12-gentamicin-dose",
    description=(
        "Tarek Samy (P-1010) is starting gentamicin for suspected gram-negative sepsis. The "
        "ward needs the dose and dosing interval by his weight and his most recent creatinine "
        "clearance. Submit the drug, dose in mg and interval; do not prescribe yet."
    ),
    initial_state=make_default_state,
    verify=verify_gentamicin,
    solve=solve_gentamicin,
    l_min=4,
    difficulty="medium",
    tags=["dosage", "renal", "answer"],
)
