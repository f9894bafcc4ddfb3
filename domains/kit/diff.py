"""Structured diff between two JSON states: which paths changed, from what to what."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel


class Change(BaseModel):
    path: str
    op: Literal["changed", "added", "removed"]
    before: Any = None
    after: Any = None


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def diff(before: Any, after: Any, path: str = "") -> list[Change]:
    """Changes from `before` to `after`, one per differing leaf, in document order.

    Lists are compared by position: a list that grew shows `added` items at the new
    indices, one that shrank shows `removed` items. 1 and 1.0 (or True) count as different,
    as they serialize differently.
    """
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[Change] = []
        for key in before:
            if key in after:
                changes += diff(before[key], after[key], _join(path, key))
            else:
                changes.append(Change(path=_join(path, key), op="removed", before=before[key]))
        for key in after:
            if key not in before:
                changes.append(Change(path=_join(path, key), op="added", after=after[key]))
        return changes
    if isinstance(before, list) and isinstance(after, list):
        changes = []
        for index in range(max(len(before), len(after))):
            item_path = f"{path}[{index}]"
            if index >= len(before):
                changes.append(Change(path=item_path, op="added", after=after[index]))
            elif index >= len(after):
                changes.append(Change(path=item_path, op="removed", before=before[index]))
            else:
                changes += diff(before[index], after[index], item_path)
        return changes
    if before == after and type(before) is type(after):
        return []
    return [Change(path=path or "(root)", op="changed", before=before, after=after)]
