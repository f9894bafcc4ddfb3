"""Replies that come back incomplete: PartialResponse and EmptyResponse.

Effects take the body and the fault's draw and return a new body plus what they did, or
None when the body offers nothing to act on; bodies are never mutated in place.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import Field

from chaosproxy.faults import jsonpaths as jp
from chaosproxy.faults.draws import derive, pick
from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import Effect, FaultUnit, Reply, serialize

PartialMode = Literal["truncate", "drop_items", "drop_fields"]


def _all_partial_modes() -> list[PartialMode]:
    return ["truncate", "drop_items", "drop_fields"]


class PartialResponseParams(Params):
    modes: list[PartialMode] = Field(default_factory=_all_partial_modes, min_length=1)
    keep_fraction: float = Field(
        0.5, gt=0, lt=1, description="share of list items kept / of the body before the cut"
    )


class EmptyResponseParams(Params):
    pass


class PartialResponse(FaultUnit):
    name = "PartialResponse"
    params = PartialResponseParams
    stage = "after"
    recoverable = True
    summary = "truncate the body mid-JSON, or drop list items / fields"
    after_rank = 60

    def simpler(self, params: Params) -> list[Params]:
        """One way of cutting the body instead of several."""
        if not isinstance(params, PartialResponseParams) or len(params.modes) < 2:
            return []
        return [params.model_copy(update={"modes": [mode]}) for mode in params.modes]

    def transform(self, reply: Reply) -> Effect | None:
        params = PartialResponseParams.model_validate(reply.planned.params)
        return partial(reply.body, reply.planned.salt, params)


class EmptyResponse(FaultUnit):
    name = "EmptyResponse"
    params = EmptyResponseParams
    stage = "after"
    recoverable = True
    summary = "200 with an empty result"
    after_rank = 50

    def transform(self, reply: Reply) -> Effect | None:
        return empty(reply.body)


def partial(body: Any, salt: float, params: PartialResponseParams) -> Effect | None:
    first = pick(salt, params.modes)
    order = [first, *(mode for mode in params.modes if mode != first)]
    for mode in order:
        result = _PARTIAL[mode](body, salt, params.keep_fraction)
        if result is not None:
            result.info["mode"] = mode
            return result
    return None


def truncate(body: Any, salt: float, keep_fraction: float) -> Effect | None:
    """Cut the serialized body strictly inside: the text is never valid JSON."""
    raw = serialize(body).encode("utf-8")
    if len(raw) < 2:
        return None
    fraction = keep_fraction * (0.6 + 0.8 * derive(salt, "cut"))
    cut = max(1, min(len(raw) - 1, int(len(raw) * fraction)))
    text = raw[:cut].decode("utf-8", errors="ignore")
    size = len(text.encode("utf-8"))
    info = {"truncate_at": size, "full_bytes": len(raw)}
    return Effect(body=body, info=info, truncated_text=text, truncate_at=size)


def drop_items(body: Any, salt: float, keep_fraction: float) -> Effect | None:
    """Drop a share of the items of the longest list (the ones the agent came for)."""
    candidates = [(path, items) for path, items in jp.lists(body) if items]
    if not candidates:
        return None
    path, items = max(candidates, key=lambda entry: len(entry[1]))
    keep = int(len(items) * keep_fraction)
    ranked = sorted(range(len(items)), key=lambda index: derive(salt, f"item{index}"))
    dropped = sorted(ranked[: len(items) - keep])
    new_body = copy.deepcopy(body)
    target = jp.get(new_body, path)
    target[:] = [item for index, item in enumerate(target) if index not in set(dropped)]
    info = {"path": jp.path_text(path), "dropped": dropped, "kept": keep, "of": len(items)}
    return Effect(body=new_body, info=info)


def drop_fields(body: Any, salt: float, keep_fraction: float) -> Effect | None:
    """Drop the same non-id fields from every record (or from the body object)."""
    found = jp.record_lists(body)
    path: jp.Path = found[0][0] if found else ()
    if found:
        records = found[0][1]
    elif isinstance(body, dict):
        records = [body]
    else:
        return None
    fields = [key for key in records[0] if not jp.is_id_key(key)]
    if not fields:
        return None
    scores = {key: derive(salt, f"field:{key}") for key in fields}
    dropped = [key for key in fields if scores[key] >= keep_fraction]
    if not dropped:
        dropped = [max(fields, key=lambda key: scores[key])]
    new_body = copy.deepcopy(body)
    targets = jp.get(new_body, path) if found else [new_body]
    for record in targets:
        for key in dropped:
            record.pop(key, None)
    return Effect(body=new_body, info={"path": jp.path_text(path), "dropped_fields": dropped})


_PARTIAL = {"truncate": truncate, "drop_items": drop_items, "drop_fields": drop_fields}


_COUNT_KEYS = {"count", "total", "total_count", "totalcount", "num_results", "results", "n"}


def empty(body: Any) -> Effect:
    """Empty every list and zero its counters; an object without lists becomes `{}`."""
    new_body, changed = _empty(copy.deepcopy(body))
    if not changed:
        return Effect(body={}, info={"mode": "empty_object"})
    return Effect(body=new_body, info={"mode": "empty_lists"})


def _empty(value: Any) -> tuple[Any, bool]:
    if isinstance(value, list):
        return [], True
    if not isinstance(value, dict):
        return value, False
    changed = False
    for key, item in value.items():
        value[key], item_changed = _empty(item)
        changed = changed or item_changed
    if changed:
        for key, item in value.items():
            if key.lower() in _COUNT_KEYS and isinstance(item, int) and not isinstance(item, bool):
                value[key] = 0
    return value, changed
