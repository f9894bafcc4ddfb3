"""Read what survives of a JSON document cut short: the fields a truncated body still shows.

A PartialResponse on MCP cuts the text content; the structuredContent beside it is this
salvage of the same cut text, so the two stay consistent (nothing in one that is not in
the other).
"""

from __future__ import annotations

import json
from typing import Any

from chaosproxy.errors import ChaosError

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class _Cut(ChaosError):
    """The text ended inside this value."""

    def __init__(self, partial: Any = None) -> None:
        super().__init__("cut")
        self.partial = partial


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _value(text: str, pos: int) -> tuple[Any, int]:
    pos = _skip(text, pos)
    if pos >= len(text):
        raise _Cut()
    if text[pos] == "{":
        return _object(text, pos + 1)
    if text[pos] == "[":
        return _array(text, pos + 1)
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _Cut() from exc
    # a number or literal at the very end may itself be cut ("12" of "125")
    if _skip(text, end) >= len(text) and not isinstance(value, str):
        raise _Cut()
    return value, end


def _object(text: str, pos: int) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    while True:
        pos = _skip(text, pos)
        if pos >= len(text):
            raise _Cut(result)
        if text[pos] == "}":
            return result, pos + 1
        if text[pos] == ",":
            pos += 1
            continue
        try:
            key, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _Cut(result) from exc
        pos = _skip(text, pos)
        if pos >= len(text) or text[pos] != ":":
            raise _Cut(result)
        try:
            value, pos = _value(text, pos + 1)
        except _Cut as cut:
            if cut.partial is not None:
                result[str(key)] = cut.partial
            raise _Cut(result) from None
        result[str(key)] = value


def _array(text: str, pos: int) -> tuple[list[Any], int]:
    result: list[Any] = []
    while True:
        pos = _skip(text, pos)
        if pos >= len(text):
            raise _Cut(result)
        if text[pos] == "]":
            return result, pos + 1
        if text[pos] == ",":
            pos += 1
            continue
        try:
            value, pos = _value(text, pos)
        except _Cut as cut:
            if cut.partial is not None:
                result.append(cut.partial)
            raise _Cut(result) from None
        result.append(value)


def salvage(text: str) -> Any:
    """The complete values of a (possibly cut) JSON text; None when nothing survives."""
    try:
        value, _ = _value(text, 0)
    except _Cut as cut:
        return cut.partial
    return value
