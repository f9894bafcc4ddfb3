"""The built-in domain services, in one child process, each on its own 127.0.0.1 port.

A child process lets the proxy and the services use separate cores. The child binds every
port first, prints one JSON line `{"ports": {domain: port}}` and then serves until SIGTERM.
Run as `python -m chaosproxy.proxy.services travel support`.

The child dies with its parent, at once, even after `kill -9` of `chaosproxy up`: on Linux
the kernel sends it SIGKILL when the parent goes (PR_SET_PDEATHSIG; nothing is left to
drain, the proxy that wrote the log is gone), and everywhere it watches its parent's pid
once a second and exits without draining. Its oracles require the bearer token the parent
generated (the agent under test runs on the same machine and could find the loopback
ports). The token reaches the child on its stdin, never in its environment, and the child
makes itself non-dumpable, so an agent of the same uid cannot read it from
/proc/<pid>/environ or the child's memory (docs/security.md).
`port_holder` tells `up` which process holds a port it cannot bind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from chaosproxy.errors import ServicesError

if TYPE_CHECKING:
    from chaosproxy.proxy.settings import ProxyLimits

START_TIMEOUT_S = 60.0
PARENT_ENV = "CHAOSPROXY_SERVICES_PARENT"
TOKEN_ENV = "CHAOSPROXY_ORACLE_TOKEN"
CONTROL_TOKEN_ENV = "CHAOSPROXY_CONTROL_TOKEN"
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PARENT_POLL_S = 1.0


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies (Linux), and make this process
    non-dumpable (its environ and memory become root's); exit now if the parent is gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


async def watch_parent(parent: int, stop: asyncio.Event) -> None:
    """The portable fallback: exit at once (no drain) when the parent is no longer ours."""
    while not stop.is_set():
        if os.getppid() != parent:
            os._exit(0)
        await asyncio.sleep(PARENT_POLL_S)


def read_token() -> str | None:
    """The oracle token, one line on stdin from the parent (empty: none)."""
    return sys.stdin.readline().strip() or None


def port_holder(port: int) -> str | None:
    """Which process listens on TCP `port` (Linux /proc), e.g. "pid 42 (python -m ...)".

    None when nothing is found or /proc cannot tell (another user's process, not Linux).
    """
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if (
                    len(fields) > 9
                    and fields[3] == "0A"
                    and int(fields[1].rsplit(":", 1)[1], 16) == port
                ):
                    inodes.add(fields[9])
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return _describe(int(proc.name))
    return "a process this user cannot inspect"


def _describe(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return f"pid {pid}"
    orphan = (
        "; an orphaned chaosproxy services process: stop it with `kill " + str(pid) + "`"
        if "chaosproxy.proxy.services" in command and parent == 1
        else ""
    )
    return f"pid {pid} ({command[:200]}){orphan}"


async def _serve(names: list[str]) -> None:
    import uvicorn

    from chaosproxy.domains.kit.store import EpisodeLimits
    from chaosproxy.domains.registry import get_domain

    parent = int(os.environ.get(PARENT_ENV) or os.getppid())
    die_with_parent(parent)
    token = read_token()
    limits = EpisodeLimits.from_env()

    servers: list[tuple[uvicorn.Server, socket.socket]] = []
    ports: dict[str, int] = {}
    for name in names:
        # IPPROTO_TCP explicitly, or asyncio leaves Nagle on (≈40 ms per reply)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        ports[name] = sock.getsockname()[1]
        config = uvicorn.Config(
            get_domain(name).asgi_app(limits, oracle_token=token),
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
    watcher = asyncio.create_task(watch_parent(parent, stop))
    await stop.wait()
    watcher.cancel()
    for server, _ in servers:
        server.should_exit = True
    await asyncio.gather(*tasks, return_exceptions=True)


class DomainServices:
    """Starts the child, waits for its ports and health, stops it with SIGTERM."""

    def __init__(self, names: list[str], limits: ProxyLimits | None = None) -> None:
        """`limits`: the proxy's; the services keep the same idle-episode bound, unless
        CHAOSPROXY_MAX_IDLE_EPISODES / CHAOSPROXY_EPISODE_IDLE_TTL say otherwise."""
        from chaosproxy.domains.kit.store import IDLE_TTL_ENV, MAX_IDLE_ENV

        self.names = names
        self.idle_env = (
            {
                MAX_IDLE_ENV: str(limits.max_idle_episodes),
                IDLE_TTL_ENV: repr(limits.episode_idle_ttl_s),
            }
            if limits is not None
            else {}
        )
        self.urls: dict[str, str] = {}
        self.oracle_token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
        """Every service's `/_oracle/` requires `Authorization: Bearer` this: the operator's
        CHAOSPROXY_ORACLE_TOKEN when set (so built-in services and `--services` ones started
        with `chaosproxy serve` share one), else a fresh one per start."""
        self._process: asyncio.subprocess.Process | None = None

    @property
    def oracle_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.oracle_token}"}

    def child_environment(self) -> dict[str, str]:
        """The child's environment: ours without the tokens, under any name (the child
        reads the oracle token from its stdin)."""
        secrets = {self.oracle_token, os.environ.get(CONTROL_TOKEN_ENV) or self.oracle_token}
        return {
            name: value
            for name, value in os.environ.items()
            if name not in (TOKEN_ENV, CONTROL_TOKEN_ENV)
            and not any(secret in value for secret in secrets)
        }

    async def start(self) -> dict[str, str]:
        if not self.names:
            return {}
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "chaosproxy.proxy.services",
            *self.names,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={
                **self.idle_env,
                **self.child_environment(),
                "PYTHONUNBUFFERED": "1",
                PARENT_ENV: str(os.getpid()),
            },
        )
        assert self._process.stdout is not None and self._process.stdin is not None
        self._process.stdin.write(f"{self.oracle_token}\n".encode())
        self._process.stdin.close()
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
        async with httpx.AsyncClient(timeout=10.0, headers=self.oracle_headers) as client:
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
