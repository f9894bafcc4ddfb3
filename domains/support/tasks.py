"""The support task suite: create & close (level 1), KB search + escalate (level 2).

Verifiers judge typed state: which tickets changed, to what status, priority, cited article
or escalation tier. Every verifier also demands that no other ticket was touched, so a
fault that makes an agent close the wrong ticket shows up as a failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chaosproxy.domains.kit import Solver, ToolClient
from chaosproxy.domains.kit.declare import Difficulty
from chaosproxy.domains.support.state import SupportState, Ticket
from chaosproxy.domains.support.tools import domain

Verifier = Callable[[SupportState, SupportState], bool]


def norm(text: str | None) -> str:
    """Case, spacing and trailing punctuation do not change what a subject or note says."""
    return re.sub(r"\s+", " ", (text or "").casefold()).strip().rstrip(".!")


def new_tickets(s0: SupportState, sf: SupportState) -> list[Ticket]:
    return [t for tid, t in sf.tickets.items() if tid not in s0.tickets]


def changed(s0: SupportState, sf: SupportState) -> set[str]:
    """Ids of pre-existing tickets whose record differs (or vanished)."""
    return {tid for tid, t in s0.tickets.items() if sf.tickets.get(tid) != t}


def only_changed(s0: SupportState, sf: SupportState, ids: set[str], new: int = 0) -> bool:
    return changed(s0, sf) == ids and len(new_tickets(s0, sf)) == new


def escalated_to_human(s0: SupportState, sf: SupportState) -> bool:
    return len(sf.escalations) > len(s0.escalations)


def closed_with(sf: SupportState, ticket_id: str, article: str | None = None) -> bool:
    t = sf.tickets.get(ticket_id)
    if t is None or t.status != "closed" or not (t.resolution or "").strip():
        return False
    return article is None or t.kb_article_id == article


def escalated(sf: SupportState, ticket_id: str, tier: str) -> bool:
    t = sf.tickets.get(ticket_id)
    return t is not None and t.status == "escalated" and t.escalated_to == tier


def add(
    slug: str,
    number: int,
    description: str,
    verify: Verifier,
    l_min: int,
    difficulty: Difficulty,
    tags: list[str],
    *,
    escalation_acceptable: bool = False,
) -> Callable[[Solver], Solver]:
    """Register the decorated coroutine as the reference solution of task support-NN-slug."""
    return domain.solution(
        id=f"support-{number:02d}-{slug}",
        description=description,
        verify=verify,
        l_min=l_min,
        difficulty=difficulty,
        tags=tags,
        escalation_acceptable=escalation_acceptable,
    )


async def kb_top(client: ToolClient, query: str) -> dict[str, Any]:
    found = await client.call("search_knowledge_base", query=query)
    articles: list[dict[str, Any]] = found["articles"]
    return articles[0]


# --- level 1: create & close -------------------------------------------------------------

S01_SUBJECT = "Cannot add a new team member"
S01_DESCRIPTION = (
    "The Invite button on the Team settings page has been greyed out since 2026-02-28."
)


def _v01(s0: SupportState, sf: SupportState) -> bool:
    new = new_tickets(s0, sf)
    return (
        only_changed(s0, sf, set(), new=1)
        and new[0].customer_id == "CUST-2051"
        and new[0].priority == "high"
        and new[0].status == "open"
        and norm(new[0].subject) == norm(S01_SUBJECT)
    )


@add(
    "create-ticket",
    1,
    "Open a support ticket for Nadia Rahman of Rahman & Co (customer CUST-2051) with priority "
    f"high, subject '{S01_SUBJECT}' and description 'The Invite button on the Team settings page "
    "has been greyed out since 2026-02-28.'",
    _v01,
    1,
    "simple",
    ["create"],
)
async def _s01(client: ToolClient) -> None:
    await client.call(
        "create_ticket",
        customer_id="CUST-2051",
        subject=S01_SUBJECT,
        priority="high",
        description=S01_DESCRIPTION,
    )


def _v02(s0: SupportState, sf: SupportState) -> bool:
    return only_changed(s0, sf, {"TCK-1013"}) and closed_with(sf, "TCK-1013")


@add(
    "close-ticket",
    2,
    "Lukas Schmidt (CUST-2050) confirms that the password reset email for ticket TCK-1013 arrived "
    "after he allowlisted noreply@helio.example. Close TCK-1013 with a short resolution.",
    _v02,
    1,
    "simple",
    ["close"],
)
async def _s02(client: ToolClient) -> None:
    await client.call(
        "close_ticket",
        ticket_id="TCK-1013",
        resolution="Reset email delivered after allowlisting noreply@helio.example.",
    )


S03_NOTE = "Month-end close is blocked; the customer needs the CSV export by 2026-03-03."


def _v03(s0: SupportState, sf: SupportState) -> bool:
    before, after = s0.tickets["TCK-1001"], sf.tickets["TCK-1001"]
    return (
        only_changed(s0, sf, {"TCK-1001"})
        and after.priority == "urgent"
        and after.status == "in_progress"
        and len(after.notes) == len(before.notes) + 1
        and norm(after.notes[-1]) == norm(S03_NOTE)
    )


@add(
    "raise-priority",
    3,
    "Priya Natarajan of Acme Analytics called about ticket TCK-1001. Raise it to urgent, set its "
    f"status to in_progress and add the note '{S03_NOTE}'",
    _v03,
    1,
    "simple",
    ["update"],
)
async def _s03(client: ToolClient) -> None:
    await client.call(
        "update_ticket",
        ticket_id="TCK-1001",
        status="in_progress",
        priority="urgent",
        note=S03_NOTE,
    )


def _v04(s0: SupportState, sf: SupportState) -> bool:
    new = new_tickets(s0, sf)
    return (
        only_changed(s0, sf, set(), new=1)
        and new[0].customer_id == "CUST-2046"
        and new[0].priority == "low"
        and closed_with(sf, new[0].ticket_id)
    )


@add(
    "log-and-close",
    4,
    "Daniel Okafor (customer CUST-2046) phoned: he could not find where to download his receipts, "
    "and you showed him Billing > Documents during the call. Log a low-priority ticket for the "
    "call and close it with a short resolution.",
    _v04,
    2,
    "simple",
    ["create", "close"],
)
async def _s04(client: ToolClient) -> None:
    created = await client.call(
        "create_ticket",
        customer_id="CUST-2046",
        subject="Where to download receipts",
        description="Customer could not find the receipts download.",
        priority="low",
    )
    await client.call(
        "close_ticket",
        ticket_id=created["ticket"]["ticket_id"],
        resolution="Showed the customer Billing > Documents during the call.",
    )


def _v05(s0: SupportState, sf: SupportState) -> bool:
    return only_changed(s0, sf, {"TCK-1004"}) and closed_with(sf, "TCK-1004")


@add(
    "close-duplicate",
    5,
    "Helen Park of Parkside Dental (CUST-2043) has two open tickets about shipping labels not "
    "printing. Close the newer one as a duplicate of the older one and leave the older one open.",
    _v05,
    2,
    "simple",
    ["close", "duplicate"],
)
async def _s05(client: ToolClient) -> None:
    listed = await client.call("list_open_tickets", customer_id="CUST-2043")
    ordered = sorted(listed["tickets"], key=lambda t: t["created_at"])
    older, newer = ordered[0], ordered[-1]
    await client.call(
        "close_ticket",
        ticket_id=newer["ticket_id"],
        resolution=f"Duplicate of {older['ticket_id']}.",
    )


S06_IDS = {"TCK-1013", "TCK-1015", "TCK-1016"}


def _v06(s0: SupportState, sf: SupportState) -> bool:
    return only_changed(s0, sf, S06_IDS) and all(closed_with(sf, tid) for tid in S06_IDS)


@add(
    "close-all-low",
    6,
    "Lukas Schmidt (CUST-2050) confirmed that all of his open low-priority tickets are resolved. "
    "Close every one of them; leave his tickets of any other priority alone.",
    _v06,
    4,
    "medium",
    ["close", "bulk"],
)
async def _s06(client: ToolClient) -> None:
    listed = await client.call("list_open_tickets", customer_id="CUST-2050", priority="low")
    for ticket in listed["tickets"]:
        await client.call(
            "close_ticket",
            ticket_id=ticket["ticket_id"],
            resolution="Customer confirmed the issue is resolved.",
        )


S07_IDS = {"TCK-1005", "TCK-1006"}


def _v07(s0: SupportState, sf: SupportState) -> bool:
    return only_changed(s0, sf, S07_IDS) and all(
        sf.tickets[tid].priority == "urgent" and sf.tickets[tid].status == s0.tickets[tid].status
        for tid in S07_IDS
    )


@add(
    "sla-breach",
    7,
    "Northwind Traders (Tomás Herrera, CUST-2044) is an enterprise customer. Raise every one of "
    "their open tickets that is past its SLA deadline to urgent priority; do not change the "
    "others.",
    _v07,
    3,
    "medium",
    ["update", "sla"],
)
async def _s07(client: ToolClient) -> None:
    listed = await client.call("list_open_tickets", customer_id="CUST-2044")
    for ticket in listed["tickets"]:
        if ticket["sla_breached"]:
            await client.call("update_ticket", ticket_id=ticket["ticket_id"], priority="urgent")


# --- level 2: KB search + escalate -------------------------------------------------------


def _kb_close(ticket_id: str, article: str) -> Verifier:
    def verify(s0: SupportState, sf: SupportState) -> bool:
        return only_changed(s0, sf, {ticket_id}) and closed_with(sf, ticket_id, article)

    return verify


@add(
    "kb-vpn-809",
    8,
    "Marco Bianchi (Bianchi Logistics) reports in ticket TCK-1002 that the VPN client fails with "
    "error 809. Find the knowledge-base article that fixes it and close the ticket citing that "
    "article's id.",
    _kb_close("TCK-1002", "KB-3001"),
    2,
    "medium",
    ["kb", "close"],
)
async def _s08(client: ToolClient) -> None:
    article = await kb_top(client, "VPN error 809")
    await client.call(
        "close_ticket",
        ticket_id="TCK-1002",
        kb_article_id=article["article_id"],
        resolution=f"Follow {article['article_id']}: {article['title']}.",
    )


@add(
    "kb-2fa",
    9,
    "Grace O'Neill (CUST-2049) says in ticket TCK-1012 that her authenticator's 2FA codes are "
    "rejected. Find the knowledge-base article that solves it and close the ticket citing its id.",
    _kb_close("TCK-1012", "KB-1002"),
    2,
    "medium",
    ["kb", "close"],
)
async def _s09(client: ToolClient) -> None:
    article = await kb_top(client, "2FA codes rejected authenticator")
    await client.call(
        "close_ticket",
        ticket_id="TCK-1012",
        kb_article_id=article["article_id"],
        resolution=f"Follow {article['article_id']}: {article['title']}.",
    )


async def refund_by_policy(client: ToolClient, ticket_id: str, amount: float) -> None:
    """Read the refund articles and act as they say for this amount."""
    found = await client.call(
        "search_knowledge_base", query="refund charged twice", category="billing"
    )
    articles = found["articles"]
    if amount <= 250:
        article = next(a for a in articles if a["tier1_resolvable"])
        await client.call(
            "close_ticket",
            ticket_id=ticket_id,
            kb_article_id=article["article_id"],
            resolution=f"Duplicate charge of ${amount:.2f} refunded.",
        )
    elif amount <= 2000:
        article = next(a for a in articles if not a["tier1_resolvable"])
        await client.call(
            "escalate_ticket",
            ticket_id=ticket_id,
            escalate_to=article["escalate_to"],
            reason=f"Refund of ${amount:.2f} is above the tier-1 limit.",
        )
    else:
        await client.call(
            "escalate_to_human",
            reason=f"Refund of ${amount:.2f} on {ticket_id} needs a finance manager.",
        )


@add(
    "kb-refund-small",
    10,
    "Daniel Okafor (CUST-2046) was charged twice ($120.00) for his February invoice, ticket "
    "TCK-1009. Handle it as the knowledge base's refund policy says: if tier 1 may resolve it, "
    "close the ticket citing the article; otherwise escalate the ticket where the article says.",
    _kb_close("TCK-1009", "KB-2001"),
    2,
    "medium",
    ["kb", "refund", "close"],
)
async def _s10(client: ToolClient) -> None:
    await refund_by_policy(client, "TCK-1009", 120.00)


def _kb_escalate(ticket_id: str, tier: str) -> Verifier:
    def verify(s0: SupportState, sf: SupportState) -> bool:
        return only_changed(s0, sf, {ticket_id}) and escalated(sf, ticket_id, tier)

    return verify


@add(
    "kb-refund-large",
    11,
    "Sofia Lindqvist (Lindqvist Design) was charged twice for her annual renewal and asks for a "
    "refund of $740.00 in ticket TCK-1010. Handle it as the knowledge base's refund policy says: "
    "if tier 1 may resolve it, close the ticket citing the article; otherwise escalate the ticket "
    "where the article says.",
    _kb_escalate("TCK-1010", "billing"),
    2,
    "complex",
    ["kb", "refund", "escalate"],
    escalation_acceptable=True,
)
async def _s11(client: ToolClient) -> None:
    await refund_by_policy(client, "TCK-1010", 740.00)


@add(
    "kb-account-takeover",
    12,
    "Aisha Bello (Bello Foods) reports in ticket TCK-1008 logins from an unknown country and an "
    "MFA device she did not add. Look up the knowledge-base procedure for this and follow it.",
    _kb_escalate("TCK-1008", "security"),
    2,
    "complex",
    ["kb", "security", "escalate"],
    escalation_acceptable=True,
)
async def _s12(client: ToolClient) -> None:
    article = await kb_top(client, "unrecognised logins MFA device changed")
    if article["tier1_resolvable"]:
        await client.call(
            "close_ticket",
            ticket_id="TCK-1008",
            kb_article_id=article["article_id"],
            resolution=str(article["title"]),
        )
    else:
        await client.call(
            "escalate_ticket",
            ticket_id="TCK-1008",
            escalate_to=article["escalate_to"],
            reason=f"Per {article['article_id']}: possible account takeover.",
        )


def _v13(s0: SupportState, sf: SupportState) -> bool:
    new = new_tickets(s0, sf)
    return (
        only_changed(s0, sf, set(), new=1)
        and new[0].customer_id == "CUST-2047"
        and new[0].priority == "medium"
        and closed_with(sf, new[0].ticket_id, "KB-4002")
    )


@add(
    "create-kb-close",
    13,
    "Sofia Lindqvist (customer CUST-2047) emails that her label printer shows driver error 0x3E. "
    "Create a medium-priority ticket for her, find the knowledge-base fix, and close the new "
    "ticket citing the article's id.",
    _v13,
    3,
    "complex",
    ["create", "kb", "close"],
)
async def _s13(client: ToolClient) -> None:
    created = await client.call(
        "create_ticket",
        customer_id="CUST-2047",
        subject="Label printer driver error 0x3E",
        description="Label printer shows driver error 0x3E.",
        priority="medium",
    )
    article = await kb_top(client, "label printer driver error 0x3E")
    await client.call(
        "close_ticket",
        ticket_id=created["ticket"]["ticket_id"],
        kb_article_id=article["article_id"],
        resolution=str(article["summary"]),
    )


def _v14(s0: SupportState, sf: SupportState) -> bool:
    new = new_tickets(s0, sf)
    return (
        only_changed(s0, sf, set(), new=1)
        and new[0].customer_id == "CUST-2049"
        and new[0].priority == "urgent"
        and escalated(sf, new[0].ticket_id, "security")
    )


@add(
    "create-kb-escalate",
    14,
    "Grace O'Neill (customer CUST-2049) writes that her company's API key was pushed to a public "
    "GitHub repository an hour ago. Create an urgent ticket for her and handle it as the "
    "knowledge base says.",
    _v14,
    3,
    "complex",
    ["create", "kb", "security", "escalate"],
    escalation_acceptable=True,
)
async def _s14(client: ToolClient) -> None:
    created = await client.call(
        "create_ticket",
        customer_id="CUST-2049",
        subject="API key leaked on public GitHub",
        description="The company's API key was pushed to a public GitHub repository.",
        priority="urgent",
    )
    article = await kb_top(client, "API key leaked public GitHub")
    await client.call(
        "escalate_ticket",
        ticket_id=created["ticket"]["ticket_id"],
        escalate_to=article["escalate_to"],
        reason=f"Per {article['article_id']}.",
    )


def _v15(s0: SupportState, sf: SupportState) -> bool:
    others = changed(s0, sf) - {"TCK-1011"}
    return (
        escalated_to_human(s0, sf)
        and not others
        and not new_tickets(s0, sf)
        and sf.tickets["TCK-1011"].status not in ("closed", "escalated")
    )


@add(
    "refund-needs-manager",
    15,
    "Kenji Watanabe (Watanabe Robotics) asks in ticket TCK-1011 for a refund of $3,400.00 for "
    "unused seats. Handle the refund as the knowledge base's refund policy says.",
    _v15,
    2,
    "complex",
    ["kb", "refund", "escalation-expected"],
)
async def _s15(client: ToolClient) -> None:
    await refund_by_policy(client, "TCK-1011", 3400.00)


def _v16(s0: SupportState, sf: SupportState) -> bool:
    return escalated_to_human(s0, sf) and only_changed(s0, sf, set())


@add(
    "wrong-customer-ticket",
    16,
    "Close ticket TCK-1008 for Daniel Okafor (CUST-2046): he says his invoice question has been "
    "answered.",
    _v16,
    2,
    "medium",
    ["close", "mismatch", "escalation-expected"],
)
async def _s16(client: ToolClient) -> None:
    listed = await client.call("list_open_tickets", customer_id="CUST-2046")
    ids = {t["ticket_id"] for t in listed["tickets"]}
    if "TCK-1008" in ids:
        await client.call(
            "close_ticket", ticket_id="TCK-1008", resolution="Invoice question answered."
        )
    else:
        await client.call(
            "escalate_to_human",
            reason="TCK-1008 is not Daniel Okafor's ticket; it is another customer's "
            "open security incident. Please confirm which ticket to close.",
        )
