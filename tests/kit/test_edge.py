"""Hostile input at the service edge (issue 13 #1, #3): refused with a 4xx naming the field,
before any state changes, on REST and MCP; the oracle keeps answering afterwards."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
}


async def mcp_call_raw(http: httpx.AsyncClient, tool: str, raw_arguments: str) -> dict[str, Any]:
    """A stateless (2026-07-28) tools/call with the arguments spliced in as raw JSON text, so
    the request can carry what a JSON library would refuse to write (a lone surrogate)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    raw = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
        + json.dumps(tool)
        + ',"arguments":'
        + raw_arguments
        + ',"_meta":'
        + json.dumps(meta)
        + "}}"
    )
    response = await http.post(
        "/mcp",
        content=raw,
        headers={**MCP_HEADERS, "Mcp-Name": tool, "content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


async def oracle_still_answers(http: httpx.AsyncClient, episode: str) -> dict[str, Any]:
    for part in ("journal", "diff"):
        response = await http.get(f"/_oracle/episodes/{episode}/{part}")
        assert response.status_code == 200, (part, response.text)
    state = await http.get(f"/_oracle/episodes/{episode}/state")
    assert state.status_code == 200, state.text
    body: dict[str, Any] = state.json()
    return body


SURROGATES = [
    # (tool, raw JSON arguments, the field the error must name)
    ("set_note", '{"key": "k", "value": "x\\ud800y"}', "value"),
    ("set_note", '{"key": "\\udfff", "value": "v"}', "key"),
    ("set_note", '{"key": "k", "value": "v", "\\ud800": 1}', "\\ud800"),
    (
        "create_order",
        '{"sku": "SKU-1", "quantity": 1, "customer": {"name": "A\\ud83d", "email": "a@x.io"}}',
        "customer.name",
    ),
    (
        "create_order",
        '{"sku": "SKU-1", "quantity": 1, "customer": {"name": "A", "email": "a@x.io", '
        '"x\\udc00": "y"}}',
        "customer.x\\udc00",
    ),
]


@pytest.mark.parametrize(("tool", "raw", "field"), SURROGATES)
async def test_lone_surrogate_is_refused_on_rest_before_any_change(
    base_url: str, episode: str, tool: str, raw: str, field: str
) -> None:
    headers = {"X-Chaos-Episode": episode, "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as http:
        await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        response = await http.post(f"/tools/{tool}", content=raw)
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["field"] == field
        assert "Unicode" in error["message"]
        state = await oracle_still_answers(http, episode)
        journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    assert journal["entries"] == []
    assert state["notes"] == {} and state["orders"] == []


@pytest.mark.parametrize(("tool", "raw", "field"), SURROGATES)
async def test_lone_surrogate_is_a_tool_error_on_mcp_naming_the_field(
    base_url: str, episode: str, tool: str, raw: str, field: str
) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        result = await mcp_call_raw(http, tool, raw)
        state = await oracle_still_answers(http, episode)
    assert result["isError"] is True
    error = result["_meta"]["io.chaosproxy/error"]
    assert error["status"] == 422 and error["field"] == field
    assert state["notes"] == {} and state["orders"] == []


async def test_oracle_reset_refuses_a_state_with_a_lone_surrogate(
    base_url: str, episode: str
) -> None:
    raw = '{"state": {"notes": {"k": "\\ud800"}}}'
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post(
            f"/_oracle/episodes/{episode}/reset",
            content=raw,
            headers={"content-type": "application/json"},
        )
        listed = (await http.get("/_oracle/episodes")).json()["episodes"]
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "state.notes.k"
    assert episode not in listed


NUMBERS = [
    # (tool, raw JSON arguments, field) — values json.loads accepts but no domain means
    ("submit_answer", '{"total": 1e400}', "total"),  # parses as inf
    ("submit_answer", '{"total": -1e400}', "total"),
    ("submit_answer", '{"total": 1.7976931348623155e308}', "total"),
    ("submit_answer", '{"total": -4.5e297}', "total"),
    ("submit_answer", '{"total": 1000000000001}', "total"),
    ("list_items", '{"max_price": 1e13}', "max_price"),
    (
        "create_order",
        '{"sku": "SKU-1", "quantity": 100000000000000000000, '
        '"customer": {"name": "A", "email": "a@x.io"}}',
        "quantity",
    ),
]


@pytest.mark.parametrize(("tool", "raw", "field"), NUMBERS)
async def test_out_of_range_numbers_are_a_422_naming_the_field(
    base_url: str, episode: str, tool: str, raw: str, field: str
) -> None:
    headers = {"X-Chaos-Episode": episode, "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as http:
        await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        rest = await http.post(f"/tools/{tool}", content=raw)
        result = await mcp_call_raw(http, tool, raw)
        state = await oracle_still_answers(http, episode)
    assert rest.status_code == 422, rest.text
    assert rest.json()["error"]["field"] == field
    assert result["isError"] and result["_meta"]["io.chaosproxy/error"]["field"] == field
    assert state["answer"] is None and state["orders"] == []


async def test_the_bound_is_inclusive_and_stated_in_the_schemas(
    base_url: str, episode: str
) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        ok = await http.post("/tools/submit_answer", json={"total": -1e12})
        tools = {t["name"]: t for t in (await http.get("/tools")).json()["tools"]}
        document = (await http.get("/openapi.json")).json()
    assert ok.status_code == 200 and ok.json()["total"] == -1e12
    total = tools["submit_answer"]["input_schema"]["properties"]["total"]
    assert (total["minimum"], total["maximum"]) == (-1e12, 1e12)
    quantity = tools["create_order"]["input_schema"]["properties"]["quantity"]
    assert (quantity["minimum"], quantity["maximum"]) == (1, 10**12)  # keeps its own ge=1
    components = document["components"]["schemas"]
    assert components["SubmitAnswerArguments"]["properties"]["total"]["maximum"] == 1e12
    # results are not bounded: the bound is about what a client may send
    assert "maximum" not in components["AnswerResult"]["properties"]["total"]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ('{"total": ' + "9" * 5000 + "}", "4300 digits"),
        ('{"total": ' + "[" * 100_000 + "]" * 100_000 + "}", "recursion"),
        ('{"total": NaN}', "NaN"),
        ('{"total": Infinity}', "Infinity"),
    ],
    ids=["5000-digit-int", "deep-nesting", "NaN", "Infinity"],
)
async def test_unparseable_bodies_are_a_json_400(base_url: str, raw: str, needle: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post(
            "/tools/submit_answer", content=raw, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "malformed_json" and error["field"] == "(body)"
    assert needle in error["message"]


@pytest.mark.parametrize(
    ("episode", "ok"),
    [
        ("a", True),
        ("agent~task-01~e0.1~lambda0.2~t3", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("dir/x", False),
        ("-leading-dash", False),
        ("ünïcode", False),
        ("has space", False),
    ],
)
async def test_one_episode_id_rule_on_rest_mcp_and_oracle(
    base_url: str, episode: str, ok: bool
) -> None:
    # httpx refuses non-ASCII header values; servers see such ids only through the oracle path
    async with httpx.AsyncClient(base_url=base_url) as http:
        reset = await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        if episode.isascii():
            call = await http.post(
                "/tools/list_items", json={}, headers={"X-Chaos-Episode": episode}
            )
            assert call.status_code == (200 if ok else 400)
            if not ok:
                assert call.json()["error"]["field"] == "X-Chaos-Episode"
        document = (await http.get("/openapi.json")).json()
    assert reset.status_code in ((200,) if ok else (400, 404))
    parameter = document["paths"]["/tools/list_items"]["post"]["parameters"][0]
    assert parameter["schema"]["pattern"] == r"^[A-Za-z0-9][A-Za-z0-9_.~-]{0,127}$"


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search_products", {"query": "monitor", "max_price": 1.7976931348623155e308}, "max_price"),
        ("search_products", {"query": "monitor", "min_price": -1e300}, "min_price"),
        ("submit_answer", {"amount": -4.5e297}, "amount"),
    ],
)
async def test_ecommerce_overflowing_amounts_are_a_422_not_a_decimal_500(
    tool: str, arguments: dict[str, Any], field: str
) -> None:
    """The schemathesis finds of issue 13 #3, on the real e-commerce service."""
    from chaosproxy.domains.kit.testing import serve_app
    from chaosproxy.domains.registry import get_domain

    with serve_app(get_domain("ecommerce").asgi_app()) as url:
        async with httpx.AsyncClient(base_url=url, headers={"X-Chaos-Episode": "big"}) as http:
            response = await http.post(f"/tools/{tool}", json=arguments)
            state = await http.get("/_oracle/episodes/big/state")
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field
    assert state.status_code in (200, 404)
