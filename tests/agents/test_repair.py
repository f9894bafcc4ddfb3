"""The robust agent's response checks against real domain schemas and real drift."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from chaosproxy.agents.scripted.repair import (
    echoed_differently,
    find_contradiction,
    missing_required,
    repair,
)
from chaosproxy.domains.kit.app import asgi_app
from chaosproxy.domains.kit.testing import serve_app
from chaosproxy.domains.registry import get_domain

from chaosproxy.faults.kinds.schema_drift import drift_body

CALLS = [
    ("ecommerce", "search_products", {"query": "monitor"}),
    ("travel", "search_flights", {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}),
    ("support", "list_open_tickets", {}),
]


@pytest.fixture(scope="module")
def responses() -> Iterator[dict[str, tuple[dict[str, Any], dict[str, Any]]]]:
    """(real response, published output schema) per tool, from real services."""
    found: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for domain, tool, arguments in CALLS:
        with serve_app(asgi_app(get_domain(domain))) as url:
            body = httpx.post(f"{url}/tools/{tool}", json=arguments).json()
            listing = httpx.get(f"{url}/tools").json()["tools"]
        schema = next(entry["output_schema"] for entry in listing if entry["name"] == tool)
        found[tool] = (body, schema)
    yield found


@pytest.mark.parametrize("tool", [tool for _, tool, _ in CALLS])
@pytest.mark.parametrize(
    "ops", [["rename"], ["retype"], ["renest"], ["rename", "retype", "renest"]]
)
def test_drift_is_undone_field_by_field(
    responses: dict[str, tuple[dict[str, Any], dict[str, Any]]], tool: str, ops: list[str]
) -> None:
    original, schema = responses[tool]
    drifted = drift_body(original, ops)
    assert drifted != original
    repaired = repair(drifted, schema)
    assert missing_required(repaired, schema) == []
    assert_named_fields_equal(repaired, original, schema, schema, path=tool)


def assert_named_fields_equal(
    got: Any, want: Any, schema: dict[str, Any], root: dict[str, Any], path: str
) -> None:
    """Every field the schema names is restored exactly.

    Free-form maps (an object with no named properties, like product attributes) are
    compared by their values only: a client has no way to know their original key names.
    """
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        branch = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if want is not None and branch:
            assert_named_fields_equal(got, want, branch[0], root, path)
            return
    if schema.get("type") == "object" and schema.get("properties"):
        for name, sub_schema in schema["properties"].items():
            if name in want:
                assert name in got, f"{path}.{name} missing"
                assert_named_fields_equal(got[name], want[name], sub_schema, root, f"{path}.{name}")
    elif schema.get("type") == "object":
        assert len(got) == len(want), path
    elif schema.get("type") == "array" and "items" in schema:
        assert len(got) == len(want), path
        for index, (got_item, want_item) in enumerate(zip(got, want, strict=True)):
            assert_named_fields_equal(
                got_item, want_item, schema["items"], root, f"{path}[{index}]"
            )
    else:
        assert got == want, path


def test_a_cut_record_is_reported_missing(
    responses: dict[str, tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    original, schema = responses["search_products"]
    cut = {**original, "products": [dict(list(original["products"][0].items())[:2])]}
    problems = missing_required(repair(cut, schema), schema)
    assert problems and problems[0].startswith("products.[0].")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"items": [{"id": 1, "allergy": "penicillin"}, {"id": 1, "allergy": "none"}]}, "id=1"),
        ({"items": [{"id": 1, "a": 1}, {"id": 2, "a": 1}]}, None),
        ({"items": [{"meeting_id": None, "a": 1}, {"meeting_id": None, "a": 2}]}, None),
        ({"outer": {"rows": [{"row_id": "x", "v": 1}, {"row_id": "x", "v": 2}]}}, "row_id='x'"),
    ],
)
def test_contradictions(value: dict[str, Any], expected: str | None) -> None:
    found = find_contradiction(value)
    if expected is None:
        assert found is None
    else:
        assert found is not None and expected in found


@pytest.mark.parametrize(
    ("arguments", "result", "expected"),
    [
        ({"origin": "SFO", "dest": "JFK"}, {"origin": "SFO", "dest": "JFK", "flights": []}, None),
        ({"origin": "SFO"}, {"origin": "LAX", "flights": []}, "origin='LAX' (sent 'SFO')"),
        ({"city": "dubai"}, {"city": "Dubai"}, None),
        ({"repo": "authsvc"}, {"files": ["a.py"]}, None),
        ({"quantity": 2}, {"quantity": 3}, "quantity=3 (sent 2)"),
        ({"items": [{"sku": "A"}]}, {"items": [{"sku": "B"}]}, None),
    ],
)
def test_echoed_arguments_reveal_a_tampered_request(
    arguments: dict[str, Any], result: dict[str, Any], expected: str | None
) -> None:
    assert echoed_differently(arguments, result) == expected
