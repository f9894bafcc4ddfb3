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
                # already in is re-picked among the others, and counts as what was drawn; a
                # draw that paid an owed StaleData counts as what it drew too.
                drawn = fault.params.get("owed_instead_of") or fault.params.get("repicked_from")
                mix[drawn or fault.name] += 1
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


# Where each timing bucket of fit-v2 may start its incident, worked by hand. With the plan's
# length L known, a bucket is a third of the plan: the steps s whose span [s - 1, s)
# overlaps [(k - 1)·L/3, k·L/3); unknown (None), the profile's fixed steps (T_max 15).
START_STEPS: dict[int | None, dict[str, tuple[int, int]]] = {
    None: {"early": (1, 3), "mid": (4, 7), "late": (8, 15)},
    1: {"early": (1, 1), "mid": (1, 1), "late": (1, 1)},
    2: {"early": (1, 1), "mid": (1, 2), "late": (2, 2)},  # [0, .67) [.67, 1.33) [1.33, 2)
    3: {"early": (1, 1), "mid": (2, 2), "late": (3, 3)},
    4: {"early": (1, 2), "mid": (2, 3), "late": (3, 4)},  # [0, 1.33) [1.33, 2.67) [2.67, 4)
    7: {"early": (1, 3), "mid": (3, 5), "late": (5, 7)},  # [0, 2.33) [2.33, 4.67) [4.67, 7)
}
# The start step's distribution, from the 36/44/20 % buckets, uniform within a bucket:
# L = 2: step 1 = .36 + .44/2, step 2 = .44/2 + .20; L = 3: one step per bucket;
# L = 4: step 1 = .36/2, 2 = .36/2 + .44/2, 3 = .44/2 + .20/2, 4 = .20/2.
START_SHARES: dict[int, dict[int, float]] = {
    1: {1: 1.0},
    2: {1: 0.58, 2: 0.42},
    3: {1: 0.36, 2: 0.44, 3: 0.20},
    4: {1: 0.18, 2: 0.40, 3: 0.32, 4: 0.10},
}


def test_fit_v2_one_incident_per_episode_with_its_mix_and_timing() -> None:
    """20,000 episodes, each as long as its task's plan (l_min), or 15 calls (HB-Eval's
    T_max) when the engine is not told the plan's length: every episode plans exactly one
    incident, timed within the plan, and its first call in the window carries it."""
    profile = load_profile("fit-v2")
    engine = FaultEngine(profile, seed=SEED)
    kinds: Counter[str] = Counter()
    timing: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    starts: dict[int | None, Counter[int]] = {length: Counter() for length in START_STEPS}
    lengths = list(START_STEPS)
    episodes = 20_000
    for number in range(episodes):
        episode = f"ep{number}"
        plan_length = lengths[number % len(lengths)]
        engine.configure_episode(episode, plan_length=plan_length)
        steps = plan_length or 15
        faulted: dict[int, str] = {}
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
                faulted[step] = decision.action
        incidents = engine.episode_summary(episode)["incidents"]
        assert len(incidents) == 1
        incident = incidents[0]
        params = incident["params"]
        kinds[params["kind"]] += 1
        timing[params["timing"]] += 1
        labels[params["label"]] += 1
        start = incident["start_step"]
        low, high = START_STEPS[plan_length][params["timing"]]
        assert low <= start <= high, (plan_length, params["timing"], start)
        assert params["timing_basis"] == ("steps" if plan_length is None else "plan")
        assert params["plan_length"] == plan_length
        starts[plan_length][start] += 1
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
            assert span[0] <= end - start + 1 <= span[1]
        window = set(range(start, min(end, steps) + 1))
        # the episode reaches its incident: it starts within the calls the episode makes
        assert start in faulted, (plan_length, params, faulted)
        assert set(faulted) <= window
        if params["label"] != "f_stochastic":
            assert set(faulted) == window
        if params["label"] in {"f_stochastic", "f_combined", "f_tool", "f_cascade"}:
            # the window's first call always fails, whatever p_block / p_fail
            assert faulted[start] == "respond"
        engine.forget_episode(episode)
    for name, share in {"single": 0.70, "compound": 0.20, "adversarial": 0.10}.items():
        assert within(kinds[name] / episodes, share, episodes), (name, kinds[name])
    for name, share in {"early": 0.36, "mid": 0.44, "late": 0.20}.items():
        assert within(timing[name] / episodes, share, episodes), (name, timing[name])
    for label in ("f_tool", "f_context", "f_stochastic"):
        assert within(labels[label] / kinds["single"], 1 / 3, kinds["single"])
    for label in ("f_combined", "f_cascade"):
        assert within(labels[label] / kinds["compound"], 1 / 2, kinds["compound"])
    for length, shares in START_SHARES.items():
        n = sum(starts[length].values())
        assert set(starts[length]) == set(shares), (length, starts[length])
        for step, share in shares.items():
            assert within(starts[length][step] / n, share, n), (length, step, starts[length])


def test_blocking_window_blocks_its_first_call_even_when_p_block_is_0() -> None:
    """A window that may block nothing would not be an incident: the first call in it is
    blocked always, later ones with p_block (here 0: never)."""
    profile = load_profile("fit-v2").model_copy(deep=True)
    assert profile.incidents is not None
    profile.incidents.kinds = {
        "single": profile.incidents.kinds["single"].model_copy(
            update={
                "faults": [
                    f
                    for f in profile.incidents.kinds["single"].faults
                    if f.fault == "BlockingWindow"
                ]
            }
        )
    }
    profile.params.BlockingWindow.p_block = 0.0
    engine = FaultEngine(profile, seed=SEED)
    for number in range(200):
        episode = f"ep{number}"
        engine.configure_episode(episode, plan_length=3)
        actions = {}
        for step in range(1, 7):
            ctx = CallContext(
                episode=episode, step=step, domain="travel", tool="search_flights", arguments=ARGS
            )
            actions[step] = engine.before_call(ctx).action
        incident = engine.episode_summary(episode)["incidents"][0]
        start, end = incident["start_step"], incident["end_step"]
        assert incident["params"]["timing_steps"] == list(
            START_STEPS[3][incident["params"]["timing"]]
        )
        blocked = [step for step, action in actions.items() if action == "respond"]
        assert blocked == [start], (start, end, actions)
        assert incident["calls_touched"] == 1


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
