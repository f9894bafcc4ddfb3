"""The built-in domain services, in one child process, each on its own 127.0.0.1 port.

A child process lets the proxy and the services use separate cores. The child binds every
port first, prints one JSON line `{"ports": {domain: port}}` and then serves until SIGTERM.
Run as `python -m chaosproxy.proxy.services travel support`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from typing import Any

import httpx

START_TIMEOUT_S = 60.0


class ServicesError(RuntimeError):
    """The domain services did not start; the message carries the child's stderr."""


async def _serve(names: list[str]) -> None:
    import uvicorn

    from chaosproxy.domains.registry import get_domain

    servers: list[tuple[uvicorn.Server, socket.socket]] = []
    ports: dict[str, int] = {}
    for name in names:
        # IPPROTO_TCP explicitly, or asyncio leaves Nagle on (≈40 ms per reply)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        ports[name] = sock.getsockname()[1]
        config = uvicorn.Config(
            get_domain(name).asgi_app(),
            log_level="warning",
            lifespan="on",
            access_log=False,
            timeout_keep_alive=30,
            timeout_graceful_shutdown=2,
        )
        servers.append((uvicorn.Server(config), sock))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(server.serve(sockets=[sock])) for server, sock in servers]
    while not all(server.started for server, _ in servers):
        if any(task.done() for task in tasks):
            for task in tasks:
                if task.done() and task.exception():
                    raise task.exception()  # type: ignore[misc]
            raise SystemExit(1)
        await asyncio.sleep(0.01)
    print(json.dumps({"ports": ports}), flush=True)
    await stop.wait()
    for server, _ in servers:
        server.should_exit = True
    await asyncio.gather(*tasks, return_exceptions=True)


class DomainServices:
    """Starts the child, waits for its ports and health, stops it with SIGTERM."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.urls: dict[str, str] = {}
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> dict[str, str]:
        if not self.names:
            return {}
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "chaosproxy.proxy.services",
            *self.names,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self._process.stdout is not None
        try:
            line = await asyncio.wait_for(self._process.stdout.readline(), START_TIMEOUT_S)
            ports: dict[str, int] = json.loads(line)["ports"]
        except (TimeoutError, ValueError, KeyError) as exc:
            stderr = await self._stderr()
            await self.stop()
            raise ServicesError(
                f"domain services did not start: {stderr.strip() or exc!r}"
            ) from exc
        self.urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        async with httpx.AsyncClient(timeout=5.0) as client:
            for url in self.urls.values():
                (await client.get(url + "/health")).raise_for_status()
        return self.urls

    async def hints(self) -> dict[str, dict[str, Any]]:
        """Each service's `/_oracle/hints`, for the fault engine."""
        out: dict[str, dict[str, Any]] = {}
        async with httpx.AsyncClient(timeout=10.0) as client:
            for name, url in self.urls.items():
                response = await client.get(url + "/_oracle/hints")
                if response.status_code == 200:
                    out[name] = response.json()
        return out

    async def _stderr(self) -> str:
        if self._process is None or self._process.stderr is None:
            return ""
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.terminate()
        with contextlib.suppress(TimeoutError):
            data = await asyncio.wait_for(self._process.stderr.read(), 5.0)
            return data.decode(errors="replace")[-4000:]
        return ""

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10.0)
        except TimeoutError:
            process.kill()
            await process.wait()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1:]))
