"""Over 100,000 simulated calls, each shipped profile delivers its rate and its mix.

Tolerance: every share is checked against a 5σ binomial bound, σ = sqrt(p(1-p)/n).
Draws are hashes, so with the fixed seed the outcome is itself fixed; the bound says
why passing is not luck: a fair generator misses a 5σ band with probability < 1e-6
per check, while any engine change that shifts a rate by more than ~1.5 points (about
5σ at these sample sizes) fails the test.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
from chaosproxy.profiles import load_profile

from chaosproxy.faults import CallContext, FaultEngine

SEED = 2026
CALLS = 100_000
STEPS = 10
TOOLS = ("search_flights", "hold_flight", "get_itinerary")
ARGS: dict[str, Any] = {"origin": "SFO", "date": "2026-03-10", "flight_id": "UA101"}


def within(observed: float, expected: float, n: int, sigmas: float = 5.0) -> bool:
    bound = sigmas * math.sqrt(max(expected * (1 - expected), 1e-12) / n)
    return abs(observed - expected) <= bound


def simulate(name: str) -> dict[str, Any]:
    """10,000 episodes of 10 steps over three tools; each episode has its own key."""
    profile = load_profile(name)
    engine = FaultEngine(profile, seed=SEED)
    eligible = fresh = affected = 0
    mix: Counter[str] = Counter()
    by_step: Counter[int] = Counter()
    shapes = [
        [
            CallContext(
                episode="sim",
                step=step,
                domain="travel",
                tool=TOOLS[(shift + step) % len(TOOLS)],
                arguments=ARGS,
            )
            for step in range(1, STEPS + 1)
        ]
        for shift in range(len(TOOLS))
    ]
    for number in range(CALLS // STEPS):
        engine.configure_episode("sim", key=f"ep{number}")
        for ctx in shapes[number % len(TOOLS)]:
            decision = engine.before_call(ctx)
            fault = decision.fault
            if fault is not None:
                affected += 1
            if fault is not None and not fault.fresh and decision.action != "forward":
                continue
            eligible += 1
            if fault is not None and fault.fresh and fault.draw and fault.draw.purpose == "fault":
                fresh += 1
                # The profile's weights describe the draw; a draw of an incident the call is
                # already in is re-picked among the others, and counts as what was drawn.
                mix[fault.params.get("repicked_from", fault.name)] += 1
                by_step[ctx.step] += 1
    return {
        "profile": profile,
        "eligible": eligible,
        "fresh": fresh,
        "mix": mix,
        "affected": affected,
        "by_step": by_step,
    }


PER_CALL = [
    "lambda0.0",
    "lambda0.1",
    "lambda0.2",
    "lambda0.3",
    "ablation-timeout",
    "ablation-ratelimit",
    "ablation-partial",
    "adversarial",
]


@pytest.mark.parametrize("name", PER_CALL)
def test_per_call_rate_and_mix(name: str) -> None:
    result = simulate(name)
    profile = result["profile"]
    eligible, fresh = result["eligible"], result["fresh"]
    assert eligible >= CALLS // 2
    rate = fresh / eligible
    assert within(rate, profile.failure_rate, eligible), (name, rate, profile.failure_rate)
    print(
        f"{name}: per-call fault rate {rate:.4f} (profile {profile.failure_rate}), "
        f"calls touched by any fault {result['affected'] / CALLS:.4f}"
    )
    expected_mix = profile.mix()
    assert set(result["mix"]) == set(expected_mix)
    for fault, weight in expected_mix.items():
        share = result["mix"][fault] / fresh
        assert within(share, weight, fresh), (name, fault, share, weight)


def test_appendix_b_numbers_are_exact() -> None:
    expected = {
        "lambda0.0": (0.0, {}),
        "lambda0.1": (0.075, {"TransientTimeout": 0.4, "HighLatency": 0.3, "EmptyResponse": 0.3}),
        "lambda0.2": (
            0.175,
            {
                "TransientTimeout": 0.25,
                "SoftRateLimit": 0.25,
                "PartialResponse": 0.2,
                "SchemaDrift": 0.15,
                "StaleData": 0.15,
            },
        ),
        "lambda0.3": (
            0.275,
            {
                "TransientTimeout": 0.15,
                "ConnectionReset": 0.15,
                "HardRateLimit": 0.15,
                "PartialResponse": 0.15,
                "SchemaDrift": 0.2,
                "CascadingFailure": 0.2,
            },
        ),
    }
    for name, (rate, weights) in expected.items():
        profile = load_profile(name)
        assert profile.failure_rate == rate
        assert profile.weights == weights


def test_agentprop_p2_corrupts_exactly_the_first_call() -> None:
    result = simulate("agentprop-p2")
    episodes = CALLS // STEPS
    assert result["by_step"][1] == episodes
    assert sum(count for step, count in result["by_step"].items() if step != 1) == 0
    assert result["mix"] == Counter({"ParameterCorruption": episodes})


def test_fit_v2_one_incident_per_episode_with_its_mix_and_timing() -> None:
    """100,000 calls: 20,000 episodes of 5 steps; every episode plans exactly one incident."""
    profile = load_profile("fit-v2")
    engine = FaultEngine(profile, seed=SEED)
    kinds: Counter[str] = Counter()
    timing: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    steps = 5
    episodes = CALLS // steps
    for number in range(episodes):
        episode = f"ep{number}"
        faulted_steps = []
        for step in range(1, steps + 1):
            decision = engine.before_call(
                CallContext(
                    episode=episode,
                    step=step,
                    domain="travel",
                    tool=TOOLS[step % len(TOOLS)],
                    transport="rest",
                    arguments=ARGS,
                )
            )
            if decision.fault is not None:
                faulted_steps.append(step)
        incidents = engine.episode_summary(episode)["incidents"]
        assert len(incidents) == 1
        incident = incidents[0]
        params = incident["params"]
        kinds[params["kind"]] += 1
        timing[params["timing"]] += 1
        labels[params["label"]] += 1
        bucket = {"early": (1, 3), "mid": (4, 7), "late": (8, 15)}[params["timing"]]
        assert bucket[0] <= incident["start_step"] <= bucket[1]
        span = {
            "f_tool": (1, 2),
            "f_stochastic": (2, 3),
            "f_combined": (1, 2),
            "f_cascade": (3, 4),
            "f_adversarial": (1, 1),
        }.get(params["label"])
        end = incident["end_step"]
        if span is None:
            assert params["label"] == "f_context" and end is None
            end = steps
        else:
            assert span[0] <= end - incident["start_step"] + 1 <= span[1]
        window = set(range(incident["start_step"], min(end, steps) + 1))
        assert set(faulted_steps) <= window
        if params["label"] in {"f_tool", "f_cascade", "f_adversarial", "f_context"}:
            assert set(faulted_steps) == window
        engine.forget_episode(episode)
    for name, share in {"single": 0.70, "compound": 0.20, "adversarial": 0.10}.items():
        assert within(kinds[name] / episodes, share, episodes), (name, kinds[name])
    for name, share in {"early": 0.36, "mid": 0.44, "late": 0.20}.items():
        assert within(timing[name] / episodes, share, episodes), (name, timing[name])
    for label in ("f_tool", "f_context", "f_stochastic"):
        assert within(labels[label] / kinds["single"], 1 / 3, kinds["single"])
    for label in ("f_combined", "f_cascade"):
        assert within(labels[label] / kinds["compound"], 1 / 2, kinds["compound"])


REPLY: dict[str, Any] = {
    "flights": [
        {"flight_id": "UA101", "price": 129.5, "seats": 4, "status": "scheduled"},
        {"flight_id": "UA205", "price": 98.0, "seats": 1, "status": "scheduled"},
    ],
    "count": 2,
}


def simulate_delivery(name: str) -> dict[str, Any]:
    """The stream of `simulate`, each forwarded call answered 200 with a real reply, so the
    engine keeps replies (StaleData) and says which planned faults reached the agent."""
    profile = load_profile(name)
    engine = FaultEngine(profile, seed=SEED)
    eligible = delivered = 0
    drawn: Counter[str] = Counter()
    reached: Counter[str] = Counter()
    repicked: Counter[str] = Counter()
    for number in range(CALLS // STEPS):
        engine.configure_episode("sim", key=f"ep{number}")
        for step in range(1, STEPS + 1):
            ctx = CallContext(
                episode="sim",
                step=step,
                domain="travel",
                tool=TOOLS[(number + step) % len(TOOLS)],
                arguments=ARGS,
            )
            decision = engine.before_call(ctx)
            fault = decision.fault
            if fault is not None and not fault.fresh and decision.action != "forward":
                continue
            eligible += 1
            reached_agent = True
            if decision.action == "forward":
                reached_agent = engine.after_call(decision, 200, REPLY).delivered
            if fault is None or not fault.fresh or fault.draw is None:
                continue
            if fault.draw.purpose != "fault":
                continue
            drawn[fault.name] += 1
            if "repicked_from" in fault.params:
                repicked[fault.params["repicked_from"]] += 1
            if reached_agent:
                delivered += 1
                reached[fault.name] += 1
    return {
        "profile": profile,
        "eligible": eligible,
        "delivered": delivered,
        "drawn": drawn,
        "reached": reached,
        "repicked": repicked,
    }


@pytest.mark.parametrize("name", ["lambda0.1", "lambda0.2", "lambda0.3"])
def test_realised_rate_of_each_lambda_profile_matches_nominal(name: str) -> None:
    """Realised = fresh faults that reached the agent, per eligible call; within 5σ of
    the profile's nominal `failure_rate` (the module docstring says why 5σ)."""
    result = simulate_delivery(name)
    profile = result["profile"]
    eligible = result["eligible"]
    rate = result["delivered"] / eligible
    print(
        f"{name}: realised fault rate {rate:.4f} (nominal {profile.failure_rate}), "
        f"drawn {dict(result['drawn'])}, re-picked from {dict(result['repicked'])}"
    )
    assert within(rate, profile.failure_rate, eligible), (name, rate, profile.failure_rate)
    undelivered = {f: result["drawn"][f] - result["reached"][f] for f in result["drawn"]}
    assert sum(undelivered.values()) <= 0.005 * eligible, undelivered
    if "StaleData" in profile.weights:
        # drawn only where an earlier reply exists, so every draw is delivered
        assert result["reached"]["StaleData"] > 0
        assert result["reached"]["StaleData"] == result["drawn"]["StaleData"]
        assert result["repicked"]["StaleData"] > 0
