"""Fixtures for the proxy tests: a toy user service, a proxy in front of it, forced faults."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from chaosproxy.profiles import load_profile
from proxy_helpers import ProxyFactory
from proxy_toy import ToyState, serve_toy

from chaosproxy.faults import FaultEngine, Profile
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.settings import ProxyLimits


@pytest.fixture
async def toy() -> AsyncIterator[tuple[str, ToyState]]:
    async with serve_toy() as served:
        yield served


@pytest.fixture
def make_proxy(toy: tuple[str, ToyState], tmp_path: Path) -> ProxyFactory:
    """`async with make_proxy(profile, seed=...) as proxy:` — a proxy in front of the toy."""

    @asynccontextmanager
    async def factory(
        profile: Profile | str = "lambda0.0",
        *,
        seed: int = 1,
        run_dir: Path | None = None,
        limits: ProxyLimits | None = None,
        host: str = "127.0.0.1",
        token: str | None = None,
        oracles: dict[str, str] | None = None,
    ) -> AsyncIterator[ProxyServer]:
        resolved = load_profile(profile) if isinstance(profile, str) else profile
        engine = FaultEngine(default_profile=resolved, seed=seed)
        proxy = ProxyServer(
            engine=engine,
            upstreams={"toy": toy[0]},
            run_seed=seed,
            run_dir=run_dir or tmp_path,
            limits=limits,
            host=host,
            token=token,
            oracles=oracles,
        )
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.stop()

    return factory
