"""Every task of every registered domain is solvable over REST and MCP, and not solved at the start.

Each reference solution runs against the domain served on a real port, in a fresh episode
reset to the task; the verifier must hold on the final state fetched from the oracle and
must not hold on the untouched initial state.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from chaosproxy.domains.kit import ToolClient
from chaosproxy.domains.kit.client import McpToolClient, OracleClient, RestToolClient
from chaosproxy.domains.registry import all_domains, get_domain

# ReliabilityBench Appendix A: tool names each of these domains must serve.
REQUIRED_TOOLS: dict[str, set[str]] = {
    "scheduling": {"book_meeting", "check_calendar", "cancel_meeting", "list_meetings"},
    "travel": {"search_flights", "hold_flight", "confirm_booking", "get_itinerary"},
    "support": {
        "create_ticket",
        "update_ticket",
        "close_ticket",
        "escalate_ticket",
        "search_knowledge_base",
        "list_open_tickets",
    },
    "ecommerce": {
        "search_products",
        "check_inventory",
        "create_order",
        "check_order_status",
        "process_return",
        "apply_coupon",
    },
}
MIN_TASKS = 12
MCP_MODES = ("legacy", "2026-07-28")

DOMAINS = all_domains()
TASKS = [
    (domain.name, task_id, index)
    for domain in DOMAINS
    for index, task_id in enumerate(domain.tasks)
]


class CountingClient:
    """Counts the calls a reference solution makes (checked against the task's l_min)."""

    def __init__(self, inner: ToolClient) -> None:
        self.inner = inner
        self.calls = 0

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        self.calls += 1
        return await self.inner.call(tool, **arguments)


def test_domains_are_registered() -> None:
    assert DOMAINS, "no domain registered under chaosproxy.domains"
    assert [domain.name for domain in DOMAINS] == sorted(domain.name for domain in DOMAINS)


@pytest.mark.parametrize("name", [domain.name for domain in DOMAINS])
def test_domain_declaration(name: str) -> None:
    domain = get_domain(name)
    assert "escalate_to_human" in domain.tools
    missing = REQUIRED_TOOLS.get(name, set()) - set(domain.tools)
    assert not missing, f"{name} lacks the tools {sorted(missing)}"
    assert len(domain.tasks) >= MIN_TASKS, (
        f"{name} has {len(domain.tasks)} tasks, needs {MIN_TASKS}"
    )
    for task in domain.tasks.values():
        assert task.domain == name and task.description.strip() and task.l_min >= 1
    assert len({task.difficulty for task in domain.tasks.values()}) >= 2, (
        "tasks span one complexity level only"
    )
    if name in REQUIRED_TOOLS:
        assert any(
            "escalation-expected" in task.tags or task.escalation_acceptable
            for task in domain.tasks.values()
        ), f"{name} has no task where escalation is the right outcome"


@pytest.mark.parametrize("transport", ["rest", "mcp"])
@pytest.mark.parametrize(
    ("domain_name", "task_id", "index"), TASKS, ids=[f"{d}/{t}" for d, t, _ in TASKS]
)
async def test_reference_solution_solves_the_task(
    domain_url: Callable[[str], str], domain_name: str, task_id: str, index: int, transport: str
) -> None:
    domain = get_domain(domain_name)
    task = domain.tasks[task_id]
    base_url = domain_url(domain_name)
    episode = f"{task_id}-{transport}-{uuid.uuid4().hex[:8]}"
    async with OracleClient(base_url) as oracle:
        reset = await oracle.reset(episode, task_id=task_id)
        initial = domain.state_model.model_validate(reset["state"])
        assert not task.verify(initial, initial), "the verifier already holds on the initial state"

        inner: RestToolClient | McpToolClient
        if transport == "rest":
            inner = RestToolClient(base_url, episode=episode)
        else:
            inner = McpToolClient(f"{base_url}/mcp", episode=episode, mode=MCP_MODES[index % 2])
        client = CountingClient(inner)
        async with inner:
            await task.solve(client)

        final = domain.state_model.model_validate(await oracle.state(episode))
        journal = await oracle.journal(episode)
        await oracle.delete(episode)
    assert task.verify(initial, final), (
        f"reference solution of {task_id} does not pass its verifier"
    )
    assert client.calls >= task.l_min, f"solved in {client.calls} calls but l_min is {task.l_min}"
    assert journal["task_id"] == task_id
    assert {entry["transport"] for entry in journal["entries"]} <= {transport}
