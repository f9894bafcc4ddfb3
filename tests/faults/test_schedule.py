"""Fault schedules in the engine: replace, overlay, step entries, misses, bad files."""

from __future__ import annotations

import pytest
from chaosproxy.profiles import load_profile

from chaosproxy.faults import CallContext, FaultEngine
from chaosproxy.faults.schedule import ScheduleError, parse_schedule

TOOLS = ["search_flights", "search_flights", "book_flight", "search_flights", "get_booking"]


def _faults(engine: FaultEngine, episode: str, tools: list[str]) -> list[str | None]:
    out: list[str | None] = []
    for step, tool in enumerate(tools, start=1):
        decision = engine.before_call(
            CallContext(episode=episode, step=step, domain="travel", tool=tool)
        )
        out.append(decision.fault.name if decision.fault else None)
        if decision.fault is not None and episode == "ep":
            assert decision.fault.draw is None  # a scheduled fault: no draw chose it
    return out


def test_replace_puts_exactly_the_scheduled_faults() -> None:
    engine = FaultEngine(load_profile("lambda0.3"), seed=3)
    schedule = parse_schedule(
        {
            "faults": [
                {"tool": "travel/search_flights", "call": 2, "fault": "SoftRateLimit"},
                {"tool": "book_flight", "call": 1, "fault": "LostReply"},
            ]
        }
    )
    engine.configure_episode("ep", schedule=schedule)
    assert _faults(engine, "ep", TOOLS) == [None, "SoftRateLimit", "LostReply", None, None]


def test_overlay_keeps_the_profile_draws_elsewhere() -> None:
    profile = load_profile("lambda0.3")
    engine = FaultEngine(profile, seed=3)
    engine.configure_episode("drawn", key="k")
    drawn = _faults(engine, "drawn", TOOLS * 3)
    schedule = parse_schedule([{"tool": "travel/search_flights", "call": 1, "fault": "LostReply"}])
    engine.configure_episode("over", key="k", schedule=schedule, schedule_mode="overlay")
    over = _faults(engine, "over", TOOLS * 3)
    assert over[0] == "LostReply"
    assert over[1:] == drawn[1:]
    assert sum(f is not None for f in drawn) >= 3  # the overlay test compares real draws


def test_params_override_and_step_entry() -> None:
    engine = FaultEngine(load_profile("lambda0.0"), seed=1)
    schedule = parse_schedule(
        [
            {
                "tool": "search_flights",
                "call": 1,
                "fault": "SoftRateLimit",
                "params": {"retry_after_s": 3},
            },
            {"tool": "*", "from_step": 3, "to_step": 4, "fault": "ServerError"},
        ]
    )
    engine.configure_episode("ep", schedule=schedule)
    first = engine.before_call(
        CallContext(episode="ep", step=1, domain="travel", tool="search_flights")
    )
    assert first.fault is not None and first.fault.params["retry_after_s"] == 3
    assert first.response is not None and first.response.headers.get("Retry-After") == "3"
    rest = [
        engine.before_call(CallContext(episode="ep", step=s, domain="travel", tool="book_flight"))
        for s in (2, 3, 4, 5)
    ]
    assert [d.fault.name if d.fault else None for d in rest] == [
        None,
        "ServerError",
        "ServerError",
        None,
    ]


def test_a_fault_that_cannot_land_is_reported() -> None:
    engine = FaultEngine(load_profile("lambda0.0"), seed=1)
    schedule = parse_schedule([{"tool": "search_flights", "call": 1, "fault": "SessionExpired"}])
    engine.configure_episode("ep", schedule=schedule)
    assert _faults(engine, "ep", ["search_flights"]) == [None]
    missed = engine.episode_summary("ep")["schedule_missed"]
    assert missed and missed[0]["fault"] == "SessionExpired" and "rest" in missed[0]["why"]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([{"tool": "t", "call": 1, "fault": "SoftRateLimt"}], "faults.0.fault"),
        ([{"tool": "t", "call": 0, "fault": "LostReply"}], "faults.0.call"),
        ([{"tool": "t", "fault": "LostReply"}], "faults.0"),
        ([{"tool": "t", "call": 1, "fault": "LostReply", "params": {"delay": 1}}], "params.delay"),
        ({"faults": [], "fault": []}, "fault"),
    ],
)
def test_bad_schedules_name_the_field(data: object, field: str) -> None:
    with pytest.raises(ScheduleError, match=field.replace(".", r"\.")):
        parse_schedule(data)


def test_stale_data_keeps_replies_and_reports_a_call_with_none() -> None:
    """Replace mode keeps replies for a scheduled StaleData whatever the profile's
    weights; on the tool's first call (nothing to replay) the miss is reported."""
    engine = FaultEngine(load_profile("lambda0.0"), seed=1)
    schedule = parse_schedule(
        [
            {"tool": "travel/get_booking", "call": 1, "fault": "StaleData"},
            {"tool": "travel/get_booking", "call": 2, "fault": "StaleData"},
        ]
    )
    engine.configure_episode("ep", schedule=schedule)
    bodies = []
    for step, body in ((1, {"v": 1}), (2, {"v": 2})):
        decision = engine.before_call(
            CallContext(
                episode="ep",
                step=step,
                domain="travel",
                tool="get_booking",
                arguments={"id": "b"},
            )
        )
        bodies.append(engine.after_call(decision, 200, body).body)
    assert bodies == [{"v": 1}, {"v": 1}]  # the second call got the first reply
    missed = engine.episode_summary("ep")["schedule_missed"]
    assert [(m["call"], m["fault"]) for m in missed] == [(1, "StaleData")]


def test_slow_initialize_is_scheduled_on_the_nth_initialize() -> None:
    """`domain/initialize`, call n: the n-th MCP initialize of the episode is held, under
    replace too (where no draw happens); off an initialize it is reported, not dropped."""
    engine = FaultEngine(load_profile("lambda0.0"), seed=1)
    schedule = parse_schedule(
        [
            {
                "tool": "travel/initialize",
                "call": 2,
                "fault": "SlowInitialize",
                "params": {"delay_s": 0.5},
            },
            {"tool": "travel/initialize", "call": 3, "fault": "ServerError"},
            {"tool": "search_flights", "call": 1, "fault": "SlowInitialize"},
        ]
    )
    engine.configure_episode("ep", schedule=schedule)
    held = [engine.initialize("ep", "travel") for _ in range(3)]
    assert held[0] is None and held[2] is None
    assert held[1] is not None
    info, delay_s = held[1]
    assert (info.name, info.draw, delay_s) == ("SlowInitialize", None, 0.5)
    assert _faults(engine, "ep", ["search_flights"]) == [None]
    missed = engine.episode_summary("ep")["schedule_missed"]
    assert [(m["tool"], m["fault"]) for m in missed] == [
        ("travel/initialize", "ServerError"),
        ("travel/search_flights", "SlowInitialize"),
    ]
    assert "schedule it on travel/initialize" in missed[1]["why"]
