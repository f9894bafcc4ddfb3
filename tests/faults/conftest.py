"""Fixtures: fresh copies of the realistic bodies and hints in fault_bodies.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fault_bodies import FLIGHT_SEARCH, HOLD_RESULT, PATIENT_RECORD, TRAVEL_HINTS


@pytest.fixture
def flight_search() -> dict[str, Any]:
    return copy.deepcopy(FLIGHT_SEARCH)


@pytest.fixture
def hold_result() -> dict[str, Any]:
    return copy.deepcopy(HOLD_RESULT)


@pytest.fixture
def patient_record() -> dict[str, Any]:
    return copy.deepcopy(PATIENT_RECORD)


@pytest.fixture
def travel_hints() -> dict[str, Any]:
    return copy.deepcopy(TRAVEL_HINTS)
