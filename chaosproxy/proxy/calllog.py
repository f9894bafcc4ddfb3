"""The proxy's log: one CallRecord per proxied request, flushed before the reply goes out.

Lines are written to the open file's buffer as calls finish, and flushed to the OS before
any reply byte: by the response-prepare hook of the server, by the paths that answer
without a response (resets, stream events), and by a `call_soon` fallback. So a killed
proxy loses no call a client saw. A flush with nothing new is free; lines buffered
together (calls that finish in one loop tick before any of their replies is prepared)
share one write, but a plain reply is usually prepared right after its own line, so in
practice it is about one `write` per reply.

Lines are ASCII JSON (`ensure_ascii`): any text an agent sends, lone surrogates included,
can always be written.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, TextIO

from chaosproxy.records import CALLS_FILE

_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)


class CallLog:
    """Appends CallRecords to RUN_DIR/calls.jsonl (or keeps only a count without a run dir)."""

    def __init__(self, run_dir: Path | None) -> None:
        self.path: Path | None = None
        self._handle: TextIO | None = None
        self.count = 0
        self._dirty = False
        self._scheduled = False
        if run_dir is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            self.path = run_dir / CALLS_FILE
            self._handle = self.path.open("a", encoding="utf-8", buffering=1 << 16)

    def write(self, fields: dict[str, Any]) -> None:
        """Buffer one record (the `CallRecord` fields); flushed before the next reply."""
        self.count += 1
        if self._handle is None:
            return
        self._handle.write(_ENCODER.encode(fields) + "\n")
        self._dirty = True
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

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
