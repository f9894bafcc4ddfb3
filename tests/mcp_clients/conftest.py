"""Fixtures for the MCP client matrix: a real domain service and proxies in front of it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from chaosproxy.domains.kit.testing import serve_app
from chaosproxy.domains.registry import get_domain
from chaosproxy.profiles import load_profile

from chaosproxy.faults import FaultEngine, Profile
from chaosproxy.proxy.server import ProxyServer

ProxyFactory = Callable[..., AbstractAsyncContextManager[ProxyServer]]


@pytest.fixture(scope="module")
def scheduling_url() -> Iterator[str]:
    """The scheduling domain as a real service (REST + MCP) on a free 127.0.0.1 port."""
    with serve_app(get_domain("scheduling").asgi_app()) as url:
        yield url


@pytest.fixture
def make_proxy(scheduling_url: str, tmp_path: Path) -> ProxyFactory:
    """`async with make_proxy(profile) as proxy:` — the fault proxy in front of scheduling."""

    @asynccontextmanager
    async def factory(
        profile: Profile | str = "lambda0.0", seed: int = 1
    ) -> AsyncIterator[ProxyServer]:
        resolved = load_profile(profile) if isinstance(profile, str) else profile
        proxy = ProxyServer(
            engine=FaultEngine(default_profile=resolved, seed=seed),
            upstreams={"scheduling": scheduling_url},
            run_seed=seed,
            run_dir=tmp_path / resolved.name,
        )
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.stop()

    return factory


@pytest.fixture(scope="module")
def faulty_url() -> Iterator[str]:
    """The scheduling service behind `FaultyMcp` (`/f/<key>/<fault>/mcp`)."""
    from faulty_server import FaultyMcp

    with serve_app(FaultyMcp(get_domain("scheduling").asgi_app())) as url:
        yield url
