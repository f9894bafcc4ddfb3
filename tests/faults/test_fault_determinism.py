"""Decisions are a pure function of (seed, episode key, tool, position, purpose)."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from chaosproxy.profiles import load_profile

from chaosproxy.faults import CallContext, Decision, FaultEngine, Profile
from chaosproxy.faults.draws import uniform, weighted

TOOLS = ("search_flights", "hold_flight", "get_itinerary", "confirm_booking")
EPISODES = 120
STEPS = 12


def script(seed: int = 99) -> list[list[CallContext]]:
    """Per episode, its calls in step order; tools vary so positions differ from steps."""
    rng = random.Random(seed)
    episodes = []
    for number in range(EPISODES):
        calls = []
        for step in range(1, STEPS + 1):
            tool = rng.choice(TOOLS)
            calls.append(
                CallContext(
                    episode=f"ep{number}",
                    step=step,
                    domain="travel",
                    tool=tool,
                    transport=rng.choice(["rest", "mcp"]),
                    arguments={"origin": "SFO", "date": "2026-03-10", "flight_id": "UA101"},
                )
            )
        episodes.append(calls)
    return episodes


def body_for(tool: str) -> dict[str, Any]:
    return {
        "flights": [
            {"flight_id": "UA101", "price": 329.0, "notes": "ok"},
            {"flight_id": "DL202", "price": 289.5, "notes": "ok"},
        ],
        "tool": tool,
    }


def run_call(engine: FaultEngine, ctx: CallContext) -> tuple[str, Any]:
    decision = engine.before_call(ctx)
    effect = None
    if decision.action == "forward":
        effect = engine.after_call(decision, 200, body_for(ctx.tool)).model_dump()
    return f"{ctx.episode}:{ctx.step}", (decision.model_dump(), effect)


def in_order(engine: FaultEngine, episodes: list[list[CallContext]]) -> dict[str, Any]:
    return dict(run_call(engine, ctx) for calls in episodes for ctx in calls)


def interleaved(
    engine: FaultEngine, episodes: list[list[CallContext]], seed: int
) -> dict[str, Any]:
    """Episodes interleaved at random; each episode keeps its own order."""
    rng = random.Random(seed)
    queues = [list(calls) for calls in episodes]
    out = {}
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        key, value = run_call(engine, queue.pop(0))
        out[key] = value
    return out


def threaded(
    engine: FaultEngine, episodes: list[list[CallContext]], workers: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lock = threading.Lock()

    def work(share: list[list[CallContext]]) -> None:
        for calls in share:
            for ctx in calls:
                key, value = run_call(engine, ctx)
                with lock:
                    out[key] = value

    threads = [threading.Thread(target=work, args=(episodes[i::workers],)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


PROFILES = ["lambda0.2", "lambda0.3", "fit-v2", "adversarial", "agentprop-p2"]


@pytest.mark.parametrize("name", PROFILES)
def test_same_seed_same_decisions_in_any_order_and_from_threads(name: str) -> None:
    episodes = script()
    profile = load_profile(name)
    reference = in_order(FaultEngine(profile, seed=7), episodes)
    assert any(value[0]["fault"] for value in reference.values())
    assert interleaved(FaultEngine(profile, seed=7), episodes, seed=1) == reference
    assert interleaved(FaultEngine(profile, seed=7), episodes, seed=2) == reference
    assert threaded(FaultEngine(profile, seed=7), episodes, workers=4) == reference


def test_per_call_faults_do_not_depend_on_the_order_of_other_tools() -> None:
    """Shuffle an episode's calls across tools (keeping each tool's order): same faults."""
    profile = load_profile("lambda0.1")
    episodes = script()
    reference = in_order(FaultEngine(profile, seed=3), episodes)
    rng = random.Random(5)
    shuffled = []
    for calls in episodes:
        by_tool: dict[str, list[CallContext]] = {}
        for ctx in calls:
            by_tool.setdefault(ctx.tool, []).append(ctx)
        order: list[CallContext] = []
        while any(by_tool.values()):
            tool = rng.choice([t for t, q in by_tool.items() if q])
            order.append(by_tool[tool].pop(0))
        shuffled.append(order)
    assert in_order(FaultEngine(profile, seed=3), shuffled) == reference


@pytest.mark.parametrize("name", ["lambda0.2", "lambda0.3", "fit-v2"])
def test_different_seed_different_decisions(name: str) -> None:
    episodes = script()
    profile = load_profile(name)

    def faults(seed: int) -> list[Any]:
        decisions = in_order(FaultEngine(profile, seed=seed), episodes)
        return [(key, (value[0]["fault"] or {}).get("name")) for key, value in decisions.items()]

    first, second = faults(1), faults(2)
    differing = sum(a != b for a, b in zip(first, second, strict=True))
    assert differing > len(first) // 20


def test_same_key_same_faults_for_different_episode_ids() -> None:
    """Two agents on the same task and trial meet the same faults (fair comparison)."""
    profile = load_profile("lambda0.3")
    engine = FaultEngine(profile, seed=11)
    engine.configure_episode("agentA-run", key="travel-01~0.0~lambda0.3~1")
    engine.configure_episode("agentB-run", key="travel-01~0.0~lambda0.3~1")
    engine.configure_episode("agentC-run", key="travel-01~0.0~lambda0.3~2")
    names: dict[str, list[str | None]] = {"agentA-run": [], "agentB-run": [], "agentC-run": []}
    for episode, record in names.items():
        for step in range(1, 40):
            decision = engine.before_call(
                CallContext(episode=episode, step=step, domain="travel", tool=TOOLS[step % 2])
            )
            record.append(decision.fault.name if decision.fault else None)
    assert names["agentA-run"] == names["agentB-run"]
    assert names["agentA-run"] != names["agentC-run"]
    assert engine.episode_summary("agentA-run")["episode_key"] == "travel-01~0.0~lambda0.3~1"


def test_every_fresh_fault_reproduces_from_its_draw_key() -> None:
    profile = load_profile("lambda0.2")
    engine = FaultEngine(profile, seed=5)
    seen = 0
    for calls in script():
        for ctx in calls:
            decision: Decision = engine.before_call(ctx)
            fault = decision.fault
            if fault is None or not fault.fresh:
                continue
            assert fault.draw is not None
            assert fault.draw.tool == f"{ctx.domain}/{ctx.tool}"
            assert fault.draw.position == decision.position
            assert uniform(fault.draw) < profile.failure_rate
            pick = uniform(fault.draw.model_copy(update={"purpose": "pick"}))
            drawn = fault.params.get("repicked_from", fault.name)
            assert weighted(pick, list(profile.mix().items())) == drawn
            seen += 1
    assert seen > 50


def test_configure_episode_overrides_profile_and_seed_and_restarts() -> None:
    engine = FaultEngine(load_profile("lambda0.0"), seed=1)
    engine.configure_episode("e", profile=load_profile("ablation-timeout"), seed=9)
    outcomes = [
        engine.before_call(CallContext(episode="e", step=s, domain="d", tool="t"))
        for s in range(1, 60)
    ]
    assert {d.profile for d in outcomes} == {"ablation-timeout"}
    assert {d.seed for d in outcomes} == {9}
    assert any(d.fault and d.fault.name == "TransientTimeout" for d in outcomes)
    untouched = engine.before_call(CallContext(episode="other", step=1, domain="d", tool="t"))
    assert untouched.profile == "lambda0.0" and untouched.fault is None
    engine.configure_episode("e")
    assert engine.episode_summary("e")["calls"] == 0
    assert engine.before_call(CallContext(episode="e", step=1, domain="d", tool="t")).position == 1


def test_hot_swap_applies_to_episodes_without_their_own_profile() -> None:
    engine = FaultEngine(load_profile("lambda0.0"), seed=1)
    ctx = [CallContext(episode="e", step=s, domain="d", tool="t") for s in range(1, 80)]
    assert all(engine.before_call(c).fault is None for c in ctx[:40])
    engine.set_profile(load_profile("ablation-ratelimit"))
    later = [engine.before_call(c) for c in ctx[40:]]
    assert any(d.fault and d.fault.name == "SoftRateLimit" for d in later)
    assert later[0].position == 41


@pytest.mark.parametrize("fault", ["SchemaDrift", "ContradictoryData", "HardRateLimit"])
def test_an_incident_is_never_stacked_on_itself(fault: str) -> None:
    """Every call draws `fault`; the tool stays in one incident, not one more per call."""
    profile = Profile.model_validate({"name": "always", "failure_rate": 1.0, "weights": {fault: 1}})
    engine = FaultEngine(profile, seed=3)
    body = {"flights": [{"flight_id": "UA-1", "price": 120.0, "status": "open"}], "total": 1}
    seen = []
    for step in range(1, 5):
        ctx = CallContext(episode="e", step=step, domain="travel", tool="search_flights")
        decision = engine.before_call(ctx)
        assert decision.fault is not None and decision.fault.name == fault
        if decision.action == "forward":
            seen.append(engine.after_call(decision, status=200, body=body).body)
    incidents = {f["incident"] for f in engine.episode_summary("e")["faults"]}
    assert len(incidents) == 1
    assert all(later == seen[0] for later in seen[1:])


def test_idle_fast_path_decides_what_the_full_walk_decides() -> None:
    """At rate 0 with no incidents `before_call` skips the walk; the decisions, positions and
    the draws after a swap to a faulting profile must be those of the full `_before`."""
    scoped = Profile.model_validate(
        {"name": "scoped0", "failure_rate": 0.0, "scope": {"exclude_tools": ["hold_*"]}}
    )
    fast = FaultEngine(scoped, seed=5)
    full = FaultEngine(scoped, seed=5)
    calls = [c for episode in script(7)[:6] for c in episode]
    decided = []
    for ctx in calls:
        with full._lock:
            expected = full._before(ctx)
        decided.append(fast.before_call(ctx))
        assert decided[-1] == expected
    assert {d.in_scope for d in decided} == {True, False}
    for engine in (fast, full):
        engine.set_profile(load_profile("lambda0.2"))
    later = [(fast.before_call(c), full.before_call(c)) for c in calls]
    assert all(a == b for a, b in later)
    assert any(a.fault is not None for a, _ in later)
    for episode in {c.episode for c in calls}:
        assert fast.episode_summary(episode) == full.episode_summary(episode)
