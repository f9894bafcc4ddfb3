"""The proxy's log: one CallRecord per proxied request, flushed before the reply goes out.

Lines are written to the open file's buffer as calls finish, and flushed to the OS before
any reply byte: by the agent port before it writes a reply (`AgentPort.before_reply`), by
the paths that answer without a response (resets, stream events), and by a `call_soon`
fallback. So a killed proxy loses no call a client saw. A flush with nothing new is free.

Group commit: while other requests are in flight, the agent port holds a whole reply to
the end of the loop turn (`AgentPort.hold`), then flushes once and writes the held
replies, so the lines of all the replies that finish in one turn share one `write` (at
c=32 about one log write per 13 replies instead of one per reply). A reply with nothing
else in flight goes out at once, after its own flush: holding it would cost a loop turn.

Lines are ASCII JSON (`ensure_ascii`): any text an agent sends, lone surrogates included,
can always be written. orjson encodes a line in well under a microsecond where `json`
takes several; a line orjson would write differently (non-ASCII text, which it leaves
unescaped; NaN or infinities, which it writes as null; anything it refuses, such as lone
surrogates or integers over 64 bits) is encoded by `json` as before. Either way a line
reads back to the same values; only a float in exponent form may be spelt differently
(`1e-05` by `json`, `1e-5` by orjson).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import IO, Any

import orjson

from chaosproxy.records import CALLS_FILE

_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)
_FAST = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""Datetimes, dataclasses, subclasses of str/int/dict/list: to `default=str`, as `json` does."""


def encode(fields: dict[str, Any]) -> bytes:
    """One log line, newline included: the bytes `json` (ASCII, compact) would write."""
    try:
        line = orjson.dumps(fields, default=str, option=_FAST)
    except orjson.JSONEncodeError:
        line = b""
    if line.isascii() and line and _finite(fields):
        return line
    return (_ENCODER.encode(fields) + "\n").encode("ascii")


_NESTED = frozenset({dict, list, tuple})
"""The containers `_finite` walks into (one set lookup per value, not three tests)."""


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere (orjson writes them as null, `json` as NaN/Infinity).

    Scalars fall through two identity tests; a nested value equal in identity to the one
    before it (the forwarded arguments when the engine left them as sent) is walked once."""
    items = value.values() if type(value) is dict else value
    last: Any = None
    for item in items:
        kind = type(item)
        if kind is float:
            if item - item != 0.0:  # NaN - NaN and inf - inf are NaN
                return False
        elif kind in _NESTED:
            if item is last:
                continue
            last = item
            if not _finite(item):
                return False
    return True


class CallLog:
    """Appends CallRecords to RUN_DIR/calls.jsonl (or keeps only a count without a run dir)."""

    def __init__(self, run_dir: Path | None) -> None:
        self.path: Path | None = None
        self._handle: IO[bytes] | None = None
        self.count = 0
        self._dirty = False
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        if run_dir is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            self.path = run_dir / CALLS_FILE
            self._handle = self.path.open("ab", buffering=1 << 16)

    def write(self, fields: dict[str, Any]) -> None:
        """Buffer one record (the `CallRecord` fields); flushed before the next reply."""
        self.count += 1
        if self._handle is None:
            return
        self._handle.write(encode(fields))
        self._dirty = True
        if not self._scheduled:
            self._scheduled = True
            loop = self._loop
            if loop is None or loop.is_closed():  # one lookup per loop: each is a getpid
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self.flush)

    def flush(self) -> None:
        """Hand every buffered line to the OS (cheap when there is none)."""
        self._scheduled = False
        if self._dirty and self._handle is not None:
            self._dirty = False
            self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self.flush()
            self._handle.close()
            self._handle = None
