"""Which tool a request to a REST API is: the identity of a generic REST call.

In this order: the upstream's OpenAPI 3.x document (the operation's `operationId`, else
`METHOD /path/{template}`); the profile's `routes:` for the upstream (`"METHOD /path/{x}":
tool`); `POST /tools/{name}` (the kit's convention); otherwise `METHOD` and the literal path
with numeric and UUID segments collapsed to `{id}`. Path parameters become arguments, so
ParameterCorruption can rewrite them; critical ones are inferred from the OpenAPI schema
(enums, dates, ids).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from chaosproxy.errors import ChaosError

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
DESCRIPTION_PATHS = frozenset(
    {"/openapi.json", "/openapi.yaml", "/swagger.json", "/v3/api-docs", "/docs", "/redoc"}
)
"""Fetching the API's description is protocol traffic, not a tool call."""

_TOOL_PATH = re.compile(r"^/tools/([A-Za-z0-9_.-]+)/?$")
TOOL_TEMPLATE = "/tools/{name}"
"""The route of a built-in-style tool call, `POST /tools/{name}`."""
_NUMERIC = re.compile(r"^\d+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


class OpenApiError(ChaosError, ValueError):
    """An OpenAPI document given for an upstream that cannot be used; names both and why."""


@dataclass(frozen=True)
class RouteMatch:
    """A request identified: the tool, its route template and its path parameters.

    `positions` maps each path parameter to its segment index in the path, so a
    corrupted value can be put back in place.
    """

    tool: str
    template: str
    params: dict[str, str] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    segments: tuple[str, ...]
    tool: str

    def match(self, method: str, segments: list[str]) -> RouteMatch | None:
        if method != self.method or len(segments) != len(self.segments):
            return None
        params: dict[str, str] = {}
        positions: dict[str, int] = {}
        for index, (want, got) in enumerate(zip(self.segments, segments, strict=True)):
            if want.startswith("{") and want.endswith("}"):
                if not got:
                    return None
                params[want[1:-1]] = unquote(got)
                positions[want[1:-1]] = index
            elif want != got:
                return None
        return RouteMatch(self.tool, self.template, params, positions)


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/") if path.strip("/") else []


def _operation(method: str, template: str, tool: str | None) -> Operation:
    name = tool or f"{method} {template}"
    return Operation(method.upper(), template, tuple(_segments(template)), name)


def _specificity(operation: Operation) -> tuple[int, int]:
    literal = sum(1 for part in operation.segments if not part.startswith("{"))
    return (-literal, -len(operation.segments))


class ApiMap:
    """The operations of one REST upstream, most specific first."""

    def __init__(self, operations: list[Operation], critical: dict[str, Any] | None = None):
        self.operations = sorted(operations, key=_specificity)
        self.critical: dict[str, Any] = critical or {}

    def match(self, method: str, path: str) -> RouteMatch | None:
        segments = _segments(path)
        for operation in self.operations:
            found = operation.match(method, segments)
            if found is not None:
                return found
        return None

    @classmethod
    def from_routes(cls, routes: dict[str, str]) -> ApiMap:
        """A profile's `routes:` mapping `"METHOD /path/{param}"` → tool name."""
        operations = []
        for key, tool in routes.items():
            method, _, template = key.strip().partition(" ")
            operations.append(_operation(method.upper(), template.strip() or "/", tool))
        return cls(operations)

    @classmethod
    def from_openapi(cls, document: Any) -> ApiMap | None:
        """None unless `document` is an OpenAPI 3.x document with paths."""
        if not_openapi(document) is not None:
            return None
        paths = document["paths"]
        operations: list[Operation] = []
        critical: dict[str, Any] = {}
        for template, item in paths.items():
            if not isinstance(item, dict) or not isinstance(template, str):
                continue
            shared: list[Any] = (
                item["parameters"] if isinstance(item.get("parameters"), list) else []
            )
            for method in METHODS:
                spec = item.get(method)
                if not isinstance(spec, dict):
                    continue
                operation_id = spec.get("operationId")
                operation = _operation(
                    method.upper(),
                    template,
                    operation_id if isinstance(operation_id, str) else None,
                )
                operations.append(operation)
                own: list[Any] = (
                    spec["parameters"] if isinstance(spec.get("parameters"), list) else []
                )
                inferred = _critical_of(document, [*shared, *own], spec.get("requestBody"))
                if inferred:
                    critical[operation.tool] = inferred
        return cls(operations, critical)


def not_openapi(document: Any) -> str | None:
    """Why `document` is not an OpenAPI 3.x document with paths; None when it is."""
    if not isinstance(document, dict):
        return f"not an OpenAPI document (a {type(document).__name__}, not a mapping)"
    version = document.get("openapi")
    if version is None:
        found = f"'swagger: {document['swagger']}'" if "swagger" in document else "none"
        return f"not an OpenAPI 3.x document (no 'openapi' version field; found {found})"
    if not str(version).startswith("3."):
        return f"not an OpenAPI 3.x document ('openapi: {version}')"
    if not isinstance(document.get("paths"), dict):
        return "an OpenAPI document without a 'paths' mapping"
    return None


def fallback(method: str, path: str) -> RouteMatch:
    """`METHOD /literal/path` with numeric and UUID segments collapsed to `{id}`."""
    segments = _segments(path)
    params: dict[str, str] = {}
    positions: dict[str, int] = {}
    shown = []
    for index, part in enumerate(segments):
        value = unquote(part)
        if _NUMERIC.match(value) or _UUID.match(value):
            name = "id" if "id" not in params else f"id{len(params) + 1}"
            params[name] = value
            positions[name] = index
            shown.append("{id}")
        else:
            shown.append(part)
    template = "/" + "/".join(shown)
    return RouteMatch(f"{method} {template}", template, params, positions)


def identify(
    method: str, path: str, api: ApiMap | None, routes: ApiMap | None
) -> RouteMatch | None:
    """The tool a REST request calls; None for protocol traffic (the API's description)."""
    if path.rstrip("/") in DESCRIPTION_PATHS:
        return None
    for source in (api, routes):
        if source is not None:
            found = source.match(method, path)
            if found is not None:
                return found
    tool = _TOOL_PATH.match(unquote(path) if "%" in path else path)
    if tool is not None and method == "POST":
        return RouteMatch(tool.group(1), TOOL_TEMPLATE)
    return fallback(method, path)


# ---- critical arguments from the schema ----------------------------------------


def _resolve(document: dict[str, Any], schema: Any) -> Any:
    for _ in range(8):
        if not isinstance(schema, dict) or "$ref" not in schema:
            return schema
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            return None
        node: Any = document
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        schema = node
    return None


def _spec_of(name: str, schema: Any) -> dict[str, Any] | None:
    """A ParameterCorruption spec for an id, a date or an enum; None for anything else."""
    if not isinstance(schema, dict):
        return None
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) > 1:
        return {"kind": "choice", "values": list(enum)}
    if schema.get("format") in ("date", "date-time"):
        return {"kind": "date_shift"}
    lowered = name.lower()
    if lowered == "id" or lowered.endswith("_id") or lowered.endswith("id"):
        return {"kind": "id_bump"}
    return None


def _critical_of(
    document: dict[str, Any], parameters: list[Any], request_body: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for parameter in parameters:
        parameter = _resolve(document, parameter)
        if not isinstance(parameter, dict) or parameter.get("in") not in ("path", "query"):
            continue
        name = str(parameter.get("name", ""))
        spec = _spec_of(name, _resolve(document, parameter.get("schema")))
        if name and spec is not None:
            out[name] = spec
    body = _resolve(document, request_body)
    content = body.get("content") if isinstance(body, dict) else None
    media = content.get("application/json") if isinstance(content, dict) else None
    schema = _resolve(document, media.get("schema")) if isinstance(media, dict) else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict):
        for name, prop in properties.items():
            spec = _spec_of(str(name), _resolve(document, prop))
            if spec is not None:
                out[str(name)] = spec
    return out
