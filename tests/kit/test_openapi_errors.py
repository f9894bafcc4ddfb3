"""Every domain's OpenAPI document declares the errors an agent can get through the proxy
(issue 10): a strict OpenAPI client (openapi-core) parses an injected 504 or 429 instead of
failing on an undeclared status."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit.openapi import openapi_document
from chaosproxy.domains.kit.store import EpisodeStore
from chaosproxy.domains.registry import all_domains
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from chaosproxy.faults.responses import error_body

SERVER = "http://127.0.0.1:8700"
DOMAINS = {domain.name: domain for domain in all_domains()}


@cache
def spec_of(name: str) -> tuple[OpenAPI, str]:
    document = openapi_document(EpisodeStore(DOMAINS[name]), SERVER)
    tool = next(iter(document["paths"])).rsplit("/", 1)[-1]
    return OpenAPI.from_dict(document), tool


def unmarshal(
    spec: OpenAPI, tool: str, status: int, body: Any, headers: dict[str, str] | None = None
) -> Any:
    request = MockRequest(SERVER, "post", f"/tools/{tool}", data=b"{}")
    response = MockResponse(json.dumps(body).encode(), status_code=status, headers=headers)
    return spec.unmarshal_response(request, response)


@pytest.mark.parametrize("name", sorted(DOMAINS))
@pytest.mark.parametrize("status", [500, 502, 503, 504, 403])
def test_an_injected_server_error_parses_in_every_domain(name: str, status: int) -> None:
    spec, tool = spec_of(name)
    body = error_body(status, 0.25)  # what the proxy's fault engine sends
    result = unmarshal(spec, tool, status, body)
    assert result.errors == []
    assert result.data["error"]["type"] == body["error"]["type"]
    assert result.data["error"]["request_id"] == body["error"]["request_id"]


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_an_injected_429_parses_with_its_retry_after(name: str) -> None:
    spec, tool = spec_of(name)
    result = unmarshal(spec, tool, 429, error_body(429, 0.5), {"Retry-After": "1"})
    assert result.errors == []
    assert result.headers == {"Retry-After": "1"}
    document = openapi_document(EpisodeStore(DOMAINS[name]), SERVER)
    operation = document["paths"][f"/tools/{tool}"]["post"]
    assert {"429", "500", "502", "503", "504", "default"} <= set(operation["responses"])
    assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_a_body_that_is_not_the_error_schema_is_still_caught() -> None:
    """The error schema means something: a 504 without `error.type` does not validate."""
    spec, tool = spec_of("travel")
    result = unmarshal(spec, tool, 504, {"detail": "timeout"})
    assert result.errors


async def test_a_real_service_422_parses(base_url: str, episode: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        document = (await http.get("/openapi.json")).json()
        response = await http.post(
            "/tools/create_order",
            json={"sku": "SKU-1", "quantity": 0, "customer": {"name": "A", "email": "a@x.io"}},
            headers={"X-Chaos-Episode": episode},
        )
    spec = OpenAPI.from_dict(document)
    request = MockRequest(base_url, "post", "/tools/create_order", data=b"{}")
    result = spec.unmarshal_response(
        request, MockResponse(response.content, status_code=response.status_code)
    )
    assert response.status_code == 422 and result.errors == []
    assert result.data["error"]["field"] == "quantity"
