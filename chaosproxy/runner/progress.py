"""A one-line progress display: episodes done, successes so far, infrastructure outcomes, ETA."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from chaosproxy.records import EpisodeRecord


class Progress:
    def __init__(self, total: int, already_done: int = 0, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = already_done
        self.successes = 0
        self.failures = 0
        self.infrastructure = 0
        self._resumed = already_done
        self._started = time.monotonic()
        self._stream = stream or sys.stderr
        self._interactive = self._stream.isatty()
        self._last_line = 0.0

    def add(self, record: EpisodeRecord) -> None:
        self.done += 1
        if record.outcome != "completed":
            self.infrastructure += 1
        elif record.success:
            self.successes += 1
        else:
            self.failures += 1
        self.show()

    def line(self) -> str:
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        return (
            f"[{bar}] {self.done}/{self.total} episodes | ok {self.successes} "
            f"fail {self.failures} infra {self.infrastructure} | ETA {self.eta()}"
        )

    def eta(self) -> str:
        finished_here = self.done - self._resumed
        if finished_here < max(3, (self.total - self._resumed) // 50):
            return "--:--"
        per_episode = (time.monotonic() - self._started) / finished_here
        seconds = int(per_episode * (self.total - self.done))
        return f"{seconds // 60}:{seconds % 60:02d}"

    def show(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._interactive:
            self._stream.write("\r" + self.line())
            self._stream.flush()
        elif force or now - self._last_line >= 5 or self.done == self.total:
            self._stream.write(self.line() + "\n")
            self._stream.flush()
            self._last_line = now

    def close(self) -> None:
        if self._interactive:
            self._stream.write("\n")
            self._stream.flush()
