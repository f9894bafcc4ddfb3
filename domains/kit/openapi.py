"""The OpenAPI 3.1 document of a domain's tool routes: one operation per tool.

Schemas live in `components/schemas` (pydantic's own generator names them and resolves
clashes), so frameworks that build clients from OpenAPI get one typed operation per tool,
with operationId = the tool's name.
"""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit.errors import ErrorBody
from chaosproxy.domains.kit.store import EpisodeStore
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

REF = "#/components/schemas/{model}"


def _error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }


def openapi_document(store: EpisodeStore, server_url: str | None = None) -> dict[str, Any]:
    domain = store.domain
    inputs: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for tool in store.tools.values():
        inputs.append((tool.arguments_model, "validation"))
        inputs.append((tool.spec.result_model, "serialization"))
    inputs.append((ErrorBody, "serialization"))
    refs, definitions = models_json_schema(inputs, ref_template=REF)
    schemas: dict[str, Any] = definitions.get("$defs", {})

    paths: dict[str, Any] = {}
    for name, tool in store.tools.items():
        summary = tool.spec.description.splitlines()[0]
        paths[f"/tools/{name}"] = {
            "post": {
                "operationId": name,
                "summary": summary,
                "description": tool.spec.description,
                "tags": ["tools"],
                "parameters": [
                    {
                        "name": "X-Chaos-Episode",
                        "in": "header",
                        "required": False,
                        "description": "Episode whose state the call acts on (default: 'default').",
                        "schema": {"type": "string"},
                    }
                ],
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
                    "400": _error_response("Malformed request (bad JSON, body not an object)."),
                    "404": _error_response("Unknown tool or a referenced record does not exist."),
                    "409": _error_response("The request conflicts with the current state."),
                    "422": _error_response("Invalid arguments; `field`/`fields` name them."),
                    "500": _error_response("A bug in the service."),
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
