"""ParameterCorruption (AgentProp-Bench P2): a wrong but schema-valid argument.

Domains declare critical arguments with a spec (`choice`, `date_shift`, `number`,
`id_bump`); with none, a generic mutation of a date-, id-, code- or number-looking
argument is used (a string of digits is a number unless its name says id).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from chaosproxy.faults.dates import shift_date
from chaosproxy.faults.draws import derive, pick
from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import Applied, BeforeCall, FaultUnit

_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)(\D*)$")
_CODE = re.compile(r"^[A-Z]{3}$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_ID_NAME = re.compile(r"id\d*$", re.IGNORECASE)
"""`id`, `order_id`, `customerId`, and the proxy's `id2` for a second numeric path segment."""
_AIRPORTS = ["JFK", "LAX", "SFO", "ORD", "SEA", "BOS", "DEN", "ATL", "MIA", "LHR", "CDG", "FRA"]
_DEFAULT_DAYS = [1, -1, 7]
_DEFAULT_FACTORS = [0.5, 2.0]


class ParameterCorruptionParams(Params):
    arguments: list[str] | None = Field(
        None, description="only these arguments; default: the domain's critical ones"
    )


class ParameterCorruption(FaultUnit):
    name = "ParameterCorruption"
    params = ParameterCorruptionParams
    stage = "before"
    recoverable = False
    summary = "rewrite a critical argument to a wrong but valid value"
    needs_arguments = True

    def acts_on(
        self,
        params: Params,
        salt: float,
        tool: str,
        arguments: dict[str, Any],
        hints: dict[str, Any],
    ) -> bool:
        assert isinstance(params, ParameterCorruptionParams)
        critical = hints.get("critical_args", {}).get(tool, {})
        return corrupt(arguments, salt, critical, params.arguments) is not None

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(ParameterCorruptionParams)
        critical = call.hints.get("critical_args", {}).get(call.ctx.tool, {})
        change = corrupt(call.arguments, call.salt, critical, params.arguments)
        info = call.info
        if change is None:
            info.params["applied"] = False
            return Applied(info=info)
        info.params.update(
            applied=True,
            argument=change.argument,
            original=change.original,
            corrupted=change.corrupted,
            spec=change.spec,
        )
        return Applied(info=info, arguments={**call.arguments, change.argument: change.corrupted})


@dataclass
class Corruption:
    argument: str
    original: Any
    corrupted: Any
    spec: dict[str, Any]


def corrupt(
    arguments: dict[str, Any],
    salt: float,
    critical: dict[str, dict[str, Any]],
    only: list[str] | None = None,
) -> Corruption | None:
    """Rewrite one argument; None when no argument can be made plausibly wrong.

    A choice never takes the value of another argument (a destination equal to the origin
    is not a plausible mistake, and the service would reject it).
    """
    candidates: list[tuple[str, dict[str, Any]]] = []
    for name, spec in critical.items():
        if name in arguments and (only is None or name in only):
            candidates.append((name, spec))
    if not candidates:
        for name in sorted(arguments):
            if only is not None and name not in only:
                continue
            inferred = generic_spec(arguments[name], name)
            if inferred is not None:
                candidates.append((name, inferred))
    order = sorted(candidates, key=lambda entry: derive(salt, f"arg:{entry[0]}"))
    for name, spec in order:
        others = [v for k, v in arguments.items() if k != name and isinstance(v, str | int | float)]
        usable = spec
        if spec.get("kind") == "choice":
            usable = {**spec, "values": [v for v in spec.get("values") or [] if v not in others]}
        value = mutate(arguments[name], usable, derive(salt, f"value:{name}"))
        if value is not None and value != arguments[name]:
            return Corruption(name, arguments[name], value, spec)
    return None


def generic_spec(value: Any, name: str = "") -> dict[str, Any] | None:
    """A spec inferred from what the value looks like (and, for a string of digits, from
    its name: `page=2` in a query string is a number, `id=102` an id)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return {"kind": "number", "factors": _DEFAULT_FACTORS}
    if not isinstance(value, str):
        return None
    if shift_date(value, 1) is not None:
        return {"kind": "date_shift", "days": _DEFAULT_DAYS}
    if _NUMBER.match(value) and not _ID_NAME.search(name):
        return {"kind": "number", "factors": _DEFAULT_FACTORS}
    if _TRAILING_DIGITS.match(value):
        return {"kind": "id_bump"}
    if _CODE.match(value):
        return {"kind": "choice", "values": _AIRPORTS}
    return None


def mutate(value: Any, spec: dict[str, Any], u: float) -> Any:
    kind = spec.get("kind")
    if kind == "choice":
        others = [option for option in spec.get("values") or [] if option != value]
        return pick(u, others) if others else None
    if kind == "date_shift":
        return (
            shift_date(value, pick(u, spec.get("days") or _DEFAULT_DAYS))
            if isinstance(value, str)
            else None
        )
    if kind == "number":
        return _scaled(value, pick(u, spec.get("factors") or _DEFAULT_FACTORS))
    if kind == "id_bump":
        return _bumped(value, 1 + int(u * 3))
    return None


def _scaled(value: Any, factor: float) -> Any:
    if isinstance(value, str) and _NUMBER.match(value):
        number = float(value) if "." in value else int(value)
        return str(_scaled(number, factor))  # a query value stays a string
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        scaled = round(value * factor)
        return scaled if scaled != value else value + 1
    return round(value * factor, 2)


def _bumped(value: Any, by: int) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value + by
    if not isinstance(value, str):
        return None
    match = _TRAILING_DIGITS.match(value)
    if not match:
        return None
    prefix, digits, suffix = match.groups()
    return f"{prefix}{int(digits) + by:0{len(digits)}d}{suffix}"
