"""Fair shares of the sandbox: how many confined runs a service starts at once, and for whom.

Why: sandbox calls used to run on the event loop's default executor (6 threads on a 2-core
machine) shared by every episode, so a dozen snippets that sleep out their wall-clock limit
held every thread and another episode's `1+1` waited for them (issue 26). A sandbox run is
mostly waiting on a child process, so the bound that matters is how many children run at
once, not how many threads exist. `FairSlots` runs calls on its own pool of `capacity`
threads, and no episode ever holds more than `per_episode` of them: its further calls wait in
its own queue, so one episode cannot take the slots other episodes need. When a slot frees,
the longest-waiting call whose episode is under its quota gets it.

Thread-safe and loop-agnostic: one `FairSlots` serves every event loop of the process (tests
serve the same domain from several threads); a waiting call is woken on its own loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

SLOTS_ENV = "CHAOSPROXY_SANDBOX_SLOTS"
DEFAULT_CAPACITY = 16
"""Sandbox runs at once per service: each is a supervisor, an init and a worker, ≈ 60 MB RSS
together (counting pages they share), and a worker may grow to its 256 MB address-space
limit: 16 keeps the worst case near 4 GB, against 6 runs (the default executor) before."""
DEFAULT_PER_EPISODE = 1
"""One run at a time per episode: the kit already serialises an episode's calls, so this
costs an honest agent nothing, and bounds what any one episode holds."""

T = TypeVar("T")


@dataclass(eq=False)
class _Waiter:
    episode: str
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    granted: bool = field(default=False)


class FairSlots:
    """At most `capacity` runs at once, at most `per_episode` of them one episode's."""

    def __init__(self, capacity: int, per_episode: int = DEFAULT_PER_EPISODE) -> None:
        if capacity < 1 or per_episode < 1:
            raise ValueError(f"capacity ({capacity}) and per_episode ({per_episode}) must be >= 1")
        self.capacity = capacity
        self.per_episode = per_episode
        self.running: Counter[str] = Counter()
        self.waiting: deque[_Waiter] = deque()
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=capacity, thread_name_prefix="sandbox")

    @classmethod
    def from_env(cls) -> FairSlots:
        raw = os.environ.get(SLOTS_ENV, "")
        try:
            capacity = int(raw) if raw else DEFAULT_CAPACITY
        except ValueError:
            raise ValueError(f"{SLOTS_ENV} must be an integer >= 1, got {raw!r}") from None
        return cls(capacity)

    @property
    def active(self) -> int:
        return sum(self.running.values())

    async def run(self, episode: str, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` on a slot of this pool, once `episode` may have one."""
        await self._acquire(episode)
        try:
            running = self._executor.submit(self._job, episode, partial(function, *args))
        except BaseException:
            self._release(episode)
            raise
        return await asyncio.wrap_future(running)

    def _job(self, episode: str, call: Callable[[], T]) -> T:
        """The slot is freed when the run ends, even if its caller stopped waiting."""
        try:
            return call()
        finally:
            self._release(episode)

    async def _acquire(self, episode: str) -> None:
        loop = asyncio.get_running_loop()
        waiter = _Waiter(episode, loop, loop.create_future())
        with self._lock:
            self.waiting.append(waiter)
            self._grant()
        try:
            await waiter.future
        except asyncio.CancelledError:
            with self._lock:
                if waiter.granted:
                    self._free(episode)
                else:
                    self.waiting.remove(waiter)
            raise

    def _release(self, episode: str) -> None:
        with self._lock:
            self._free(episode)

    def _free(self, episode: str) -> None:
        self.running[episode] -= 1
        if self.running[episode] <= 0:
            del self.running[episode]
        self._grant()

    def _grant(self) -> None:
        """Called with the lock held: hand free slots to the longest-waiting eligible calls."""
        for waiter in list(self.waiting):
            if self.active >= self.capacity:
                return
            if self.running[waiter.episode] >= self.per_episode:
                continue
            self.waiting.remove(waiter)
            self.running[waiter.episode] += 1
            waiter.granted = True
            waiter.loop.call_soon_threadsafe(_wake, waiter.future)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
