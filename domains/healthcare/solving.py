"""Steps the reference solutions share: read both records, compare them, pick the latest lab.

They work on the JSON the tools return (what any agent sees), never on state objects.
"""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit import ToolClient

WEIGHT_DISAGREEMENT = 0.10


async def both_results(client: ToolClient, patient_id: str) -> list[dict[str, Any]]:
    """get_patient_record for primary care, then hospital."""
    return [
        await client.call("get_patient_record", patient_id=patient_id, source=source)
        for source in ("primary_care", "hospital")
    ]


async def both_records(client: ToolClient, patient_id: str) -> list[dict[str, Any]]:
    """The primary-care and hospital records, in that order."""
    return [result["record"] for result in await both_results(client, patient_id)]


def contradiction(records: list[dict[str, Any]]) -> str | None:
    """What the records disagree on that matters for prescribing, if anything."""
    allergy_sets = [frozenset(a["substance"] for a in r["allergies"]) for r in records]
    if len(set(allergy_sets)) > 1:
        detail = "; ".join(
            f"{r['source']}: {', '.join(sorted(s)) or 'no known allergies'}"
            for r, s in zip(records, allergy_sets, strict=True)
        )
        return f"allergy records disagree ({detail})"
    weights = [float(r["weight_kg"]) for r in records]
    if max(weights) > min(weights) * (1 + WEIGHT_DISAGREEMENT):
        return f"recorded weights disagree ({', '.join(f'{w:g} kg' for w in weights)})"
    return None


def latest_crcl(records: list[dict[str, Any]]) -> float:
    labs = [lab for r in records for lab in r["labs"] if lab["test"] == "creatinine_clearance"]
    return float(max(labs, key=lambda lab: lab["date"])["value"])


def allergy_groups(records: list[dict[str, Any]]) -> set[str]:
    return {a["allergy_group"] for r in records for a in r["allergies"]}


def active_drugs(records: list[dict[str, Any]]) -> list[str]:
    return sorted({m["drug"] for r in records for m in r["medications"] if m["status"] == "active"})
