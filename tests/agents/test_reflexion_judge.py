"""reflexion's self-judgement: from the agent's own observations, never the oracle."""

from __future__ import annotations

from chaosproxy.agents.loop import Attempt, Step
from chaosproxy.agents.reflexion import judge

OK = Step("hold_flight", "{}", '{"hold": {}}', False, 200)
FAILED = Step("hold_flight", "{}", '{"error": "unavailable", "status": 503}', True, 503)


def test_an_error_got_past_is_not_a_failure() -> None:
    assert judge(Attempt(steps=[FAILED, OK], final_text="Booked.")) is None


def test_an_error_never_got_past_is_a_failure() -> None:
    verdict = judge(Attempt(steps=[OK, FAILED], final_text="Booked."))
    assert verdict is not None and verdict.startswith("hold_flight failed")


def test_running_out_of_steps_and_saying_so_are_failures() -> None:
    assert judge(Attempt(steps=[OK], hit_step_limit=True)) is not None
    verdict = judge(Attempt(steps=[OK], final_text="Sorry, I was unable to book it."))
    assert verdict is not None and "final answer" in verdict


def test_an_escalation_is_a_decision_not_a_failure() -> None:
    assert judge(Attempt(steps=[FAILED], escalated=True)) is None
