"""The OpenAPI document: valid 3.1, one operation per tool, loadable by an OpenAPI framework."""

from __future__ import annotations

from typing import Any

import fastmcp
import httpx
import httpx2
from jsonschema import Draft202012Validator
from openapi_pydantic.v3.v3_1 import OpenAPI


async def _document(base_url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.get("/openapi.json", headers=headers or {})
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


async def test_document_is_valid_openapi_31_with_every_tool(base_url: str) -> None:
    document = await _document(base_url)
    parsed = OpenAPI.model_validate(document)
    assert parsed.openapi == "3.1.0"
    async with httpx.AsyncClient(base_url=base_url) as http:
        tools = {tool["name"] for tool in (await http.get("/tools")).json()["tools"]}
    operations = {path: item["post"] for path, item in document["paths"].items()}
    assert set(operations) == {f"/tools/{name}" for name in tools}
    schemas = document["components"]["schemas"]
    for path, operation in operations.items():
        assert operation["operationId"] == path.removeprefix("/tools/")
        assert operation["summary"] and operation["description"]
        assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        for status in ("400", "404", "422", "500"):
            assert operation["responses"][status]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"
            }
    for ref in _refs(document):
        assert ref.startswith("#/components/schemas/") and ref.split("/")[-1] in schemas, ref
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    order_args = schemas["CreateOrderArguments"]
    assert order_args["required"] == ["sku", "quantity", "customer"]
    assert order_args["properties"]["quantity"]["minimum"] == 1


async def test_server_url_follows_forwarding_headers(base_url: str) -> None:
    direct = await _document(base_url)
    proxied = await _document(
        base_url, {"X-Forwarded-Host": "127.0.0.1:8700", "X-Forwarded-Prefix": "/e/ep1/toyshop/"}
    )
    assert direct["servers"] == [{"url": base_url}]
    assert proxied["servers"] == [{"url": "http://127.0.0.1:8700/e/ep1/toyshop"}]


async def test_an_openapi_driven_framework_can_load_and_call_the_tools(
    base_url: str, episode: str
) -> None:
    """fastmcp's OpenAPI provider builds tools from the document and calls our REST routes."""
    document = await _document(base_url)
    async with httpx2.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        server = fastmcp.FastMCP.from_openapi(document, client=http)
        async with fastmcp.Client(server) as client:
            names = {tool.name for tool in await client.list_tools()}
            result = await client.call_tool(
                "create_order",
                {"sku": "SKU-1", "quantity": 2, "customer": {"name": "Ana", "email": "a@x.io"}},
            )
        state = (await http.get(f"/_oracle/episodes/{episode}/state")).json()
    assert {"create_order", "list_items", "escalate_to_human"} <= names
    assert result.structured_content is not None and result.structured_content["total"] == 60.0
    assert state["orders"][0]["customer"]["name"] == "Ana"
