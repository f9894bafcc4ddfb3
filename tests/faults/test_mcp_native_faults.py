"""The MCP-native faults in the engine: where each can land, what it answers, and how an
episode's tools/list and its list_changed marks follow the incidents."""

from __future__ import annotations

from typing import Any

from faults_helpers import only

from chaosproxy.faults import CATALOG, CallContext, Decision, FaultEngine, Profile

TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_flights",
        "description": "Search flights.",
        "inputSchema": {
            "type": "object",
            "properties": {"origin": {"type": "string"}, "depart_date": {"type": "string"}},
            "required": ["origin", "depart_date"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"flight_id": {"type": "string"}},
            "required": ["flight_id"],
        },
    },
    {"name": "book_flight", "description": "Book.", "inputSchema": {"type": "object"}},
]


def mcp_call(
    engine: FaultEngine, step: int, session: bool = True, episode: str = "ep", **arguments: Any
) -> Decision:
    return engine.before_call(
        CallContext(
            episode=episode,
            step=step,
            domain="travel",
            tool="search_flights",
            transport="mcp",
            arguments=arguments,
            mcp_session=session,
        )
    )


def mixed(*faults: str) -> FaultEngine:
    weights = dict.fromkeys(faults, 1.0)
    return FaultEngine(
        Profile.model_validate({"name": "mix", "failure_rate": 1.0, "weights": weights}), seed=5
    )


def test_registry_entries() -> None:
    expected = {
        "SessionExpired": ("connection", True, "mcp_session"),
        "SlowInitialize": ("connection", True, "mcp_initialize"),
        "StreamClosed": ("after", True, "mcp"),
        "ToolRemoved": ("episode", True, "mcp"),
        "ToolChanged": ("episode", True, "mcp"),
    }
    for name, (stage, recoverable, needs) in expected.items():
        spec = CATALOG[name]
        assert (spec.stage, spec.recoverable, spec.needs) == (stage, recoverable, needs)


def test_mcp_faults_land_only_where_they_can() -> None:
    engine = mixed("SessionExpired", "StreamClosed", "SlowInitialize", "ServerError")
    rest = {
        engine.before_call(
            CallContext(episode="r", step=s, domain="travel", tool="t", transport="rest")
        ).fault.name  # type: ignore[union-attr]
        for s in range(1, 60)
    }
    stateless = {mcp_call(engine, s, session=False, episode="s").fault.name for s in range(1, 60)}  # type: ignore[union-attr]
    session = {mcp_call(engine, s, episode="m").fault.name for s in range(1, 60)}  # type: ignore[union-attr]
    assert rest == {"ServerError"}
    assert stateless == {"StreamClosed", "ServerError"}
    assert session == {"SessionExpired", "StreamClosed", "ServerError"}


def test_session_expired_answers_404_for_the_session() -> None:
    decision = mcp_call(only("SessionExpired"), 1)
    assert decision.action == "respond" and decision.response is not None
    assert decision.response.status == 404 and decision.response.mcp_effect == "session_expired"
    assert decision.fault is not None and decision.fault.stage == "connection"


def test_slow_initialize_is_drawn_on_initialize_only() -> None:
    engine = only("SlowInitialize", {"delay_s": 0.7})
    assert mcp_call(engine, 1).fault is None
    fault = engine.before_initialize("ep", "travel")
    assert fault is not None and fault.name == "SlowInitialize"
    assert fault.params["delay_s"] == 0.7 and fault.draw is not None
    assert fault.draw.tool == "travel/initialize"
    # a mix: an initialize draws among the faults that land on an initialize, at the
    # profile's rate (issue 25 #8: the pick among all faults held 1 in 4 initializes at
    # rate 1, so SlowInitialize's weight went to the tool faults and it met the agent
    # at weight x rate per connection)
    engine = mixed("SlowInitialize", "ServerError", "StreamClosed", "Unauthorized")
    held = sum(engine.before_initialize(f"ep{n}", "travel") is not None for n in range(400))
    assert held == 400
    profile = Profile.model_validate(
        {"name": "mcp", "failure_rate": 0.2, "weights": {"SlowInitialize": 0.15, "ServerError": 1}}
    )
    engine = FaultEngine(profile, seed=5)
    held = sum(engine.before_initialize(f"ep{n}", "travel") is not None for n in range(2000))
    # Binomial(2000, 0.2): mean 400, σ = sqrt(2000 · 0.2 · 0.8) = 17.9, 5σ = 89
    assert abs(held - 400) <= 89, held


def test_stream_closed_ends_the_stream_after_the_service_ran() -> None:
    engine = only("StreamClosed")
    decision = mcp_call(engine, 1)
    assert decision.action == "forward" and [p.name for p in decision.planned] == ["StreamClosed"]
    effect = engine.after_call(decision, status=200, body={"flight_id": "F1"})
    assert effect.action == "end_stream" and effect.delivered


def test_tool_removed_for_its_window_then_back() -> None:
    engine = only("ToolRemoved", {"min_steps": 2, "max_steps": 2}, first_step_only=True)
    first = mcp_call(engine, 1)
    assert first.response is not None and first.response.mcp_effect == "unknown_tool"
    assert first.response.body["error"]["message"] == "Unknown tool: 'search_flights'"
    marks = engine.tool_list_marks("ep", "travel")
    assert marks == {"ToolRemoved@travel/search_flights#1"}
    assert [t["name"] for t in engine.rewrite_tool_list("ep", "travel", TOOLS)] == ["book_flight"]
    second = mcp_call(engine, 2)
    assert second.fault is not None and second.fault.fresh is False
    assert second.response is not None and second.response.mcp_effect == "unknown_tool"
    third = mcp_call(engine, 3)
    assert third.action == "forward" and third.fault is None
    assert engine.tool_list_marks("ep", "travel") == frozenset()
    assert engine.rewrite_tool_list("ep", "travel", TOOLS) == TOOLS


def test_tool_changed_refuses_old_names_and_maps_new_ones() -> None:
    engine = only("ToolChanged", first_step_only=True)
    first = mcp_call(engine, 1, origin="SFO", depart_date="2026-05-01")
    assert first.response is not None and first.response.status == 422
    assert first.response.mcp_effect == "invalid_arguments"
    fields = {f["field"]: f["problem"] for f in first.response.body["error"]["fields"]}
    assert fields == {
        "from": "required field is missing",
        "departDate": "required field is missing",
        "origin": "unknown field",
        "depart_date": "unknown field",
    }
    listed = {t["name"]: t for t in engine.rewrite_tool_list("ep", "travel", TOOLS)}
    assert listed["search_flights"]["inputSchema"]["required"] == ["from", "departDate"]
    assert listed["search_flights"]["outputSchema"] == TOOLS[0]["outputSchema"]
    again = mcp_call(engine, 2, departDate="2026-05-01", **{"from": "SFO"})
    assert again.action == "forward"
    assert again.arguments == {"depart_date": "2026-05-01", "origin": "SFO"}


def test_drift_marks_follow_the_announce_option() -> None:
    for announce, expected in ((True, 1), (False, 0)):
        engine = only("SchemaDrift", {"ops": ["rename"], "announce": announce})
        mcp_call(engine, 1)
        assert len(engine.tool_list_marks("ep", "travel")) == expected
        listed = {t["name"]: t for t in engine.rewrite_tool_list("ep", "travel", TOOLS)}
        assert "flightId" in listed["search_flights"]["outputSchema"]["properties"]
