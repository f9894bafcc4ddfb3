"""`FaultEngine.roll_episode`: the id that calls without an episode id share is cut into
rolling episodes, each with its own key and incidents (issue 25 #10)."""

from __future__ import annotations

from chaosproxy.faults import CallContext, FaultEngine, Profile

DRIFT = Profile.model_validate(
    {"name": "drift", "failure_rate": 1.0, "weights": {"SchemaDrift": 1.0}}
)


def call(step: int, episode: str = "default") -> CallContext:
    return CallContext(episode=episode, step=step, domain="shop", tool="get_item")


def test_a_persistent_fault_ends_with_its_rolling_episode() -> None:
    """Every call draws SchemaDrift (rate 1). Without rolling the drift drawn at step 1
    covers all 9 calls (the later ones carry it, `fresh: false`, their own draw re-picked to
    nothing). Rolling by 3: each window's first call draws it afresh, the other two carry
    it, and the window's key names it."""
    still = FaultEngine(DRIFT, seed=1)
    kept = [still.before_call(call(step)).fault for step in range(1, 10)]
    assert [f.fresh if f else None for f in kept] == [True] + [False] * 8

    engine = FaultEngine(DRIFT, seed=1)
    engine.roll_episode("default", 3)
    decisions = [engine.before_call(call(step)) for step in range(1, 10)]
    assert [d.episode_key for d in decisions] == ["default"] * 3 + ["default~2"] * 3 + [
        "default~3"
    ] * 3
    assert [d.fault.fresh if d.fault else None for d in decisions] == [True, False, False] * 3
    incidents = [d.fault.incident for d in decisions if d.fault]
    assert incidents == ["SchemaDrift@shop/get_item#1"] * 9  # position 1 of each window
    assert [d.step for d in decisions] == [1, 2, 3] * 3  # steps within the rolling episode
    summary = engine.episode_summary("default")
    assert summary["episode_key"] == "default~3" and len(summary["incidents"]) == 1
    # the first window draws what the unrolled episode drew (same key, same positions)
    assert decisions[0].fault == kept[0]


def test_configured_and_other_episodes_do_not_roll() -> None:
    engine = FaultEngine(DRIFT, seed=1)
    engine.roll_episode("default", 2)
    engine.configure_episode("default", key="task-1")
    assert {engine.before_call(call(step)).episode_key for step in range(1, 6)} == {"task-1"}
    assert {engine.before_call(call(s, "ep")).episode_key for s in range(1, 6)} == {"ep"}


def test_roll_zero_turns_rolling_off() -> None:
    engine = FaultEngine(DRIFT, seed=1)
    engine.roll_episode("default", 2)
    engine.roll_episode("default", 0)
    assert {engine.before_call(call(step)).episode_key for step in range(1, 6)} == {"default"}
