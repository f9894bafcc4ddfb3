"""Every shipped profile delivers its mix, not only its rate (issue 25 #7), on the pure
engine: agent-like episodes (three tools, arguments that vary, each forwarded call answered
200 with a real body) and what *reached the agent* counted per fault, beside the weights.

Before, StaleData served only an earlier reply of the very same call, which agents seldom
make: at lambda0.2 it was never delivered (0 of 401; its 0.15 went to the others).

Tolerance: σ = sqrt(p (1 - p) / n) for an expected share p over n draws; a share passes
within 5σ (a fair generator misses a 5σ band with probability < 1e-6 per check; the draws
are hashes, so with the fixed seed the outcome is fixed).

Expected shares: a profile's weights over the faults that can land on these calls (MCP
calls inside a session, so every tool fault can), renormalised. A connection-stage fault
(SlowInitialize) acts on MCP `initialize`, never on a tool call: its tool-call picks are
re-picked, so it is left out of the tool-call mix here (docs/faults.md, "What λ means").
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from typing import Any

import pytest
from chaosproxy.profiles import load_profile, shipped_profiles
from fault_bodies import FLIGHT_SEARCH, TRAVEL_HINTS

from chaosproxy.faults import CallContext, FaultEngine, Profile
from chaosproxy.faults.catalog import CATALOG

SEED = 25
EPISODES = 1000
STEPS = 10
TOOLS = ("search_flights", "hold_flight", "get_itinerary")
ORIGINS = ("SFO", "LAX", "SEA")


def within(observed: float, expected: float, n: int, sigmas: float = 5.0) -> bool:
    bound = sigmas * math.sqrt(max(expected * (1 - expected), 1e-12) / n)
    return abs(observed - expected) <= bound


def arguments(tool: str, step: int, episode: int) -> dict[str, Any]:
    """Arguments an agent would send: a search per origin, holds of the flight found."""
    origin = ORIGINS[(episode + step // 3) % len(ORIGINS)]
    if tool == "search_flights":
        return {"origin": origin, "date": "2026-03-10"}
    return {"flight_id": f"UA{100 + (episode + step) % 4}"}


def reply(step: int) -> dict[str, Any]:
    """A real body that changes as the episode goes on (seats sell)."""
    body = copy.deepcopy(FLIGHT_SEARCH)
    body["flights"][0]["seats_left"] = max(0, 9 - step)
    return body


def simulate(profile: Profile) -> tuple[int, int, Counter[str]]:
    """Eligible calls (those that can draw: not inside an incident that answers them),
    fresh faults that reached the agent, and those per fault."""
    engine = FaultEngine(profile, seed=SEED)
    engine.set_hints("travel", copy.deepcopy(TRAVEL_HINTS))
    eligible = delivered = 0
    by_fault: Counter[str] = Counter()
    for episode in range(EPISODES):
        name = f"ep{episode}"
        engine.configure_episode(name, key=name)
        for step in range(1, STEPS + 1):
            tool = TOOLS[(episode + step) % len(TOOLS)]
            ctx = CallContext(
                episode=name,
                step=step,
                domain="travel",
                tool=tool,
                transport="mcp",
                arguments=arguments(tool, step, episode),
                mcp_session=True,
            )
            decision = engine.before_call(ctx)
            fault = decision.fault
            reached = True
            if decision.action == "forward":
                reached = engine.after_call(decision, 200, reply(step)).delivered
            if fault is not None and not fault.fresh and decision.action != "forward":
                continue
            if profile.scope.steps is None or profile.scope.steps.contains(step):
                eligible += 1
            if fault is None or not fault.fresh or not reached:
                continue
            if fault.params.get("applied") is False:
                continue
            delivered += 1
            by_fault[fault.name] += 1
        engine.forget_episode(name)
    return eligible, delivered, by_fault


PER_CALL = [
    name
    for name in shipped_profiles()
    if load_profile(name).failure_rate > 0
    and load_profile(name).incidents is None
    # tool calls are simulated here; a profile of model-call faults only
    # (agentprop-p2-model) lands on none of them
    and any(CATALOG[fault].target == "tool" for fault in load_profile(name).mix())
]


def tool_mix(profile: Profile) -> dict[str, float]:
    """The weights of the faults that land on a tool call, renormalised."""
    weights = {
        name: weight
        for name, weight in profile.mix().items()
        if CATALOG[name].target == "tool" and CATALOG[name].needs != "mcp_initialize"
    }
    total = sum(weights.values())
    return {name: weight / total for name, weight in weights.items()}


@pytest.mark.parametrize("name", PER_CALL)
def test_each_profile_delivers_its_rate_and_its_mix(name: str) -> None:
    profile = load_profile(name)
    eligible, delivered, by_fault = simulate(profile)
    rate = delivered / eligible
    print(f"{name}: rate {rate:.4f} (profile {profile.failure_rate}) {dict(by_fault)}")
    assert within(rate, profile.failure_rate, eligible), (name, rate, eligible)
    expected = tool_mix(profile)
    assert set(by_fault) == set(expected), (name, dict(by_fault))
    for fault, weight in expected.items():
        share = by_fault[fault] / delivered
        assert within(share, weight, delivered), (name, fault, share, weight, delivered)


def test_the_incident_plan_delivers_its_mix() -> None:
    """fit-v2 (no per-call rate): each episode's one incident, by fault, against kind
    weight × fault weight (HB-Eval Table 2)."""
    profile = load_profile("fit-v2")
    assert profile.incidents is not None
    expected: dict[str, float] = {}
    for kind in profile.incidents.kinds.values():
        total = sum(f.weight for f in kind.faults)
        for f in kind.faults:
            expected[f.fault] = expected.get(f.fault, 0) + kind.weight * f.weight / total
    engine = FaultEngine(profile, seed=SEED)
    engine.set_hints("travel", copy.deepcopy(TRAVEL_HINTS))
    seen: Counter[str] = Counter()
    for episode in range(EPISODES):
        name = f"ep{episode}"
        engine.configure_episode(name, key=name, plan_length=6)
        landed: str | None = None
        for step in range(1, STEPS + 1):
            tool = TOOLS[(episode + step) % len(TOOLS)]
            ctx = CallContext(
                episode=name,
                step=step,
                domain="travel",
                tool=tool,
                transport="mcp",
                arguments=arguments(tool, step, episode),
                mcp_session=True,
            )
            decision = engine.before_call(ctx)
            reached = True
            if decision.action == "forward":
                reached = engine.after_call(decision, 200, reply(step)).delivered
            if decision.fault is not None and reached and landed is None:
                landed = decision.fault.name
        engine.forget_episode(name)
        assert landed is not None, f"episode {episode}: its incident never reached the agent"
        seen[landed] += 1
    for fault, weight in expected.items():
        assert within(seen[fault] / EPISODES, weight, EPISODES), (fault, seen[fault], weight)
