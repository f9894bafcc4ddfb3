"""The default world a fresh healthcare episode gets."""

from __future__ import annotations

from chaosproxy.domains.healthcare.catalog import DRUGS, GUIDELINES, INTERACTIONS, PROTOCOLS
from chaosproxy.domains.healthcare.patients import PATIENTS, make_records
from chaosproxy.domains.healthcare.state import HealthcareState


def make_default_state() -> HealthcareState:
    return HealthcareState(
        patients=[p.model_copy() for p in PATIENTS],
        records=make_records(),
        drugs=[d.model_copy(deep=True) for d in DRUGS],
        interactions=[i.model_copy() for i in INTERACTIONS],
        guidelines=[g.model_copy(deep=True) for g in GUIDELINES],
        protocols=[p.model_copy() for p in PROTOCOLS],
    )
