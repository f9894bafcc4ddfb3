"""Response checks the robust agent applies: undo schema drift, spot contradictions.

These work from the tool's published output schema (GET /tools or MCP tools/list), never
from knowledge of how chaosproxy drifts a schema: a renamed field is matched by name
similarity and type, a re-nested object is lifted back up, a retyped scalar is parsed.
"""

from __future__ import annotations

from typing import Any

JsonSchema = dict[str, Any]

_SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def repair(value: Any, schema: JsonSchema, root: JsonSchema | None = None) -> Any:
    """Return `value` reshaped to match `schema` where a faithful mapping exists."""
    root = root or schema
    schema = _resolve(schema, root)
    if "anyOf" in schema:
        options = [_resolve(option, root) for option in schema["anyOf"]]
        for option in options:
            if _matches_type(value, option):
                return repair(value, option, root)
        return value
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        return _repair_object(value, schema, root)
    if kind == "array" and isinstance(value, list) and "items" in schema:
        return [repair(item, schema["items"], root) for item in value]
    return _retype(value, kind)


def missing_required(value: Any, schema: JsonSchema, root: JsonSchema | None = None) -> list[str]:
    """Required fields absent after repair, as dotted paths (a dropped field, a cut record)."""
    root = root or schema
    schema = _resolve(schema, root)
    problems: list[str] = []
    if schema.get("type") == "object" and isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(name)
            elif name in properties:
                problems += [
                    f"{name}.{inner}"
                    for inner in missing_required(value[name], properties[name], root)
                ]
    elif schema.get("type") == "array" and isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += [
                f"[{index}].{inner}" for inner in missing_required(item, schema["items"], root)
            ]
    return problems


def echoed_differently(arguments: dict[str, Any], result: dict[str, Any]) -> str | None:
    """An argument the response echoes back with another value: the request was altered
    on its way (many APIs echo their query; that is how a careful client notices)."""
    for name, sent in arguments.items():
        echoed = result.get(name)
        if _is_scalar(sent) and _is_scalar(echoed) and _normalised(echoed) != _normalised(sent):
            return f"{name}={echoed!r} (sent {sent!r})"
    return None


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _normalised(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


def find_contradiction(value: Any) -> str | None:
    """Two records with the same id but different content, anywhere in the response."""
    if isinstance(value, dict):
        for inner in value.values():
            found = find_contradiction(inner)
            if found:
                return found
    if isinstance(value, list):
        records = [item for item in value if isinstance(item, dict)]
        key = _id_key(records)
        if key is not None:
            seen: dict[Any, dict[str, Any]] = {}
            for record in records:
                identifier = record.get(key)
                if identifier is None:
                    continue
                if identifier in seen and seen[identifier] != record:
                    return f"two records with {key}={identifier!r} disagree"
                seen[identifier] = record
        for item in value:
            found = find_contradiction(item)
            if found:
                return found
    return None


def _repair_object(value: dict[str, Any], schema: JsonSchema, root: JsonSchema) -> dict[str, Any]:
    properties: dict[str, JsonSchema] = schema.get("properties", {})
    result = dict(value)
    missing = [name for name in properties if name not in result]
    if missing:
        _lift_nested(result, missing, properties)
        missing = [name for name in properties if name not in result]
    if missing:
        _align_by_position(result, properties, root)
    for name, sub_schema in properties.items():
        if name in result:
            result[name] = repair(result[name], sub_schema, root)
    return result


def _align_by_position(
    result: dict[str, Any], properties: dict[str, JsonSchema], root: JsonSchema
) -> None:
    """A renamed field usually keeps its place: pair unknown keys with missing ones in order.

    Pydantic serialises fields in declaration order, which is the schema's property order,
    so walking both in order and pairing each missing property with the next unknown key
    of a compatible type recovers a consistent rename without knowing the new names.
    """
    unknown = [key for key in result if key not in properties]
    missing = [name for name in properties if name not in result]
    renames: dict[str, str] = {}
    cursor = 0
    for name in missing:
        wanted = _resolve(properties[name], root)
        for index in range(cursor, len(unknown)):
            value = result[unknown[index]]
            if _matches_type(value, wanted) or _retypable(value, wanted):
                renames[unknown[index]] = name
                cursor = index + 1
                break
    if renames:
        rebuilt = {renames.get(key, key): value for key, value in result.items()}
        result.clear()
        result.update(rebuilt)


def _lift_nested(
    result: dict[str, Any], missing: list[str], properties: dict[str, JsonSchema]
) -> None:
    """Unwrap an envelope (`{"data": {...}, "api_version": ...}`): the record comes first,
    the envelope's other keys after it, so positional alignment sees the record's order."""
    for key in [key for key in result if key not in properties]:
        inner = result[key]
        if isinstance(inner, dict) and any(name in inner for name in missing):
            envelope = {k: v for k, v in result.items() if k != key and k not in inner}
            result.clear()
            result.update(inner)
            result.update(envelope)
            return


def _retype(value: Any, kind: Any) -> Any:
    if kind == "number" and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if kind == "integer" and isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return value
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _retypable(value: Any, schema: JsonSchema) -> bool:
    return _retype(value, schema.get("type")) is not value


def _matches_type(value: Any, schema: JsonSchema) -> bool:
    kind = schema.get("type")
    if kind is None:
        return True
    if kind == "null":
        return value is None
    expected = _SCALAR_TYPES.get(kind)
    if expected is None:
        return True
    if isinstance(value, bool) and kind in {"integer", "number"}:
        return False
    return isinstance(value, expected)


def _resolve(schema: JsonSchema, root: JsonSchema) -> JsonSchema:
    while "$ref" in schema:
        reference: str = schema["$ref"]
        target: Any = root
        for part in reference.removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def _id_key(records: list[dict[str, Any]]) -> str | None:
    if len(records) < 2:
        return None
    common = set(records[0]).intersection(*records[1:])
    for key in records[0]:
        if key in common and (key == "id" or key.endswith("_id")):
            return key
    return None


def renamed_arguments(old: JsonSchema, new: JsonSchema) -> dict[str, str]:
    """Old argument name -> new, when a tool's input schema renamed its arguments.

    Like a renamed result field, a renamed argument keeps its place: the properties the new
    schema dropped are paired, in order, with the ones it added (of a compatible type).
    """
    before: dict[str, JsonSchema] = old.get("properties") or {}
    after: dict[str, JsonSchema] = new.get("properties") or {}
    gone = [name for name in before if name not in after]
    added = [name for name in after if name not in before]
    renames: dict[str, str] = {}
    cursor = 0
    for name in gone:
        for index in range(cursor, len(added)):
            if before[name].get("type") == after[added[index]].get("type"):
                renames[name] = added[index]
                cursor = index + 1
                break
    return renames
