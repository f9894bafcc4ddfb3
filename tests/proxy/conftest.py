"""Fixtures for the proxy tests: a toy user service, a proxy in front of it, forced faults."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from proxy_toy import ToyState, serve_toy

from chaosproxy.faults import FaultEngine, Profile, load_profile
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.records import CALLS_FILE, CallRecord, read_jsonl

FAST = {
    "TransientTimeout": {"delay_s": 0.05},
    "LostReply": {"delay_s": 0.05},
    "HighLatency": {"min_s": 0.2, "max_s": 0.2},
}


def forced(fault: str, **params: Any) -> Profile:
    """A profile that gives every tool call `fault` (rate 1.0), with short delays."""
    merged = {**FAST.get(fault, {}), **params}
    data: dict[str, Any] = {
        "name": f"force-{fault}",
        "failure_rate": 1.0,
        "weights": {fault: 1.0},
        "params": {fault: merged} if merged else {},
        "hints": {
            "toy": {
                "critical_args": {
                    "get_item": {"item_id": {"kind": "choice", "values": ["A1", "B2", "C3"]}}
                },
                "tools": {"add_note": {"idempotent": False}, "get_item": {"idempotent": True}},
            }
        },
    }
    return Profile.model_validate(data)


def read_log(run_dir: Path) -> list[CallRecord]:
    path = run_dir / CALLS_FILE
    return list(read_jsonl(path, CallRecord)) if path.exists() else []


@pytest.fixture
async def toy() -> AsyncIterator[tuple[str, ToyState]]:
    async with serve_toy() as served:
        yield served


ProxyFactory = Callable[..., AbstractAsyncContextManager[ProxyServer]]


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
        )
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.stop()

    return factory
