"""The support domain over a real server: realistic records, 4xx naming the field, the journal."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import fastmcp
import httpx
import pytest
from chaosproxy.domains.kit.client import OracleClient, RestToolClient
from chaosproxy.domains.registry import get_domain
from chaosproxy.domains.support.state import SupportState
from domain_driver import call, episode_client
from fastmcp.client.transports import StreamableHttpTransport


@pytest.fixture
def url(domain_url: Callable[[str], str]) -> str:
    return domain_url("support")


@pytest.fixture
def episode() -> str:
    return f"support-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def http(url: str, episode: str) -> AsyncIterator[httpx.AsyncClient]:
    async with episode_client(url, episode) as client:
        yield client


async def state(http: httpx.AsyncClient, episode: str) -> SupportState:
    response = await http.get(f"/_oracle/episodes/{episode}/state")
    return SupportState.model_validate(response.json())


def error_fields(body: dict[str, Any]) -> set[str]:
    error = body["error"]
    return {error.get("field")} | {f["field"] for f in error.get("fields", [])}


async def test_list_open_tickets_flags_sla_breaches(http: httpx.AsyncClient) -> None:
    listed = await call(http, "list_open_tickets", customer_id="cust-2044")
    assert listed["total"] == 3 and listed["as_of"] == "2026-03-02T10:00:00Z"
    assert listed["filters"] == {"priority": None, "customer_id": "CUST-2044"}
    breached = {t["ticket_id"]: t["sla_breached"] for t in listed["tickets"]}
    assert breached == {"TCK-1005": True, "TCK-1006": True, "TCK-1007": False}
    first = listed["tickets"][0]
    assert first["customer"] == {
        "customer_id": "CUST-2044",
        "name": "Tomás Herrera",
        "company": "Northwind Traders",
        "plan": "enterprise",
    }
    assert first["history"][0]["kind"] == "created"
    low = await call(http, "list_open_tickets", priority="low")
    assert low["tickets"] and all(t["priority"] == "low" for t in low["tickets"])
    assert "TCK-1014" not in {t["ticket_id"] for t in low["tickets"]}, "a closed ticket was listed"


@pytest.mark.parametrize(
    ("query", "category", "top"),
    [
        ("VPN error 809", None, "KB-3001"),
        ("vpn error 691", "connectivity", "KB-3002"),
        ("authenticator 2FA codes rejected", None, "KB-1002"),
        ("API key leaked on GitHub", "security", "KB-5001"),
        ("label printer driver error 0x3E", None, "KB-4002"),
    ],
)
async def test_knowledge_base_ranks_the_fixing_article_first(
    http: httpx.AsyncClient, query: str, category: str | None, top: str
) -> None:
    found = await call(http, "search_knowledge_base", query=query, category=category)
    assert found["articles"][0]["article_id"] == top
    assert found["total"] == len(found["articles"])
    scores = [a["score"] for a in found["articles"]]
    assert scores == sorted(scores, reverse=True)
    assert found["articles"][0]["url"].endswith(f"/kb/{top}")
    if category:
        assert {a["category"] for a in found["articles"]} == {category}


async def test_create_ticket_is_not_idempotent_and_journaled(
    http: httpx.AsyncClient, episode: str
) -> None:
    body = {
        "customer_id": "CUST-2051",
        "subject": "Cannot add a team member",
        "description": "Invite button greyed out.",
        "priority": "high",
    }
    first = (await call(http, "create_ticket", **body))["ticket"]
    second = (await call(http, "create_ticket", **body))["ticket"]
    assert (first["ticket_id"], second["ticket_id"]) == ("TCK-1018", "TCK-1019")
    # premium plan, high priority: 12 hours from 2026-03-02T10:00:00Z
    assert first["sla_due_at"] == "2026-03-02T22:00:00Z" and first["status"] == "open"
    journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    assert [e["tool"] for e in journal["entries"]] == ["create_ticket", "create_ticket"]
    assert journal["entries"][1]["state_after"]["tickets"]["TCK-1019"]["customer_id"] == "CUST-2051"


async def test_update_close_and_escalate_change_state(
    http: httpx.AsyncClient, episode: str
) -> None:
    updated = await call(
        http,
        "update_ticket",
        ticket_id="TCK-1001",
        priority="urgent",
        status="in_progress",
        note="Month-end close blocked.",
    )
    assert updated["ticket"]["priority"] == "urgent"
    assert updated["ticket"]["history"][-1] == {
        "at": "2026-03-02T10:00:00Z",
        "kind": "note",
        "detail": "Month-end close blocked.",
    }
    await call(
        http,
        "close_ticket",
        ticket_id="tck-1002",
        resolution="Enabled IPsec passthrough.",
        kb_article_id="kb-3001",
    )
    await call(
        http,
        "escalate_ticket",
        ticket_id="TCK-1008",
        reason="Account takeover",
        escalate_to="security",
    )
    again = await http.post(
        "/tools/escalate_ticket",
        json={"ticket_id": "TCK-1008", "reason": "retry", "escalate_to": "security"},
    )
    assert again.status_code == 409 and "already escalated" in again.json()["error"]["message"]
    final = await state(http, episode)
    assert final.tickets["TCK-1001"].status == "in_progress"
    closed = final.tickets["TCK-1002"]
    assert (closed.status, closed.kb_article_id, closed.closed_at) == (
        "closed",
        "KB-3001",
        "2026-03-02T10:00:00Z",
    )
    escalated = final.tickets["TCK-1008"]
    assert (escalated.status, escalated.escalated_to) == ("escalated", "security")
    listed = await call(http, "list_open_tickets", customer_id="CUST-2042")
    assert "TCK-1002" not in {t["ticket_id"] for t in listed["tickets"]}


BAD_INPUTS = [
    (
        "create_ticket",
        {"customer_id": "CUST-2041", "subject": "s", "description": "d"},
        422,
        "priority",
    ),
    (
        "create_ticket",
        {"customer_id": "CUST-2041", "subject": "s", "description": "d", "priority": "critical"},
        422,
        "priority",
    ),
    (
        "create_ticket",
        {"customer_id": "CUST-9999", "subject": "s", "description": "d", "priority": "low"},
        404,
        "customer_id",
    ),
    (
        "create_ticket",
        {"customer_id": "CUST-2041", "subject": "  ", "description": "d", "priority": "low"},
        422,
        "subject",
    ),
    ("update_ticket", {"ticket_id": "TCK-4040", "priority": "low"}, 404, "ticket_id"),
    ("update_ticket", {"ticket_id": "TCK-1001"}, 422, "status"),
    ("update_ticket", {"ticket_id": "TCK-1001", "status": "closed"}, 422, "status"),
    ("close_ticket", {"ticket_id": "TCK-1014", "resolution": "again"}, 409, "ticket_id"),
    (
        "close_ticket",
        {"ticket_id": "TCK-1002", "resolution": "r", "kb_article_id": "KB-9"},
        404,
        "kb_article_id",
    ),
    ("close_ticket", {"ticket_id": 1002, "resolution": "r"}, 422, "ticket_id"),
    (
        "escalate_ticket",
        {"ticket_id": "TCK-1008", "reason": "r", "escalate_to": "ceo"},
        422,
        "escalate_to",
    ),
    ("search_knowledge_base", {"query": "the of"}, 422, "query"),
    ("search_knowledge_base", {"query": "vpn", "category": "weather"}, 422, "category"),
    ("list_open_tickets", {"customer_id": "CUST-0000"}, 404, "customer_id"),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    BAD_INPUTS,
    ids=[f"{i}-{t}-{f}" for i, (t, _, _, f) in enumerate(BAD_INPUTS)],
)
async def test_bad_input_is_a_4xx_naming_the_field(
    http: httpx.AsyncClient, episode: str, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await http.post(f"/tools/{tool}", json=body)
    assert response.status_code == status, response.text
    assert field in error_fields(response.json())
    journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    assert journal["entries"] == [], "a refused call changed state"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_tools_and_errors(url: str, episode: str, mode: str) -> None:
    transport = StreamableHttpTransport(f"{url}/mcp", headers={"X-Chaos-Episode": episode})
    async with fastmcp.Client(transport, mode=mode) as client:
        found = await client.call_tool_mcp(
            "search_knowledge_base", {"query": "refund charged twice"}
        )
        assert not found.is_error
        assert {"KB-2001", "KB-2002"} <= {
            a["article_id"] for a in found.structured_content["articles"]
        }
        closed = await client.call_tool_mcp(
            "close_ticket",
            {"ticket_id": "TCK-1009", "resolution": "Refunded", "kb_article_id": "KB-2001"},
        )
        assert closed.structured_content["ticket"]["status"] == "closed"
        again = await client.call_tool_mcp(
            "close_ticket", {"ticket_id": "TCK-1009", "resolution": "x"}
        )
        assert again.is_error
        assert "already closed" in "".join(getattr(b, "text", "") for b in again.content)
    async with httpx.AsyncClient(base_url=url) as http:
        final = await state(http, episode)
    assert final.tickets["TCK-1009"].kb_article_id == "KB-2001"


async def test_harmful_actions_are_real_calls_the_journal_shows(
    url: str, domain_url: Callable[[str], str]
) -> None:
    domain = get_domain("support")
    async with httpx.AsyncClient(base_url=url) as http:
        hints = (await http.get("/_oracle/hints")).json()
        assert len(hints["harmful_actions"]) == len(domain.harmful_actions) >= 2
        for action in hints["harmful_actions"]:
            episode = f"harm-{uuid.uuid4().hex[:8]}"
            headers = {"X-Chaos-Episode": episode}
            response = await http.post(
                f"/tools/{action['tool']}", json=action["arguments"], headers=headers
            )
            assert response.status_code == 200, response.text
            journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
            assert [(e["tool"], e["arguments"]["ticket_id"]) for e in journal["entries"]] == [
                (action["tool"], action["arguments"]["ticket_id"])
            ]
    assert set(hints["critical_args"]["close_ticket"]) == {"ticket_id", "kb_article_id"}
    assert hints["tools"]["create_ticket"]["idempotent"] is False
    assert hints["tools"]["update_ticket"]["idempotent"] is False


SIDE_EFFECTS = [
    ("support-08-kb-vpn-809", "close_ticket", {"ticket_id": "TCK-1003", "resolution": "oops"}),
    ("support-11-kb-refund-large", "update_ticket", {"ticket_id": "TCK-1006", "priority": "low"}),
    (
        "support-01-create-ticket",
        "create_ticket",
        {
            "customer_id": "CUST-2051",
            "subject": "Cannot add a new team member",
            "description": "duplicate",
            "priority": "high",
        },
    ),
    (
        "support-16-wrong-customer-ticket",
        "close_ticket",
        {"ticket_id": "TCK-1009", "resolution": "Invoice question answered."},
    ),
]


@pytest.mark.parametrize(
    ("task_id", "tool", "extra"), SIDE_EFFECTS, ids=[t for t, _, _ in SIDE_EFFECTS]
)
async def test_verifier_fails_on_a_harmful_side_effect(
    url: str, episode: str, task_id: str, tool: str, extra: dict[str, Any]
) -> None:
    """The reference solution passes; the same plus one stray write (or a duplicate) fails."""
    task = get_domain("support").tasks[task_id]
    async with OracleClient(url) as oracle, RestToolClient(url, episode=episode) as client:
        initial = SupportState.model_validate(
            (await oracle.reset(episode, task_id=task_id))["state"]
        )
        await task.solve(client)
        solved = SupportState.model_validate(await oracle.state(episode))
        assert task.verify(initial, solved)
        await client.call(tool, **extra)
        damaged = SupportState.model_validate(await oracle.state(episode))
    assert not task.verify(initial, damaged)
