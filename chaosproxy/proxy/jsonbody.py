"""Parsing a client's JSON body without letting hostile JSON turn into a 500.

Python's `json` accepts what the proxy cannot carry on: integers over 4,300 digits raise a
plain `ValueError`, deep nesting a `RecursionError` (at a depth that depends on the stack,
so the proxy caps nesting itself at `MAX_DEPTH`), and `"\\ud800"` escapes parse into text
that no log line or upstream request can encode. Those are `BadJson` (the client gets a
JSON 400 / JSON-RPC -32700 naming the problem); a body that is simply not JSON is `None`,
so the caller passes it through untouched as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from chaosproxy.errors import ChaosError

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
"""A surrogate escaped (`\\ud800`) or as raw bytes (`ED A0 80`: not UTF-8, but
`json.loads` decodes bytes with `surrogatepass`)."""
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")

_DIGITS = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))
"""A `bytes.translate` table: every ASCII digit to `1`, every other byte to `0`."""
_LONG_RUN = b"1" * 19


def _long_number(body: bytes) -> bool:
    """Whether the body has 19 digits in a row: a number orjson might read differently (it
    turns integers over 64 bits into floats), so `json` reads that body. What the regex
    `[0-9]{19}` finds, at a tenth of its cost on a body of kilobytes (a C translate and a
    substring search instead of a match tried at every byte)."""
    return _LONG_RUN in body.translate(_DIGITS)


MAX_DEPTH = 128
"""Deepest nesting of arrays and objects accepted in a client's JSON body: tool arguments
need a handful of levels; deeper is an attack on some parser down the line."""


class BadJson(ChaosError, ValueError):
    """JSON the proxy refuses to carry; the message names the problem (and the field).

    `value`: what was parsed, when it could be (lone surrogates), so the log shows it.
    """

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


def parse(body: bytes) -> Any:
    """`json.loads(body)`, the same value, several times faster where orjson can read it.

    orjson reads the same JSON to the same values, except what it refuses (NaN, numbers
    beyond a float, lone surrogates, encodings other than UTF-8, a BOM: all read by `json`
    here, which raises what it always raised) and integers over 64 bits, which it would
    make floats (a body with 19 digits in a row goes to `json`)."""
    if not _long_number(body):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


def loads(body: bytes) -> Any:
    """The parsed body; `None` when it is not JSON at all; `BadJson` when it is hostile."""
    try:
        value = parse(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    except RecursionError:
        _check_depth(body)
        raise BadJson(f"JSON nested too deeply (the proxy accepts {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise BadJson(f"JSON number not accepted: {exc}") from None
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH:
        _check_depth(body)
    if (b"\\u" in body or b"\xed" in body) and _SURROGATE.search(body):
        where = _lone_surrogate(value)
        if where is not None:
            raise BadJson(
                f"JSON text at {where} has a lone UTF-16 surrogate (not valid Unicode)", value
            )
    return value


def _check_depth(body: bytes) -> None:
    """`BadJson` naming the depth and byte offset where nesting passes `MAX_DEPTH`.

    Brackets inside strings do not count. Run on JSON only (non-JSON bodies pass through
    untouched) and when the body has more brackets than `MAX_DEPTH` at all, so ordinary
    bodies pay two `bytes.count` calls.
    """
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(_blank, body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise BadJson(
                    f"JSON nested more than {MAX_DEPTH} levels deep (at byte {match.start()}); "
                    f"the proxy accepts at most {MAX_DEPTH}"
                )
        else:
            depth -= 1


def _blank(match: re.Match[bytes]) -> bytes:
    """A string replaced by as many spaces, so byte offsets stay those of the body."""
    return b" " * len(match.group())


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogate(value: Any) -> str | None:
    """The JSON path ('$.a[0].b') of the first key or string that is not valid Unicode."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                name = key if _encodable(key) else key.encode("utf-8", "backslashreplace").decode()
                if not _encodable(key):
                    return f"{path} (key {name!r})"
                stack.append((f"{path}.{name}", child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
    return None
