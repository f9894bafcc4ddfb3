"""An aiohttp application served on 127.0.0.1 from its own thread and event loop.

The proxy under test runs its own loop, so a stand-in upstream (a model provider) cannot
share it. Subclasses build the application in `app()`; `with Server() as server:` serves it
at `server.url` and stops it on exit.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Self

from aiohttp import web


class ThreadedApp:
    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    def app(self) -> web.Application:
        raise NotImplementedError

    async def _serve(self) -> None:
        runner = web.AppRunner(self.app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)
