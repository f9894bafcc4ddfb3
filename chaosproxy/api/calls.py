"""An episode's calls, read back from the proxy's log as it grows.

The proxy flushes each record to RUN_DIR/calls.jsonl before the agent sees the reply, so
whatever an agent has been answered is already in the file. The index reads only what
was appended since its last look and keeps records of the episodes it was asked to
watch: other episodes (another xdist worker's, in a shared run directory) pass by. Each
line is parsed once, straight into a CallRecord (pydantic-core: ~8 µs for a 0.9 kB line,
faster than json.loads), so a runner watching every episode pays little per call.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from chaosproxy.records import CALLS_FILE, CallRecord


class CallIndex:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CALLS_FILE
        self._offset = 0
        self._tail = b""
        self._watched: dict[str, list[CallRecord]] = {}
        self._lock = threading.Lock()

    def watch(self, episode: str) -> None:
        with self._lock:
            self._catch_up()
            self._watched.setdefault(episode, [])

    def drop(self, episode: str) -> list[CallRecord]:
        """Stop watching; returns the episode's records so far."""
        with self._lock:
            self._catch_up()
            return self._watched.pop(episode, [])

    def records(self, episode: str) -> list[CallRecord]:
        with self._lock:
            self._catch_up()
            return list(self._watched.get(episode, []))

    def _catch_up(self) -> None:
        if not self.path.is_file():
            return
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        self._offset += len(chunk)
        data = self._tail + chunk
        lines = data.split(b"\n")
        self._tail = lines.pop()  # an incomplete last line waits for its end
        for line in lines:
            if not line.strip():
                continue
            try:
                record = CallRecord.model_validate_json(line)
            except ValueError:
                if _episode_of(line) in self._watched:
                    raise
                continue
            if record.episode in self._watched:
                self._watched[record.episode].append(record)


def _episode_of(line: bytes) -> str | None:
    try:
        value = json.loads(line).get("episode")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None
