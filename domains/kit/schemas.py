"""Per-tool argument models and JSON schemas, derived once from a ToolSpec.

REST and MCP validate with the same pydantic model and advertise the same schema, so
the two transports cannot drift apart, and a validation error reads the same on both.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from chaosproxy.domains.kit.declare import ToolSpec
from fastmcp.utilities.json_schema import dereference_refs
from pydantic import BaseModel, ConfigDict, ValidationError, create_model


class FieldProblem(BaseModel):
    field: str
    problem: str


@dataclass(frozen=True)
class ToolSchema:
    """What the transports need about one tool beyond its spec."""

    spec: ToolSpec
    arguments_model: type[BaseModel]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    @property
    def name(self) -> str:
        return self.spec.name


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def arguments_model(spec: ToolSpec) -> type[BaseModel]:
    """A strict-about-names pydantic model of the tool's parameters (state excluded)."""
    fields: dict[str, Any] = {}
    for parameter in spec.parameters:
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (spec.type_hints[parameter.name], default)
    model: type[BaseModel] = create_model(
        f"{_camel(spec.name)}Arguments",
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"Arguments of {spec.name}.",
        **fields,
    )
    return model


def tool_schema(spec: ToolSpec, max_magnitude: float | None = None) -> ToolSchema:
    """With `max_magnitude`, the input schema states the kit's numeric bound (kit/edge.py)."""
    from chaosproxy.domains.kit.edge import bound_schema

    model = arguments_model(spec)
    input_schema = dereference_refs(model.model_json_schema(mode="validation"))
    return ToolSchema(
        spec=spec,
        arguments_model=model,
        input_schema=input_schema
        if max_magnitude is None
        else bound_schema(input_schema, max_magnitude),
        output_schema=dereference_refs(spec.result_model.model_json_schema(mode="serialization")),
    )


def field_path(location: tuple[int | str, ...]) -> str:
    """('items', 0, 'sku') -> 'items[0].sku'."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def problems(error: ValidationError) -> list[FieldProblem]:
    """One readable line per invalid field; unknown fields are named as such."""
    found: list[FieldProblem] = []
    for item in error.errors(include_url=False):
        field = field_path(item["loc"]) or "(body)"
        if item["type"] == "missing":
            problem = "required field is missing"
        elif item["type"] == "extra_forbidden":
            problem = "unknown field"
        else:
            problem = f"{item['msg']} (got {_short(item.get('input'))})"
        found.append(FieldProblem(field=field, problem=problem))
    return found


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
