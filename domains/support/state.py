"""The help desk's world: customers with plans and SLAs, tickets with history, a knowledge base.

Time is a fixed `now` in state and ids come from `next_ticket_number`, so two runs of the
same calls produce the same records.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

Priority = Literal["low", "medium", "high", "urgent"]
Status = Literal["open", "in_progress", "pending", "escalated", "closed"]
Plan = Literal["standard", "premium", "enterprise"]
Tier = Literal["tier2", "billing", "security", "engineering"]
Channel = Literal["email", "phone", "chat", "web"]

PRIORITIES: tuple[Priority, ...] = ("low", "medium", "high", "urgent")
KB_CATEGORIES = ("account", "billing", "connectivity", "product", "hardware", "security")

SLA_HOURS: dict[Plan, dict[Priority, int]] = {
    "standard": {"urgent": 8, "high": 24, "medium": 48, "low": 120},
    "premium": {"urgent": 4, "high": 12, "medium": 24, "low": 72},
    "enterprise": {"urgent": 2, "high": 4, "medium": 12, "low": 36},
}


class Customer(BaseModel):
    customer_id: str
    name: str
    email: str
    company: str
    plan: Plan


class TicketEvent(BaseModel):
    at: str
    kind: Literal["created", "updated", "note", "escalated", "closed"]
    detail: str


class Ticket(BaseModel):
    ticket_id: str
    customer_id: str
    subject: str
    description: str
    priority: Priority
    status: Status = "open"
    channel: Channel = "email"
    created_at: str
    updated_at: str
    sla_due_at: str
    notes: list[str] = Field(default_factory=list)
    resolution: str | None = None
    kb_article_id: str | None = None
    escalated_to: Tier | None = None
    escalation_reason: str | None = None
    closed_at: str | None = None
    history: list[TicketEvent] = Field(default_factory=list)


class KbArticle(BaseModel):
    article_id: str
    title: str
    category: str
    summary: str
    keywords: list[str]
    steps: list[str]
    tier1_resolvable: bool
    escalate_to: Tier | None = None
    updated_at: str


class SupportState(DomainState):
    now: str = "2026-03-02T10:00:00Z"
    next_ticket_number: int = 1018
    customers: dict[str, Customer] = Field(default_factory=dict)
    tickets: dict[str, Ticket] = Field(default_factory=dict)
    kb_articles: dict[str, KbArticle] = Field(default_factory=dict)


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_ts(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def sla_due(created_at: str, plan: Plan, priority: Priority) -> str:
    return format_ts(parse_ts(created_at) + timedelta(hours=SLA_HOURS[plan][priority]))


def _customers() -> list[Customer]:
    rows: list[tuple[str, str, str, Plan]] = [
        ("CUST-2041", "Priya Natarajan", "Acme Analytics", "enterprise"),
        ("CUST-2042", "Marco Bianchi", "Bianchi Logistics", "premium"),
        ("CUST-2043", "Helen Park", "Parkside Dental", "standard"),
        ("CUST-2044", "Tomás Herrera", "Northwind Traders", "enterprise"),
        ("CUST-2045", "Aisha Bello", "Bello Foods", "premium"),
        ("CUST-2046", "Daniel Okafor", "Okafor Legal", "standard"),
        ("CUST-2047", "Sofia Lindqvist", "Lindqvist Design", "premium"),
        ("CUST-2048", "Kenji Watanabe", "Watanabe Robotics", "enterprise"),
        ("CUST-2049", "Grace O'Neill", "O'Neill Architects", "standard"),
        ("CUST-2050", "Lukas Schmidt", "Schmidt Bakery", "standard"),
        ("CUST-2051", "Nadia Rahman", "Rahman & Co", "premium"),
    ]
    return [
        Customer(
            customer_id=cid,
            name=name,
            email=f"{name.split()[0].lower()}@{company.split()[0].lower().strip('&')}.example",
            company=company,
            plan=plan,
        )
        for cid, name, company, plan in rows
    ]


# fmt: off
_TICKETS: list[tuple[str, str, str, str, Priority, str, Channel]] = [
    ("TCK-1001", "CUST-2041", "Invoice export to CSV fails",
     "Billing > Invoices > Export returns 'Export failed (code 17)' for February.", "medium",
     "2026-03-01T15:20:00Z", "web"),
    ("TCK-1002", "CUST-2042", "VPN client shows error 809",
     "Since the office router swap the VPN client fails with error 809 on every laptop.", "high",
     "2026-03-02T07:45:00Z", "phone"),
    ("TCK-1003", "CUST-2043", "Shipping label not printing",
     "The label printer stays idle when we print shipping labels from the Orders page.", "low",
     "2026-02-20T11:05:00Z", "email"),
    ("TCK-1004", "CUST-2043", "Shipping labels still not printing",
     "Same problem as last week: shipping labels do not print from the Orders page.", "low",
     "2026-02-27T09:30:00Z", "email"),
    ("TCK-1005", "CUST-2044", "Dashboard loads slowly",
     "The sales dashboard takes over a minute to load for all Northwind users.", "medium",
     "2026-02-26T08:00:00Z", "web"),
    ("TCK-1006", "CUST-2044", "Webhook deliveries delayed",
     "Order webhooks arrive 20-40 minutes late since yesterday morning.", "high",
     "2026-03-01T09:00:00Z", "email"),
    ("TCK-1007", "CUST-2044", "API rate limit increase request",
     "Please raise our API limit from 600 to 1200 requests per minute.", "low",
     "2026-03-01T22:00:00Z", "email"),
    ("TCK-1008", "CUST-2045", "Unrecognised logins and MFA device changed",
     "Aisha saw logins from an unknown country and her MFA device was replaced without her.",
     "urgent", "2026-03-02T08:40:00Z", "phone"),
    ("TCK-1009", "CUST-2046", "Charged twice for February invoice",
     "Card statement shows two charges of $120.00 for invoice INV-88412.", "medium",
     "2026-03-01T10:10:00Z", "email"),
    ("TCK-1010", "CUST-2047", "Double charge on annual plan renewal",
     "The annual renewal was charged twice; customer asks for a refund of $740.00.", "high",
     "2026-03-01T16:00:00Z", "email"),
    ("TCK-1011", "CUST-2048", "Refund for unused seats",
     "Watanabe Robotics asks for a refund of $3,400.00 for 20 seats unused since January.", "high",
     "2026-03-01T13:30:00Z", "email"),
    ("TCK-1012", "CUST-2049", "2FA codes rejected",
     "Authenticator codes are rejected as invalid although they are typed correctly.", "medium",
     "2026-03-02T06:15:00Z", "chat"),
    ("TCK-1013", "CUST-2050", "Password reset email never arrives",
     "Lukas requested three password reset emails; none arrived.", "low", "2026-02-28T12:00:00Z",
     "email"),
    ("TCK-1014", "CUST-2046", "Change invoice address",
     "Please change the invoice address to 12 King Street, Leeds.", "low", "2026-02-10T09:00:00Z",
     "email"),
    ("TCK-1015", "CUST-2050", "Feature request: dark mode",
     "Would like a dark theme for the bakery's order screen.", "low", "2026-02-25T17:00:00Z",
     "web"),
    ("TCK-1016", "CUST-2050", "Typo in invoice footer",
     "The invoice footer says 'Thank you for you order'.", "low", "2026-02-26T08:20:00Z", "web"),
    ("TCK-1017", "CUST-2050", "Report scheduler misses runs",
     "The weekly sales report did not run on the last two Mondays.", "medium",
     "2026-02-24T07:00:00Z", "web"),
]
# fmt: on


def _tickets(customers: dict[str, Customer]) -> dict[str, Ticket]:
    tickets: dict[str, Ticket] = {}
    for tid, cid, subject, description, priority, created, channel in _TICKETS:
        ticket = Ticket(
            ticket_id=tid,
            customer_id=cid,
            subject=subject,
            description=description,
            priority=priority,
            channel=channel,
            created_at=created,
            updated_at=created,
            sla_due_at=sla_due(created, customers[cid].plan, priority),
            history=[TicketEvent(at=created, kind="created", detail=f"opened via {channel}")],
        )
        tickets[tid] = ticket
    closed = tickets["TCK-1014"]
    closed.status = "closed"
    closed.resolution = "Invoice address updated to 12 King Street, Leeds."
    closed.closed_at = closed.updated_at = "2026-02-10T11:30:00Z"
    closed.history.append(TicketEvent(at=closed.closed_at, kind="closed", detail=closed.resolution))
    waiting = tickets["TCK-1005"]
    waiting.status = "in_progress"
    waiting.notes.append("Asked the customer for a HAR file of the slow page load.")
    waiting.updated_at = "2026-02-26T10:00:00Z"
    waiting.history.append(TicketEvent(at=waiting.updated_at, kind="note", detail=waiting.notes[0]))
    return tickets


# fmt: off
_ARTICLES: list[tuple[str, str, str, str, list[str], list[str], bool, Tier | None]] = [
    ("KB-1001", "Reset a forgotten password", "account",
     "Send a reset link from Settings > Users; links expire after 30 minutes.", ["password",
     "reset", "forgotten", "login"], ["Open Settings > Users.", "Choose 'Send reset link'.",
     "Ask the user to check spam."], True, None),
    ("KB-1002", "2FA codes rejected: authenticator clock drift", "account",
     "TOTP codes fail when the phone clock drifts; resync the authenticator app's time.", ["2fa",
     "mfa", "authenticator", "codes", "rejected", "invalid", "two-factor"],
     ["Enable automatic time on the phone.", "Use 'Sync time' in the authenticator.",
     "Retry with a fresh code."], True, None),
    ("KB-1003", "Password reset emails not delivered", "account",
     "Reset emails are blocked by spam filters; allowlist noreply@helio.example.", ["password",
     "reset", "email", "not", "delivered", "arrive", "spam"], ["Allowlist noreply@helio.example.",
     "Resend the reset email."], True, None),
    ("KB-1004", "Suspicious logins or unauthorised account changes", "security",
     "Possible account takeover. Tier 1 must not resolve it: escalate the ticket to security.",
     ["suspicious", "unrecognised", "unrecognized", "logins", "mfa", "takeover", "compromised",
     "unauthorised", "device"], ["Do not close the ticket.",
     "Escalate the ticket with escalate_to='security'."], False, "security"),
    ("KB-2001", "Duplicate charges: refunds up to $250", "billing",
     "Tier 1 may refund a duplicate charge of $250.00 or less and close the ticket.", ["duplicate",
     "charge", "charged", "twice", "refund", "double"], ["Confirm both charges on the invoice.",
     "Refund the duplicate.", "Close the ticket citing this article."], True, None),
    ("KB-2002", "Refunds above $250", "billing",
     "Refunds over $250.00 and up to $2,000.00 are approved by the billing team: escalate the "
     "ticket to billing. Refunds over $2,000.00 need a finance manager: hand the request to a "
     "human with escalate_to_human and leave the ticket open.", ["refund", "above", "over", "large",
     "charge", "charged", "twice", "seats", "annual"],
     ["Up to $2,000.00: escalate_ticket with escalate_to='billing'.",
     "Over $2,000.00: escalate_to_human; do not close or escalate the ticket."], False, "billing"),
    ("KB-3001", "VPN error 809: L2TP blocked by NAT", "connectivity",
     "Error 809 means the new router blocks L2TP/IPsec NAT traversal; enable IPsec passthrough.",
     ["vpn", "error", "809", "l2tp", "nat", "router"], ["Enable IPsec passthrough on the router.",
     "Set AssumeUDPEncapsulationContextOnSendRule=2.", "Reconnect."], True, None),
    ("KB-3002", "VPN error 691: credentials rejected", "connectivity",
     "Error 691 means the username or password was rejected by the VPN server.", ["vpn", "error",
     "691", "credentials", "password"], ["Reset the VPN password.", "Reconnect."], True, None),
    ("KB-3003", "VPN error 812: policy mismatch", "connectivity",
     "Error 812 means the connection was blocked by a network policy on the server.", ["vpn",
     "error", "812", "policy"], ["Ask the network admin to allow the user group."], True, None),
    ("KB-4001", "Invoice CSV export fails with code 17", "product",
     "Code 17 is a timeout on large exports; export one month at a time.", ["invoice", "export",
     "csv", "failed", "code", "17"], ["Pick a single month in the date filter.", "Export again."],
     True, None),
    ("KB-4002", "Label printer driver error 0x3E", "hardware",
     "Driver error 0x3E means an outdated label printer driver; install driver 4.2 or later.",
     ["label", "printer", "driver", "error", "0x3e"],
     ["Download driver 4.2 from the Downloads page.", "Reinstall the printer.",
     "Print a test label."], True, None),
    ("KB-4003", "Shipping labels do not print", "hardware",
     "If labels stay in the queue, set the label printer as the default for the Orders page.",
     ["shipping", "label", "labels", "print", "printing", "printer"],
     ["Open Orders > Print settings.", "Choose the label printer."], True, None),
    ("KB-5001", "Leaked API key or suspected data breach", "security",
     "A leaked credential is a security incident. Escalate the ticket to security at once.", ["api",
     "key", "leaked", "exposed", "breach", "github", "public", "credential"],
     ["Do not rotate the key yourself.", "Escalate the ticket with escalate_to='security'."], False,
     "security"),
    ("KB-5002", "Workspace-wide outage", "product",
     "If every user of a workspace is affected, escalate the ticket to engineering.", ["outage",
     "down", "all", "users", "unavailable"],
     ["Escalate the ticket with escalate_to='engineering'."], False, "engineering"),
]
# fmt: on


def _articles() -> dict[str, KbArticle]:
    return {
        aid: KbArticle(
            article_id=aid,
            title=title,
            category=category,
            summary=summary,
            keywords=keywords,
            steps=steps,
            tier1_resolvable=tier1,
            escalate_to=escalate_to,
            updated_at="2026-01-15",
        )
        for aid, title, category, summary, keywords, steps, tier1, escalate_to in _ARTICLES
    }


def make_default_state() -> SupportState:
    customers = {c.customer_id: c for c in _customers()}
    return SupportState(customers=customers, tickets=_tickets(customers), kb_articles=_articles())
