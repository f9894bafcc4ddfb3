"""The proxy's `Unauthorized` fault, seen by every MCP client and by the kit's clients:
a 401 carrying `WWW-Authenticate`, raised as an error (never a hang, never a result), and
the robust agent's recovery (a new session with the same credentials, then the call)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from chaosproxy.agents.scripted.agent import GaveUp, PolicyClient
from chaosproxy.agents.scripted.policy import POLICIES
from chaosproxy.domains.kit.client import AuthRequired, McpToolClient, RestToolClient
from chaosproxy.profiles import load_profile
from matrix import CLIENTS, run_client

if TYPE_CHECKING:
    # Only a type: `conftest` is an ambiguous module name when every test folder loads.
    from conftest import ProxyFactory

GOOD: tuple[str, dict[str, Any]] = (
    "list_meetings",
    {"start_date": "2026-03-02", "end_date": "2026-03-06"},
)
CHALLENGE = 'Bearer error="invalid_token", error_description="The access token expired"'


def _profile(tmp_path: Path, rate: float) -> Path:
    path = tmp_path / f"unauthorized-{rate}.yaml"
    path.write_text(
        f"name: unauthorized-{rate}\ndescription: Unauthorized only\n"
        f"failure_rate: {rate}\nweights:\n  Unauthorized: 1.0\n"
    )
    return path


@pytest.mark.parametrize("client", CLIENTS)
async def test_every_client_sees_a_401_error(
    client: str, make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy(load_profile(str(_profile(tmp_path, 1.0)))) as proxy:
        (seen,) = await run_client(
            client, [(f"{proxy.url}/e/unauth-{client}/scheduling/mcp", [GOOD])]
        )
    assert seen.connect_error is None, seen
    assert "list_meetings" in seen.tools
    if client == "langchain":
        # mcp 1.x tears the whole session down on a 401 (see test_client_faults).
        assert seen.calls == [] and "close_error" in seen.extra, seen
    else:
        assert seen.kinds() == ["rpc_error"], seen.calls


async def test_kit_clients_name_the_challenge(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    async with make_proxy(load_profile(str(_profile(tmp_path, 1.0)))) as proxy:
        base = f"{proxy.url}/e/unauth-kit/scheduling"
        async with McpToolClient(f"{base}/mcp", timeout_s=10) as mcp:
            with pytest.raises(AuthRequired) as over_mcp:
                await mcp.call_with(*GOOD)
        async with RestToolClient(base, timeout_s=10) as rest:
            with pytest.raises(AuthRequired) as over_rest:
                await rest.call_with(*GOOD)
    assert over_mcp.value.challenge == CHALLENGE
    assert over_rest.value.challenge == CHALLENGE


async def test_robust_reauthenticates_naive_stops(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    # Seed 1 at rate 0.5: some calls are refused; robust must still get every answer.
    async with make_proxy(load_profile(str(_profile(tmp_path, 0.5)))) as proxy:
        base = f"{proxy.url}/e/unauth-agents/scheduling/mcp"
        async with McpToolClient(base, timeout_s=10) as mcp:
            robust = PolicyClient(mcp, POLICIES["robust"], random.Random(3), {})
            for _ in range(4):
                result = await robust.call(GOOD[0], **GOOD[1])
                assert isinstance(result.get("meetings"), list)
        refused = robust.calls - 4
        async with McpToolClient(base, timeout_s=10) as mcp:
            naive = PolicyClient(mcp, POLICIES["naive"], random.Random(3), {})
            with pytest.raises(GaveUp, match="401"):
                for _ in range(8):
                    await naive.call(GOOD[0], **GOOD[1])
    assert refused >= 1
