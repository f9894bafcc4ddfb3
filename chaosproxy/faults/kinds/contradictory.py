"""ContradictoryData: two records about the same thing disagree, for the rest of the episode."""

from __future__ import annotations

import copy
from typing import Any

from chaosproxy.faults import jsonpaths as jp
from chaosproxy.faults.dates import shift_date
from chaosproxy.faults.draws import between, derive, pick
from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import Applied, BeforeCall, Effect, FaultUnit, Reply


class ContradictoryDataParams(Params):
    pass


class ContradictoryData(FaultUnit):
    name = "ContradictoryData"
    params = ContradictoryDataParams
    stage = "episode"
    recoverable = False
    summary = "add a record that contradicts another; persistent"
    persistent_data = True
    incident = True
    after_rank = 20

    def before(self, call: BeforeCall) -> Applied | None:
        hint = call.hints.get("contradictions", {}).get(call.ctx.tool)
        return call.plan(self.name, {**call.params.model_dump(), "hint": hint})

    def transform(self, reply: Reply) -> Effect | None:
        return contradict(reply.body, reply.planned.salt, reply.planned.params.get("hint"))


_OPPOSITES = {
    "confirmed": "cancelled",
    "cancelled": "confirmed",
    "active": "inactive",
    "inactive": "active",
    "open": "closed",
    "closed": "open",
    "available": "unavailable",
    "unavailable": "available",
    "yes": "no",
    "no": "yes",
    "in_stock": "out_of_stock",
    "out_of_stock": "in_stock",
    "pending": "completed",
    "completed": "pending",
    "scheduled": "cancelled",
    "on_time": "delayed",
    "delayed": "on_time",
}


def altered(value: Any, salt: float, others: list[Any]) -> Any:
    """A value that plainly disagrees with `value` but keeps its type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + between(salt, 1, 5) * (1 if value >= 0 else -1) + (value // 2)
    if isinstance(value, float):
        return round(value * (1.5 + derive(salt, "f")), 2)
    if isinstance(value, list):
        return [] if value else ["unknown"]
    if isinstance(value, str):
        distinct = [other for other in others if isinstance(other, str) and other != value]
        if distinct:
            return pick(salt, sorted(set(distinct)))
        shifted = shift_date(value, pick(salt, [1, -1, 2]))
        if shifted is not None:
            return shifted
        if value.lower() in _OPPOSITES:
            return _OPPOSITES[value.lower()]
        return f"not {value}" if value else "unknown"
    return "unknown"


def contradict(body: Any, salt: float, hint: dict[str, Any] | None = None) -> Effect | None:
    """Clone a record and change one field, so two records about the same thing disagree.

    With no record list, an object gets a `conflicting_records` entry from another source.
    A hint `{"field": name, "value": v}` fixes which field and what the other record says.
    """
    hint = hint or {}
    found = jp.record_lists(body)
    if found:
        path, items = found[0]
        index = min(int(derive(salt, "item") * len(items)), len(items) - 1)
        original = items[index]
        name = _contradiction_field(original, salt, hint)
        if name is None:
            return None
        others = [item.get(name) for item in items]
        value = hint.get("value", altered(original.get(name), salt, others))
        clone = copy.deepcopy(original)
        clone[name] = value
        new_body = copy.deepcopy(body)
        jp.get(new_body, path).insert(index + 1, clone)
        info = {
            "path": jp.path_text((*path, index)),
            "field": name,
            "original": original.get(name),
            "contradicting": value,
        }
        return Effect(body=new_body, info=info)
    if not isinstance(body, dict):
        return None
    name = _contradiction_field(body, salt, hint)
    if name is None:
        return None
    value = hint.get("value", altered(body.get(name), salt, []))
    new_body = copy.deepcopy(body)
    conflicts = new_body.setdefault("conflicting_records", [])
    if not isinstance(conflicts, list):
        return None
    conflicts.append({"source": "secondary-records", "field": name, "value": value})
    info = {"path": name, "field": name, "original": body.get(name), "contradicting": value}
    return Effect(body=new_body, info=info)


def _contradiction_field(record: dict[str, Any], salt: float, hint: dict[str, Any]) -> str | None:
    if isinstance(hint.get("field"), str):
        return str(hint["field"])
    fields = [
        key
        for key, value in record.items()
        if not jp.is_id_key(key)
        and (jp.is_scalar(value) or _is_string_list(value))
        and value is not None
    ]
    if not fields:
        return None
    return pick(derive(salt, "field"), fields)


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
