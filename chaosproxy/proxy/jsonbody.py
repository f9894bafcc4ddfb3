"""Parsing a client's JSON body without letting hostile JSON turn into a 500.

Python's `json` accepts what the proxy cannot carry on: integers over 4,300 digits raise a
plain `ValueError`, deep nesting a `RecursionError`, and `"\\ud800"` escapes parse into text
that no log line or upstream request can encode. Those are `BadJson` (the client gets a
JSON 400 / JSON-RPC -32700 naming the problem); a body that is simply not JSON is `None`,
so the caller passes it through untouched as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class BadJson(ValueError):
    """JSON the proxy refuses to carry; the message names the problem (and the field).

    `value`: what was parsed, when it could be (lone surrogates), so the log shows it.
    """

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


def loads(body: bytes) -> Any:
    """The parsed body; `None` when it is not JSON at all; `BadJson` when it is hostile."""
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    except RecursionError:
        raise BadJson("JSON nested too deeply for the proxy to parse") from None
    except ValueError as exc:
        raise BadJson(f"JSON number not accepted: {exc}") from None
    if _SURROGATE_ESCAPE.search(body):
        where = _lone_surrogate(value)
        if where is not None:
            raise BadJson(
                f"JSON text at {where} has a lone UTF-16 surrogate (not valid Unicode)", value
            )
    return value


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
