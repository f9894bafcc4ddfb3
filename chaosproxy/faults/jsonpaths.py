"""Small helpers to find records inside a JSON body and name where they are."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Path = tuple[str | int, ...]


def path_text(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "$"


def lists(body: Any, path: Path = ()) -> Iterator[tuple[Path, list[Any]]]:
    """Every list in the body, outermost first."""
    if isinstance(body, list):
        yield path, body
        for index, item in enumerate(body):
            yield from lists(item, (*path, index))
    elif isinstance(body, dict):
        for key, value in body.items():
            yield from lists(value, (*path, key))


def record_lists(body: Any) -> list[tuple[Path, list[dict[str, Any]]]]:
    """Non-empty lists whose items are all objects, longest first (stable)."""
    found = [
        (path, items)
        for path, items in lists(body)
        if items and all(isinstance(item, dict) for item in items)
    ]
    return sorted(found, key=lambda entry: -len(entry[1]))


def get(body: Any, path: Path) -> Any:
    for part in path:
        body = body[part]
    return body


def is_id_key(key: str) -> bool:
    lowered = key.lower()
    return lowered in {"id", "uuid", "ref"} or lowered.endswith("_id") or key.endswith("Id")


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def first_record(body: Any) -> tuple[Path, dict[str, Any]] | None:
    """The first object of the longest record list, else the body itself if an object."""
    found = record_lists(body)
    if found:
        path, items = found[0]
        return (*path, 0), items[0]
    if isinstance(body, dict):
        return (), body
    return None
