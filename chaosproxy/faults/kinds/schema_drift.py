"""SchemaDrift: one consistent API version change ("v2") for the rest of an episode.

- rename: snake_case keys become camelCase, and common one-word keys take a v2 name
  (price -> cost, status -> state, ...);
- retype: numbers become strings ("299.00");
- renest: the object moves under `data`, beside `api_version`.
The same rules rewrite a tool's MCP `outputSchema`, and (rename only) its
`inputSchema`; the engine maps drifted argument names back (`episode.upstream_arguments`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import Effect, FaultUnit, Reply

if TYPE_CHECKING:
    from chaosproxy.faults.episode import Incident

API_VERSION = "v2"

DriftOp = Literal["rename", "retype", "renest"]
ALL_OPS: list[str] = ["rename", "retype", "renest"]


def _all_drift_ops() -> list[DriftOp]:
    return ["rename", "retype", "renest"]


class SchemaDriftParams(Params):
    ops: list[DriftOp] = Field(default_factory=_all_drift_ops, min_length=1)
    input: bool = Field(True, description="also rename the MCP input schema's arguments")
    announce: bool = Field(
        True,
        description="MCP: announce the new tools/list with notifications/tools/list_changed "
        "where the session has a stream; false: silent drift",
    )


class SchemaDrift(FaultUnit):
    name = "SchemaDrift"
    params = SchemaDriftParams
    stage = "episode"
    recoverable = False
    summary = "from this call on the tool speaks API v2: renamed, retyped, re-nested"
    retryable = False
    persistent_data = True
    incident = True
    after_rank = 40

    def transform(self, reply: Reply) -> Effect | None:
        ops = list(reply.planned.params.get("ops") or ALL_OPS)
        return Effect(body=drift_body(reply.body, ops), info={"ops": ops})

    def rewrite_tool(
        self, incident: Incident, tool: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]] | None:
        ops = list(incident.params.get("ops") or ALL_OPS)
        return drift_tool(tool, ops, bool(incident.params.get("input", True)))

    def announced(self, incident: Incident) -> bool:
        return bool(incident.params.get("announce", True))


_SYNONYMS = {
    "price": "cost",
    "status": "state",
    "date": "day",
    "name": "label",
    "total": "amount",
    "city": "location",
    "time": "at",
    "quantity": "qty",
    "email": "emailAddress",
    "description": "details",
    "origin": "from",
    "destination": "to",
    "dest": "to",
    "count": "size",
    "reason": "cause",
    "notes": "remarks",
    "title": "subject",
}


def rename_key(key: str) -> str:
    if "_" in key.strip("_"):
        head, *rest = key.strip("_").split("_")
        return head + "".join(part[:1].upper() + part[1:] for part in rest if part)
    return _SYNONYMS.get(key, key)


def renames_of(keys: list[str]) -> dict[str, str]:
    """Old -> new for one object, leaving a key alone when its new name is taken."""
    taken = set(keys)
    mapping: dict[str, str] = {}
    for key in keys:
        new = rename_key(key)
        if new != key and new not in taken:
            mapping[key] = new
            taken.add(new)
    return mapping


def _retyped(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _walk(value: Any, rename: bool, retype: bool) -> Any:
    if isinstance(value, list):
        return [_walk(item, rename, retype) for item in value]
    if isinstance(value, dict):
        mapping = renames_of(list(value)) if rename else {}
        return {mapping.get(k, k): _walk(v, rename, retype) for k, v in value.items()}
    return _retyped(value) if retype else value


def drift_body(body: Any, ops: list[str]) -> Any:
    """The v2 form of a response body."""
    new = _walk(body, "rename" in ops, "retype" in ops)
    if "renest" in ops:
        return {"api_version": API_VERSION, "data": new}
    return new


def _schema(schema: Any, rename: bool, retype: bool) -> Any:
    if isinstance(schema, list):
        return [_schema(item, rename, retype) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    mapping: dict[str, str] = {}
    properties = schema.get("properties")
    if rename and isinstance(properties, dict):
        mapping = renames_of(list(properties))
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {mapping.get(k, k): _schema(v, rename, retype) for k, v in value.items()}
        elif key == "required" and isinstance(value, list):
            out[key] = [mapping.get(k, k) for k in value]
        elif key == "type" and retype and value in ("number", "integer"):
            out[key] = "string"
        elif key == "type" and retype and isinstance(value, list):
            out[key] = ["string" if t in ("number", "integer") else t for t in value]
        elif key in {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} and retype:
            continue
        else:
            out[key] = _schema(value, rename, retype)
    return out


def drift_output_schema(schema: dict[str, Any], ops: list[str]) -> dict[str, Any]:
    drifted: dict[str, Any] = _schema(schema, "rename" in ops, "retype" in ops)
    if "renest" not in ops:
        return drifted
    defs: dict[str, Any] = {
        key: drifted.pop(key) for key in ("$defs", "definitions") if key in drifted
    }
    return {
        "type": "object",
        "properties": {"api_version": {"type": "string", "const": API_VERSION}, "data": drifted},
        "required": ["api_version", "data"],
        **defs,
    }


def drift_input_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Renamed top-level arguments, and the map drifted name -> upstream name."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return copy.deepcopy(schema), {}
    mapping = renames_of(list(properties))
    out = copy.deepcopy(schema)
    out["properties"] = {mapping.get(k, k): v for k, v in out["properties"].items()}
    if isinstance(out.get("required"), list):
        out["required"] = [mapping.get(k, k) for k in out["required"]]
    return out, {new: old for old, new in mapping.items()}


def drift_tool(
    tool: dict[str, Any], ops: list[str], input_too: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """A tools/list entry in its v2 form, and its argument renames."""
    out = copy.deepcopy(tool)
    renames: dict[str, str] = {}
    if isinstance(out.get("outputSchema"), dict):
        out["outputSchema"] = drift_output_schema(out["outputSchema"], ops)
    if input_too and "rename" in ops and isinstance(out.get("inputSchema"), dict):
        out["inputSchema"], renames = drift_input_schema(out["inputSchema"])
    if isinstance(out.get("description"), str):
        out["description"] = f"{out['description']} (API {API_VERSION})"
    return out, renames
