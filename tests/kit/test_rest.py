"""REST face of the kit: listing, calls, errors that name the problem, journal and rollback."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

CUSTOMER = {"name": "Ana Ruiz", "email": "ana@example.com"}


async def test_health_and_tool_listing(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        health = (await http.get("/health")).json()
        listing = (await http.get("/tools")).json()
    assert health["status"] == "ok" and health["domain"] == "toyshop"
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert set(tools) == {
        "escalate_to_human",
        "list_items",
        "create_order",
        "set_note",
        "submit_answer",
        "explode",
        "slow_increment",
    }
    order = tools["create_order"]
    assert order["input_schema"]["required"] == ["sku", "quantity", "customer"]
    assert (
        order["input_schema"]["properties"]["customer"]["properties"]["email"]["type"] == "string"
    )
    assert "$defs" not in order["input_schema"]
    assert order["output_schema"]["properties"]["order_id"]["type"] == "string"
    assert order["idempotent"] is False and tools["list_items"]["idempotent"] is True
    assert order["critical"]["sku"]["kind"] == "choice"


async def test_call_changes_state_and_journals_with_step(base_url: str, episode: str) -> None:
    headers = {"X-Chaos-Episode": episode, "X-Chaos-Step": "4"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as http:
        listed = await http.post("/tools/list_items", json={"max_price": 40})
        placed = await http.post(
            "/tools/create_order", json={"sku": "SKU-1", "quantity": 2, "customer": CUSTOMER}
        )
        journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    assert [item["sku"] for item in listed.json()["items"]] == ["SKU-1", "SKU-3"]
    assert placed.status_code == 200
    assert placed.json() == {
        "order_id": "ORD-0001",
        "sku": "SKU-1",
        "quantity": 2,
        "total": 60.0,
        "customer": CUSTOMER,
        "status": "placed",
    }
    # the read-only call changed nothing, so only the order is journaled
    assert [(e["seq"], e["step"], e["tool"], e["transport"]) for e in journal["entries"]] == [
        (1, 4, "create_order", "rest")
    ]
    assert journal["entries"][0]["state_after"]["items"][0]["stock"] == 3
    assert journal["final_state"] == journal["entries"][0]["state_after"]
    assert journal["initial_state"]["items"][0]["stock"] == 5


async def test_no_episode_header_means_default(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        await http.post("/tools/set_note", json={"key": "who", "value": "default-episode"})
        state = (await http.get("/_oracle/episodes/default/state")).json()
    assert state["notes"]["who"] == "default-episode"


async def test_empty_body_means_no_arguments(base_url: str, episode: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        response = await http.post("/tools/list_items")
    assert response.status_code == 200 and response.json()["count"] == 3


BAD_INPUT: list[tuple[str, str, Any, int, str, str | None]] = [
    # (case, tool, body (str = raw bytes), status, error type, field named)
    (
        "missing field",
        "create_order",
        {"sku": "SKU-1", "quantity": 1},
        422,
        "validation_error",
        "customer",
    ),
    (
        "wrong type int",
        "create_order",
        {"sku": "SKU-1", "quantity": "two", "customer": CUSTOMER},
        422,
        "validation_error",
        "quantity",
    ),
    ("wrong type str", "set_note", {"key": 5, "value": "x"}, 422, "validation_error", "key"),
    (
        "wrong type float",
        "list_items",
        {"max_price": "cheap"},
        422,
        "validation_error",
        "max_price",
    ),
    (
        "nested field",
        "create_order",
        {"sku": "SKU-1", "quantity": 1, "customer": {"name": "A"}},
        422,
        "validation_error",
        "customer.email",
    ),
    (
        "constraint",
        "create_order",
        {"sku": "SKU-1", "quantity": 0, "customer": CUSTOMER},
        422,
        "validation_error",
        "quantity",
    ),
    (
        "unknown field",
        "set_note",
        {"key": "a", "value": "b", "colour": "red"},
        422,
        "validation_error",
        "colour",
    ),
    ("unknown tool", "launch_rocket", {}, 404, "unknown_tool", "tool"),
    ("malformed json", "set_note", '{"key": "a", ', 400, "malformed_json", "(body)"),
    ("body is a list", "set_note", "[1, 2]", 400, "bad_request", "(body)"),
    ("body is a string", "set_note", '"hello"', 400, "bad_request", "(body)"),
    (
        "domain refusal",
        "create_order",
        {"sku": "SKU-404", "quantity": 1, "customer": CUSTOMER},
        404,
        "tool_error",
        "sku",
    ),
    (
        "conflict",
        "create_order",
        {"sku": "SKU-2", "quantity": 3, "customer": CUSTOMER},
        409,
        "tool_error",
        "quantity",
    ),
    ("empty reason", "escalate_to_human", {"reason": "  "}, 422, "tool_error", "reason"),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "error_type", "field"),
    [case[1:] for case in BAD_INPUT],
    ids=[case[0] for case in BAD_INPUT],
)
async def test_bad_input_is_a_4xx_naming_the_problem(
    base_url: str,
    episode: str,
    tool: str,
    body: Any,
    status: int,
    error_type: str,
    field: str | None,
) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        before = await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        if isinstance(body, str):
            response = await http.post(
                f"/tools/{tool}", content=body, headers={"content-type": "application/json"}
            )
        else:
            response = await http.post(f"/tools/{tool}", json=body)
        after = (await http.get(f"/_oracle/episodes/{episode}/state")).json()
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["type"] == error_type
    assert error.get("field") == field
    if error_type == "validation_error":
        assert field is not None and field in error["message"]
        assert any(problem["field"] == field for problem in error["fields"])
    if error_type == "unknown_tool":
        assert tool in error["message"] and "create_order" in error["message"]
    # a refused call leaves no trace in the state
    assert after == before.json()["state"]


async def test_bad_step_header_is_a_400(base_url: str, episode: str) -> None:
    headers = {"X-Chaos-Episode": episode, "X-Chaos-Step": "three"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as http:
        response = await http.post("/tools/list_items", json={})
    assert response.status_code == 400 and response.json()["error"]["field"] == "X-Chaos-Step"


async def test_tool_bug_is_a_json_500_and_rolls_back(base_url: str, episode: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        response = await http.post("/tools/explode", json={})
        state = (await http.get(f"/_oracle/episodes/{episode}/state")).json()
        journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "internal_error"
    assert "explode" in response.json()["error"]["message"]
    assert "half" not in state["notes"] and journal["entries"] == []


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/nowhere", 404), ("DELETE", "/tools/set_note", 405)]
)
async def test_unknown_routes_answer_json(
    base_url: str, method: str, path: str, status: int
) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.request(method, path)
    assert response.status_code == status
    assert path in response.json()["error"]["message"]
