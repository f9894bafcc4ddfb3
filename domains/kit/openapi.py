"""The OpenAPI 3.1 document of a domain's tool routes: one operation per tool.

Schemas live in `components/schemas` (pydantic's own generator names them and resolves
clashes), so frameworks that build clients from OpenAPI get one typed operation per tool,
with operationId = the tool's name.

The document also declares what an agent can get *through the proxy*: 429 with
Retry-After, 500, 502, 503, 504 and a `default`, all with the error body schema, so a
strict client (openapi-core, generated SDKs) parses an injected fault instead of failing
on an undeclared status. The numeric bound and the episode-id rule of kit/edge.py and
kit/store.py are stated in the schemas.
"""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit.edge import bound_schema
from chaosproxy.domains.kit.errors import ErrorBody
from chaosproxy.domains.kit.store import EPISODE_PATTERN, MAX_EPISODE_ID, EpisodeStore
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

REF = "#/components/schemas/{model}"


def _error_response(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    if headers:
        response["headers"] = headers
    return response


RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds (or an HTTP date) to wait before retrying.",
        "schema": {"type": "string"},
    }
}


def error_responses() -> dict[str, Any]:
    """The service's own errors, then what the proxy can inject (docs/faults.md)."""
    return {
        "400": _error_response("Malformed request (bad JSON, body not an object, bad header)."),
        "404": _error_response("Unknown tool or a referenced record does not exist."),
        "409": _error_response("The request conflicts with the current state."),
        "422": _error_response("Invalid arguments; `field`/`fields` name them."),
        "429": _error_response(
            "Rate limited (injected by the proxy); wait for Retry-After.", RETRY_AFTER
        ),
        "500": _error_response("A bug in the service, or an injected server error."),
        "502": _error_response("Bad gateway (injected by the proxy)."),
        "503": _error_response(
            "Service unavailable (injected by the proxy); retry later.", RETRY_AFTER
        ),
        "504": _error_response("Gateway timeout (injected by the proxy)."),
        "default": _error_response("Any other error, e.g. 403 from an injected quota fault."),
    }


def episode_parameter() -> dict[str, Any]:
    return {
        "name": "X-Chaos-Episode",
        "in": "header",
        "required": False,
        "description": "Episode whose state the call acts on (default: 'default'); "
        "a letter or digit, then up to 127 of letters, digits and `_.~-`.",
        "schema": {"type": "string", "pattern": EPISODE_PATTERN, "maxLength": MAX_EPISODE_ID},
    }


def _reachable(schema: Any, schemas: dict[str, Any], seen: set[str]) -> set[str]:
    """The component names `schema` refers to, transitively."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF.format(model="")):
            name = ref.rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                _reachable(schemas.get(name), schemas, seen)
        for value in schema.values():
            _reachable(value, schemas, seen)
    elif isinstance(schema, list):
        for item in schema:
            _reachable(item, schemas, seen)
    return seen


def openapi_document(store: EpisodeStore, server_url: str | None = None) -> dict[str, Any]:
    domain = store.domain
    inputs: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for tool in store.tools.values():
        inputs.append((tool.arguments_model, "validation"))
        inputs.append((tool.spec.result_model, "serialization"))
    inputs.append((ErrorBody, "serialization"))
    refs, definitions = models_json_schema(inputs, ref_template=REF)
    schemas: dict[str, Any] = definitions.get("$defs", {})
    inputs_of = _reachable(
        [refs[(tool.arguments_model, "validation")] for tool in store.tools.values()],
        schemas,
        set(),
    )
    for name in inputs_of:
        schemas[name] = bound_schema(schemas[name], domain.max_magnitude)

    paths: dict[str, Any] = {}
    for name, tool in store.tools.items():
        summary = tool.spec.description.splitlines()[0]
        paths[f"/tools/{name}"] = {
            "post": {
                "operationId": name,
                "summary": summary,
                "description": tool.spec.description,
                "tags": ["tools"],
                "parameters": [episode_parameter()],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": refs[(tool.arguments_model, "validation")]}
                    },
                },
                "responses": {
                    "200": {
                        "description": "The tool's result.",
                        "content": {
                            "application/json": {
                                "schema": refs[(tool.spec.result_model, "serialization")]
                            }
                        },
                    },
                    **error_responses(),
                },
                "x-idempotent": tool.spec.idempotent,
            }
        }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": f"{domain.title} tools",
            "version": "1.0.0",
            "description": domain.description or f"Tool API of the {domain.name!r} domain.",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document
