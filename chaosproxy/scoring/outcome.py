"""Infrastructure or the agent: one rule for who an episode's outcome belongs to.

The scorer and the runner's live progress line both ask it, so "fail 0 infra 6" on the
terminal and the scored failures never disagree. A `completed` episode is the agent's. The
other outcomes are infrastructure (counted apart, never a failure in a rate) unless the
log shows the agent caused them:

- `crash_after_fault` / `timeout_after_fault`: an `agent_crash` or a runner `timeout`
  whose last tool or model call delivered a fault the agent could see (not HighLatency).
  The agent died of the fault, or was still backing off from it when time ran out: that
  is how it handles faults.
- `service_error_on_agent_call`: an `infra_error` the runner recorded with a verdict (the
  service failed on its own, after the agent ran) where a tool call of the agent came back
  5xx from the service with no fault injected (calls.jsonl: `upstream_status` ≥ 500,
  `fault` null). The agent's own input broke the service (issue 26 item 2: a snippet
  printing '\\ud800'); dropping the episode would let an agent erase its own failure.

Such an episode is scored with the verifier's verdict on the state it left (False if none
was recorded). The rule reads calls.jsonl and episodes.jsonl only, so old run
directories are judged by it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaosproxy.scoring.calls import EpisodeCalls
from chaosproxy.scoring.episoderows import Episode

CRASH_AFTER_FAULT = "crash_after_fault"
TIMEOUT_AFTER_FAULT = "timeout_after_fault"
SERVICE_ERROR_ON_AGENT_CALL = "service_error_on_agent_call"
REASONS = (CRASH_AFTER_FAULT, TIMEOUT_AFTER_FAULT, SERVICE_ERROR_ON_AGENT_CALL)


@dataclass(frozen=True, slots=True)
class Owner:
    """`agent`: the outcome is the agent's and is scored; `reason`: why an outcome other
    than `completed` was (None for `completed` and for infrastructure); `fault`: the
    visible fault the last call delivered, for the after-fault reasons."""

    agent: bool
    reason: str | None = None
    fault: str | None = None


def owner(record: Episode, calls: EpisodeCalls | None) -> Owner:
    """Who the episode's outcome belongs to. `calls`: the episode's facts from calls.jsonl
    (None when the log is not at hand: only `completed` is then the agent's)."""
    if record.outcome == "completed":
        return Owner(agent=True)
    if calls is None:
        return Owner(agent=False)
    if record.outcome in ("agent_crash", "timeout") and calls.last_fault is not None:
        reason = CRASH_AFTER_FAULT if record.outcome == "agent_crash" else TIMEOUT_AFTER_FAULT
        return Owner(agent=True, reason=reason, fault=calls.last_fault)
    if (
        record.outcome == "infra_error"
        and record.success is not None
        and calls.service_errors_on_agent_calls > 0
    ):
        return Owner(agent=True, reason=SERVICE_ERROR_ON_AGENT_CALL)
    return Owner(agent=False)
