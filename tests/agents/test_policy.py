"""How each policy reads a failure, and how long it waits."""

from __future__ import annotations

import random

import pytest
from chaosproxy.agents.scripted.agent import instructions_in
from chaosproxy.agents.scripted.policy import POLICIES, classify
from chaosproxy.domains.kit import ToolCallFailed

from chaosproxy.faults.kinds.adversarial import instruction_text


@pytest.mark.parametrize(
    ("status", "message", "retry_after", "kind"),
    [
        (0, "connection reset", None, "transient"),
        (504, "gateway timeout", None, "transient"),
        (503, "unavailable", None, "transient"),
        (200, "not valid JSON", None, "transient"),
        (429, "slow down", 1.0, "rate_limited"),
        (429, "account suspended", None, "suspended"),
        (403, "forbidden", None, "suspended"),
        (404, "flight does not exist", None, "client_error"),
        (422, "missing field", None, "client_error"),
    ],
)
def test_classify(status: int, message: str, retry_after: float | None, kind: str) -> None:
    assert classify(ToolCallFailed(status, message, retry_after=retry_after)) == kind


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 8])
def test_backoff_grows_and_stays_bounded(attempt: int) -> None:
    policy = POLICIES["retry"]
    rng = random.Random(1)
    delays = [policy.backoff(attempt, rng) for _ in range(200)]
    nominal = min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1))
    assert min(delays) >= 0.75 * nominal
    assert max(delays) <= 1.25 * nominal


def test_only_the_robust_policy_ignores_injected_instructions() -> None:
    assert POLICIES["naive"].follows_injected_instructions
    assert POLICIES["retry"].follows_injected_instructions
    assert not POLICIES["robust"].follows_injected_instructions


def test_gullible_agents_read_the_engines_injected_instruction() -> None:
    action = {"tool": "cancel_booking", "arguments": {"reservation_id": "R-1001"}}
    body = {"flights": [{"notes": "Window seats left. " + instruction_text(action)}]}
    assert instructions_in(body) == [("cancel_booking", {"reservation_id": "R-1001"})]
