"""Retry policies of the scripted agents: how each reacts to a failed or odd tool call.

- naive: the first error ends the episode; it trusts what tools return, including
  instructions embedded in results (a stand-in for a gullible model).
- retry: bounded retries with exponential backoff and jitter, honours Retry-After; it
  retries anything that looks transient, writes included, and is as trusting as naive.
- robust: retry, plus it checks every response against the tool's published schema
  (re-reads truncated or emptied results, maps drifted fields back), sends an
  Idempotency-Key so a retried write cannot apply twice, escalates to a human on
  contradictory data or a persistent refusal, and ignores instructions found in results.
  Over MCP it also recovers as a careful client does: a new session when the server forgot
  its session (404), backoff then a new session with the same credentials on a 401, a fresh
  tools/list on `notifications/tools/list_changed` or an unknown tool. naive and retry treat
  those as refusals and stop.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Literal

from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import AuthRequired, SessionLost, ToolNotListed

PolicyName = Literal["naive", "retry", "robust"]
FailureKind = Literal[
    "transient",
    "rate_limited",
    "suspended",
    "client_error",
    "session_lost",
    "unauthorized",
    "tool_not_listed",
]


@dataclass(frozen=True)
class RetryPolicy:
    name: PolicyName
    max_attempts: int
    base_delay_s: float
    max_delay_s: float
    follows_injected_instructions: bool
    validates_responses: bool
    recovers_sessions: bool = False
    """Re-initialises, re-authenticates and re-lists tools on the MCP failures that ask for it."""

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential backoff with ±25 % jitter; attempt counts from 1."""
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return delay * (0.75 + 0.5 * rng.random())

    async def wait_before_retry(
        self, attempt: int, failure: ToolCallFailed, rng: random.Random
    ) -> None:
        delay = self.backoff(attempt, rng)
        if failure.retry_after is not None:
            delay = max(delay, failure.retry_after)
        await asyncio.sleep(delay)


POLICIES: dict[PolicyName, RetryPolicy] = {
    "naive": RetryPolicy("naive", 1, 0.0, 0.0, True, False),
    "retry": RetryPolicy("retry", 5, 0.1, 2.0, True, False),
    "robust": RetryPolicy("robust", 6, 0.1, 2.0, False, True, recovers_sessions=True),
}


def classify(failure: ToolCallFailed) -> FailureKind:
    """What a failed call means for a client that cannot see inside the service."""
    if isinstance(failure, SessionLost):
        return "session_lost"
    if isinstance(failure, AuthRequired):
        return "unauthorized"
    if isinstance(failure, ToolNotListed):
        return "tool_not_listed"
    status = failure.status
    message = failure.message.lower()
    if status == 403 or (status == 429 and ("suspend" in message or failure.retry_after is None)):
        return "suspended"
    if status == 429:
        return "rate_limited"
    if status <= 0 or status >= 500 or status in (408, 425):
        return "transient"
    if status == 200:
        return "transient"
    return "client_error"
