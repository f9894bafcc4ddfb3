"""Arguments as the call log keeps them: whole up to 64 KiB, bounded beyond.

A client that sends 10 MB arguments must not make the log hold them (twice: as sent and as
forwarded). Over the bound, the largest top-level values are replaced, one by one, by a
stub that names their sha256 and size and keeps their first bytes, until the arguments
fit; small values (the critical arguments the scorer compares) stay exact. Arguments the
service got unchanged are stored once: the forwarded ones point at the same bounded object.
Pure: no I/O, cheap when the request body was small (nothing to do).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_LOGGED_ARGUMENTS = 64 * 1024
"""Bytes of JSON the log keeps of a call's arguments."""
HEAD_CHARS = 256
"""What a stub keeps of the value it stands for, for a reader of the log."""
TRUNCATED = "_chaosproxy_truncated"
"""The key of a stub: `{TRUNCATED: {"sha256": ..., "bytes": ..., "head": ...}}`."""


def _encoded(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode(
        "utf-8", "surrogatepass"
    )


def stub(encoded: bytes) -> dict[str, Any]:
    """What stands for a value whose JSON is `encoded`."""
    return {
        TRUNCATED: {
            "sha256": hashlib.sha256(encoded).hexdigest(),
            "bytes": len(encoded),
            "head": encoded[: HEAD_CHARS * 4].decode("utf-8", "ignore")[:HEAD_CHARS],
        }
    }


def bound_arguments(
    arguments: dict[str, Any] | None, limit: int = MAX_LOGGED_ARGUMENTS
) -> dict[str, Any] | None:
    """`arguments` itself when its JSON fits in `limit` bytes, else a bounded copy."""
    if arguments is None:
        return None
    whole = _encoded(arguments)
    if len(whole) <= limit:
        return arguments
    sizes = {key: _encoded(value) for key, value in arguments.items()}
    bounded = dict(arguments)
    total = len(whole)
    for key in sorted(sizes, key=lambda k: len(sizes[k]), reverse=True):
        if total <= limit:
            break
        replacement = stub(sizes[key])
        total -= len(sizes[key]) - len(_encoded(replacement))
        bounded[key] = replacement
    return bounded if total <= limit else stub(whole)


def logged_arguments(
    arguments: dict[str, Any] | None,
    forwarded: dict[str, Any] | None,
    bytes_in: int,
    limit: int = MAX_LOGGED_ARGUMENTS,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The (arguments, forwarded_arguments) a log record keeps.

    `bytes_in` is the request body's size: arguments come from the body, so a body within
    the limit needs no work (the hot path). Forwarded arguments equal to the sent ones
    are stored once (the same bounded object)."""
    if bytes_in <= limit:
        return arguments, forwarded
    bounded = bound_arguments(arguments, limit)
    if forwarded is None or forwarded is arguments or forwarded == arguments:
        return bounded, bounded if forwarded is not None else None
    return bounded, bound_arguments(forwarded, limit)
