"""The kit's MCP client and the scripted agents under the proxy's MCP-native faults, through
a real proxy in front of the scheduling service: what tools/list shows while a tool is
drifted, removed or changed; and what naive (stops at the first failure) and robust
(re-initialises, re-lists, re-maps renamed arguments, backs off) make of each fault."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

import pytest
from chaosproxy.agents.scripted.agent import GaveUp, PolicyClient
from chaosproxy.agents.scripted.policy import POLICIES
from chaosproxy.domains.kit.client import McpToolClient
from proxied import first_call_only, log_lines

if TYPE_CHECKING:
    # Only a type: `conftest` is an ambiguous module name when every test folder loads.
    from conftest import ProxyFactory

ARGUMENTS = {"start_date": "2026-03-02", "end_date": "2026-03-06"}


def _by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in tools}


async def test_tool_list_follows_the_incidents(make_proxy: ProxyFactory) -> None:
    cases = {
        "drift": ("SchemaDrift", {"ops": ["rename"]}),
        "removed": ("ToolRemoved", {"min_steps": 1, "max_steps": 1}),
        "changed": ("ToolChanged", {}),
    }
    seen: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {}
    async with make_proxy("lambda0.0") as proxy:
        for case, (fault, params) in cases.items():
            proxy.core.engine.configure_episode(case, profile=first_call_only(fault, params))
            async with McpToolClient(f"{proxy.url}/e/{case}/scheduling/mcp", timeout_s=10) as mcp:
                before = _by_name(await mcp.list_tools())
                with pytest.raises(Exception):  # noqa: B017 (each fault fails its own way)
                    await mcp.call_with("list_meetings", ARGUMENTS)
                announced = mcp.tools_changed
                after = _by_name(await mcp.list_tools())
                seen[case] = (before, after, announced)

    before, after, announced = seen["drift"]
    assert announced
    old_out = before["list_meetings"]["outputSchema"]["properties"]
    new_out = after["list_meetings"]["outputSchema"]["properties"]
    assert "start_date" in old_out and "startDate" in new_out and "start_date" not in new_out

    before, after, announced = seen["removed"]
    assert announced
    assert "list_meetings" in before and "list_meetings" not in after
    assert set(after) == set(before) - {"list_meetings"}

    before, after, announced = seen["changed"]
    assert announced
    old_in = before["list_meetings"]["inputSchema"]
    new_in = after["list_meetings"]["inputSchema"]
    assert set(old_in["required"]) == {"start_date", "end_date"}
    assert set(new_in["required"]) == {"startDate", "endDate"}
    assert after["list_meetings"]["outputSchema"] == before["list_meetings"]["outputSchema"]


FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "SessionExpired": ("SessionExpired", {}),
    "StreamClosed": ("StreamClosed", {}),
    "ToolRemoved": ("ToolRemoved", {"min_steps": 2, "max_steps": 2}),
    "ToolChanged": ("ToolChanged", {}),
    "SchemaDrift": ("SchemaDrift", {"ops": ["rename", "renest"]}),
}


@pytest.mark.parametrize("case", list(FAULTS))
async def test_naive_stops_robust_recovers(case: str, make_proxy: ProxyFactory) -> None:
    fault, params = FAULTS[case]
    async with make_proxy("lambda0.0") as proxy:
        for policy in ("naive", "robust"):
            episode = f"{policy}-{case}"
            proxy.core.engine.configure_episode(episode, profile=first_call_only(fault, params))
        async with McpToolClient(f"{proxy.url}/e/naive-{case}/scheduling/mcp", timeout_s=10) as mcp:
            await mcp.list_tools()  # as agents do: a drifted result then fails validation
            naive = PolicyClient(mcp, POLICIES["naive"], random.Random(1), {})
            with pytest.raises(GaveUp):
                await naive.call("list_meetings", **ARGUMENTS)
        url = f"{proxy.url}/e/robust-{case}/scheduling/mcp"
        async with McpToolClient(url, timeout_s=10) as mcp:
            tools = await mcp.list_tools()
            inputs = {t["name"]: t["inputSchema"] for t in tools}
            outputs = {t["name"]: t["outputSchema"] for t in tools}
            robust = PolicyClient(mcp, POLICIES["robust"], random.Random(1), outputs, inputs)
            first = await robust.call("list_meetings", **ARGUMENTS)
            second = await robust.call("list_meetings", **ARGUMENTS)
        proxy.core.log.flush()
        lines = log_lines(proxy.log_path, f"robust-{case}")
    for result in (first, second):
        # robust hands the plan the result in the shape it planned with (drift repaired)
        assert isinstance(result["meetings"], list) and result["start_date"] == "2026-03-02"
    calls = [line for line in lines if line["rpc_method"] == "tools/call"]
    methods = [line["rpc_method"] for line in lines]
    assert calls[0]["fault"]["name"] == fault
    if case == "SessionExpired":
        # a new session: initialize again between the refused call and the next one
        assert methods.count("initialize") == 2 and calls[1]["status"] == 200
    if case == "ToolRemoved":
        # re-listed, backed off, and called again once the two-step window was over
        assert "tools/list" in methods[methods.index("tools/call") :]
        assert [c["outcome"] for c in calls] == ["tool_error", "tool_error", "ok", "ok"]
    if case == "ToolChanged":
        # the refused call used the old names; every later one the new names
        assert set(calls[0]["arguments"]) == {"start_date", "end_date"}
        assert all(set(c["arguments"]) == {"startDate", "endDate"} for c in calls[1:])
        assert len(calls) == 3
    if case == "StreamClosed":
        # no reply: a new session, and the same call again (the service did run it)
        assert calls[0]["upstream_called"] is True and methods.count("initialize") == 2
        assert len(calls) == 3 and len({json.dumps(c["arguments"]) for c in calls}) == 1


async def test_slow_initialize_only_delays(make_proxy: ProxyFactory) -> None:
    profile = first_call_only("SlowInitialize", {"delay_s": 1.5})
    async with make_proxy("lambda0.0") as proxy:
        proxy.core.engine.configure_episode("slow-naive", profile=profile)
        url = f"{proxy.url}/e/slow-naive/scheduling/mcp"
        async with McpToolClient(url, timeout_s=10) as mcp:
            naive = PolicyClient(mcp, POLICIES["naive"], random.Random(1), {})
            result = await naive.call("list_meetings", **ARGUMENTS)
        proxy.core.log.flush()
        lines = log_lines(proxy.log_path, "slow-naive")
    assert isinstance(result["meetings"], list)
    (held,) = [line for line in lines if line["rpc_method"] == "initialize"]
    assert held["fault"]["name"] == "SlowInitialize" and held["latency_ms"] >= 1500
