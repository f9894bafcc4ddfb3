"""Run the proxy's and the runner's coroutines on the fastest event loop available.

uvloop (where installed: not on Windows) roughly halves what the proxy adds to each call
(benchmarks/proxy_overhead.py); without it, the standard asyncio loop is used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, on uvloop when it is installed."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coroutine)
