"""Hostile-input checks at the service edge, run before any state changes.

The agent under test is untrusted. Two kinds of JSON value pass `json.loads` and pydantic
yet break a service later: text that is not valid Unicode (a lone surrogate such as
"\\ud800" cannot be encoded, so the reply, the journal and the oracle's state fail after
the state has changed) and numbers no domain means (NaN, Infinity, 1e308, a 300-digit
integer) that overflow `Decimal` arithmetic or date maths inside a tool. Both are refused
here with a 4xx naming the field, for every tool of every domain, on REST and MCP alike.

The numeric rule is also written into each tool's JSON schema (`minimum`/`maximum`), so
clients and fuzzers see it.

The same holds on the way out (`sendable`): a tool's result may carry what the agent put in
it (the coding sandbox returns what a snippet printed), so text that is not valid Unicode is
escaped, and a result JSON cannot carry (NaN, nesting deeper than `MAX_RESULT_DEPTH`) is
`UnsendableResult`, which the store answers as the call's error: never a 500.
"""

from __future__ import annotations

import json
import math
from typing import Any

from chaosproxy.domains.kit.declare import DEFAULT_MAX_MAGNITUDE as MAX_MAGNITUDE
from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.schemas import FieldProblem, field_path


def bad_text(text: str) -> bool:
    """True when `text` holds a lone surrogate (not encodable as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def find_problems(
    value: Any, *, max_magnitude: float | None = MAX_MAGNITUDE, prefix: tuple[int | str, ...] = ()
) -> list[FieldProblem]:
    """Every invalid string (key or value), non-finite number and, with a bound, out-of-range
    number in `value`.

    Iterative, so a deeply nested body cannot exhaust the interpreter's stack here.
    """
    found: list[FieldProblem] = []
    stack: list[tuple[tuple[int | str, ...], Any]] = [(prefix, value)]
    while stack and len(found) < 20:
        location, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and bad_text(key):
                    found.append(
                        FieldProblem(
                            field=_name(location, _printable(key)),
                            problem="key is not valid Unicode text (lone surrogate)",
                        )
                    )
                    continue
                stack.append(((*location, key), child))
        elif isinstance(item, list):
            stack.extend(((*location, index), child) for index, child in enumerate(item))
        elif isinstance(item, str):
            if bad_text(item):
                found.append(
                    FieldProblem(
                        field=_name(location),
                        problem="text is not valid Unicode (lone surrogate)",
                    )
                )
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int | float):
            problem = _number_problem(item, max_magnitude)
            if problem is not None:
                found.append(FieldProblem(field=_name(location), problem=problem))
    found.sort(key=lambda p: p.field)
    return found


def _number_problem(number: float, bound: float | None) -> str | None:
    """Non-finite numbers are always refused (JSON has none); magnitude only with a bound."""
    if isinstance(number, float) and not math.isfinite(number):
        return f"must be a finite number (got {number})"
    if bound is None:
        return None
    if isinstance(number, int):
        if abs(number) <= bound:
            return None
        shown = f"an integer of {len(str(abs(number)))} digits"
    else:
        if abs(number) <= bound:
            return None
        shown = repr(number)
    return f"must be between {-bound:g} and {bound:g} (got {shown})"


def _name(location: tuple[int | str, ...], key: str | None = None) -> str:
    path = field_path((*location, key) if key is not None else location)
    return path or "(body)"


def _printable(text: str) -> str:
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def check_input(
    value: Any, *, what: str, max_magnitude: float | None = MAX_MAGNITUDE, status: int = 422
) -> None:
    """Raise a KitError naming every bad field of `value`; `what` says whose input it is."""
    found = find_problems(value, max_magnitude=max_magnitude)
    if not found:
        return
    raise KitError(
        status,
        "invalid_value",
        f"invalid {what}: " + "; ".join(f"{p.field}: {p.problem}" for p in found),
        field=found[0].field,
        fields=found,
    )


def bound_schema(schema: Any, bound: float) -> Any:
    """`schema` with `minimum`/`maximum` on every number and integer it declares."""
    if isinstance(schema, list):
        return [bound_schema(item, bound) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: bound_schema(value, bound) for key, value in schema.items()}
    kinds = out.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "number" in kinds or "integer" in kinds:
        limit: float | int = int(bound) if "integer" in kinds and bound.is_integer() else bound
        out["maximum"] = min(out.get("maximum", limit), limit)
        out["minimum"] = max(out.get("minimum", -limit), -limit)
    return out


MAX_RESULT_DEPTH = 256  # pydantic's own serialisation bound is about as deep


class UnsendableResult(ValueError):
    """A tool's result that JSON cannot carry, whatever is escaped."""


def sendable(value: Any) -> Any:
    """`value` as the reply will carry it: lone surrogates escaped (`\\ud800`), everything else
    unchanged. The common case costs one C-level encoding; only odd results are rebuilt."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return value
    except (UnicodeEncodeError, ValueError, RecursionError):
        pass
    try:
        return _rebuilt(value, ())
    except RecursionError:
        raise UnsendableResult("the result is nested too deep") from None


def _rebuilt(value: Any, location: tuple[int | str, ...]) -> Any:
    """One stack frame per level (no comprehensions), bounded by MAX_RESULT_DEPTH."""
    if len(location) > MAX_RESULT_DEPTH:
        raise UnsendableResult(
            f"the result is nested deeper than {MAX_RESULT_DEPTH} levels at {_name(location[:3])}…"
        )
    if isinstance(value, str):
        return _printable(value) if bad_text(value) else value
    if isinstance(value, float) and not math.isfinite(value):
        raise UnsendableResult(f"{_name(location)} is {value}, which JSON cannot carry")
    if isinstance(value, dict):
        rebuilt: dict[Any, Any] = {}
        for key, item in value.items():
            rebuilt[_printable(key) if isinstance(key, str) else key] = _rebuilt(
                item, (*location, key)
            )
        return rebuilt
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for index, item in enumerate(value):
            items.append(_rebuilt(item, (*location, index)))
        return items
    return value
