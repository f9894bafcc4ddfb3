"""An event loop on a daemon thread, so synchronous code (a pytest session, a script) can
own an async Environment without giving up its own thread or its own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from chaosproxy import eventloop

T = TypeVar("T")


class LoopThread:
    """Runs coroutines and callables on its own loop; `close()` stops and joins it."""

    def __init__(self, name: str = "chaosproxy-environment") -> None:
        factory = eventloop.loop_factory()
        self.loop = factory() if factory is not None else asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            with contextlib.suppress(RuntimeError):
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the loop and wait for it; an interrupt cancels it, then re-raises."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def call(self, function: Callable[[], T]) -> T:
        """Call a plain function on the loop's thread, where the loop's state is touched."""
        if self.in_loop():
            return function()
        done: Future[T] = Future()

        def invoke() -> None:
            try:
                done.set_result(function())
            except BaseException as error:
                done.set_exception(error)

        self.loop.call_soon_threadsafe(invoke)
        return done.result()

    def close(self, timeout: float = 30.0) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
