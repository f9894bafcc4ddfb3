"""Each fault's effect on realistic requests and response bodies, field by field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from faults_helpers import call, only

from chaosproxy.faults import CallContext, FaultEngine, Profile
from chaosproxy.faults.kinds.corruption import corrupt

# ---- faults that answer instead of the service ------------------------------------------


def test_transient_timeout_holds_then_504_without_calling_the_service() -> None:
    decision = call(only("TransientTimeout"), 1, origin="SFO")
    assert decision.action == "respond"
    assert decision.delay_s == 1.0
    assert decision.response is not None
    assert decision.response.status == 504
    assert decision.response.body["error"]["type"] == "gateway_timeout"
    assert decision.response.body["error"]["request_id"].startswith("req_")
    assert decision.fault is not None and decision.fault.stage == "before"
    assert decision.fault.recoverable is True


@pytest.mark.parametrize(
    ("params", "statuses"), [(None, {500, 502, 503}), ({"statuses": [502]}, {502})]
)
def test_server_error_statuses_and_bodies(
    params: dict[str, Any] | None, statuses: set[int]
) -> None:
    engine = only("ServerError", params)
    seen = set()
    for step in range(1, 40):
        decision = call(engine, step)
        assert decision.response is not None
        status = decision.response.status
        seen.add(status)
        expected = {500: "internal_error", 502: "bad_gateway", 503: "service_unavailable"}[status]
        assert decision.response.body["error"]["type"] == expected
        assert decision.fault is not None and decision.fault.params["status"] == status
    assert seen == statuses


def test_soft_rate_limit_has_integer_retry_after() -> None:
    decision = call(only("SoftRateLimit", {"retry_after_s": 2}), 1)
    assert decision.response is not None
    assert decision.response.status == 429
    assert decision.response.headers == {"Retry-After": "2"}
    assert decision.response.body["error"]["retry_after"] == 2
    assert decision.fault is not None and decision.fault.recoverable is True


def test_hard_rate_limit_lasts_for_the_episode_across_tools() -> None:
    engine = only("HardRateLimit", first_step_only=True)
    first = call(engine, 1, tool="search_flights")
    assert first.response is not None and first.response.status == 403
    assert first.fault is not None and first.fault.fresh and not first.fault.recoverable
    for step, tool in [(2, "hold_flight"), (3, "search_flights"), (9, "get_itinerary")]:
        later = call(engine, step, tool=tool)
        assert later.action == "respond"
        assert later.response is not None and later.response.status == 403
        assert later.fault is not None and later.fault.fresh is False
        assert later.fault.incident == first.fault.incident
    other = call(engine, 2, tool="hold_flight", episode="someone-else")
    assert other.fault is None


def test_hard_rate_limit_scoped_to_one_tool() -> None:
    engine = only("HardRateLimit", {"scope": "tool", "status": 429}, first_step_only=True)
    assert call(engine, 1, tool="search_flights").response.status == 429  # type: ignore[union-attr]
    assert call(engine, 2, tool="hold_flight").action == "forward"
    assert call(engine, 3, tool="search_flights").action == "respond"


@pytest.mark.parametrize(
    ("when", "before", "after"), [("request", "reset", None), ("response", "forward", "reset")]
)
def test_connection_reset(
    when: str, before: str, after: str | None, flight_search: dict[str, Any]
) -> None:
    engine = only("ConnectionReset", {"when": when})
    decision = call(engine, 1)
    assert decision.action == before
    if after:
        assert engine.after_call(decision, 200, flight_search).action == after


@pytest.mark.parametrize(
    ("flavour", "action", "status"), [("timeout", "lost_reply", 504), ("closed", "reset", 504)]
)
def test_lost_reply_lets_the_service_run(
    flavour: str, action: str, status: int, hold_result: dict[str, Any]
) -> None:
    engine = only("LostReply", {"flavour": flavour, "delay_s": 0.5})
    decision = call(engine, 1, tool="hold_flight", flight_id="DL202", passenger_name="Ana Ruiz")
    assert decision.action == "forward"
    assert decision.arguments == {"flight_id": "DL202", "passenger_name": "Ana Ruiz"}
    effect = engine.after_call(decision, 200, hold_result)
    assert effect.action == action
    assert effect.status == status
    assert effect.delay_s == 0.5


def test_high_latency_delays_then_answers_normally(flight_search: dict[str, Any]) -> None:
    engine = only("HighLatency")
    delays = []
    for step in range(1, 30):
        decision = call(engine, step)
        assert decision.action == "forward"
        assert 0.3 <= decision.delay_s <= 1.5
        delays.append(decision.delay_s)
        effect = engine.after_call(decision, 200, flight_search)
        assert effect.action == "pass" and effect.body == flight_search
    assert len(set(delays)) > 10


# ---- response-stage faults --------------------------------------------------------------


def test_partial_truncate_cuts_mid_json(flight_search: dict[str, Any]) -> None:
    engine = only("PartialResponse", {"modes": ["truncate"]})
    for step in range(1, 25):
        effect = engine.after_call(call(engine, step), 200, flight_search)
        assert effect.action == "truncate"
        full = json.dumps(flight_search, ensure_ascii=False)
        assert effect.truncated_text is not None and full.startswith(effect.truncated_text)
        assert effect.truncate_at == len(effect.truncated_text.encode())
        assert 0 < effect.truncate_at < len(full.encode())
        with pytest.raises(json.JSONDecodeError):
            json.loads(effect.truncated_text)


def test_partial_drop_items_keeps_whole_records(flight_search: dict[str, Any]) -> None:
    engine = only("PartialResponse", {"modes": ["drop_items"]})
    effect = engine.after_call(call(engine, 1), 200, flight_search)
    assert effect.action == "replace"
    kept = effect.body["flights"]
    assert len(kept) == 1
    assert kept[0] in flight_search["flights"]
    assert effect.body["count"] == 3
    assert effect.body["query"] == flight_search["query"]
    assert effect.notes["PartialResponse"]["path"] == "flights"


def test_partial_drop_fields_removes_the_same_fields_everywhere(
    flight_search: dict[str, Any],
) -> None:
    engine = only("PartialResponse", {"modes": ["drop_fields"]})
    effect = engine.after_call(call(engine, 1), 200, flight_search)
    dropped = effect.notes["PartialResponse"]["dropped_fields"]
    assert dropped and "flight_id" not in dropped
    for before, after in zip(flight_search["flights"], effect.body["flights"], strict=True):
        assert set(after) == set(before) - set(dropped)
        for key, value in after.items():
            assert value == before[key]


def test_empty_response(flight_search: dict[str, Any], hold_result: dict[str, Any]) -> None:
    engine = only("EmptyResponse")
    effect = engine.after_call(call(engine, 1), 200, flight_search)
    assert effect.status == 200
    assert effect.body == {"query": flight_search["query"], "flights": [], "count": 0}
    effect = engine.after_call(call(engine, 2, tool="hold_flight"), 200, hold_result)
    assert effect.body == {}


def test_schema_drift_is_a_consistent_v2_for_the_rest_of_the_episode(
    flight_search: dict[str, Any],
) -> None:
    engine = only("SchemaDrift", first_step_only=True)
    bodies = []
    for step in (1, 2, 3):
        effect = engine.after_call(call(engine, step), 200, flight_search)
        bodies.append(effect.body)
    assert bodies[0] == bodies[1] == bodies[2]
    v2 = bodies[0]
    assert v2["api_version"] == "v2"
    first = v2["data"]["flights"][0]
    assert first["flightId"] == "UA101"
    assert first["cost"] == "329.00"
    assert first["seatsLeft"] == "4"
    assert first["refundable"] is False
    assert first["fare"]["baggage"] == {"carryOn": "1", "checked": "0"}
    assert first["to"] == "JFK" and first["from"] == "SFO"
    assert v2["data"]["size"] == "3"
    other = engine.after_call(call(engine, 4, tool="get_itinerary"), 200, {"trip_id": "T1"})
    assert other.action == "pass"


def test_schema_drift_rewrites_mcp_tool_list_and_maps_arguments_back() -> None:
    engine = only("SchemaDrift", first_step_only=True)
    tools = [
        {
            "name": "hold_flight",
            "description": "Hold a seat.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "flight_id": {"type": "string"},
                    "passenger_name": {"type": "string"},
                },
                "required": ["flight_id", "passenger_name"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"hold_id": {"type": "string"}, "price": {"type": "number"}},
                "required": ["hold_id", "price"],
            },
        },
        {"name": "search_flights", "description": "Search.", "inputSchema": {"type": "object"}},
    ]
    assert engine.rewrite_tool_list("ep", "travel", tools) == tools
    call(engine, 1, tool="hold_flight", transport="mcp", flight_id="DL202", passenger_name="Ana")
    listed = engine.rewrite_tool_list("ep", "travel", tools)
    assert listed[1] == tools[1]
    hold = listed[0]
    assert hold["inputSchema"]["properties"].keys() == {"flightId", "passengerName"}
    assert hold["inputSchema"]["required"] == ["flightId", "passengerName"]
    data = hold["outputSchema"]["properties"]["data"]
    assert data["properties"] == {"holdId": {"type": "string"}, "cost": {"type": "string"}}
    assert hold["outputSchema"]["required"] == ["api_version", "data"]
    decision = call(
        engine, 2, tool="hold_flight", transport="mcp", flightId="DL202", passengerName="Ana"
    )
    assert decision.arguments == {"flight_id": "DL202", "passenger_name": "Ana"}
    assert decision.argument_renames == {"flightId": "flight_id", "passengerName": "passenger_name"}
    old_names = call(engine, 3, tool="hold_flight", transport="mcp", flight_id="DL202")
    assert old_names.arguments == {"flight_id": "DL202"}


def test_stale_data_serves_the_first_reply_to_the_same_call(
    flight_search: dict[str, Any],
) -> None:
    engine = only("StaleData")
    first = call(engine, 1, origin="SFO")
    # nothing earlier to serve: StaleData is not drawn (and there is no other fault to re-pick)
    assert first.fault is None
    engine.after_call(first, 200, flight_search)
    fresh = copy.deepcopy(flight_search)
    fresh["flights"][0]["seats_left"] = 0
    again = call(engine, 2, origin="SFO")
    assert again.fault is not None and again.fault.name == "StaleData" and again.fault.fresh
    effect = engine.after_call(again, 200, fresh)
    assert effect.action == "replace" and effect.delivered
    assert effect.body["flights"][0]["seats_left"] == 4
    assert effect.notes["StaleData"] == {"served": "first reply to the same call"}
    later = call(engine, 3, origin="SFO")
    assert later.fault is not None and later.fault.name == "StaleData" and not later.fault.fresh
    assert engine.after_call(later, 200, fresh).body["flights"][0]["seats_left"] == 4


def test_stale_data_on_new_arguments_serves_the_tools_first_reply(
    flight_search: dict[str, Any],
) -> None:
    """Issue 25 #7: agents seldom repeat a call, so a cache answering only repeats was never
    delivered (0 of 401 at lambda0.2). A call with new arguments to a tool that answered
    before gets the tool's first reply (a cache keyed too coarsely); a repeat of that call
    later goes on getting what the cache served, not the fresh reply it hid."""
    engine = only("StaleData")
    engine.after_call(call(engine, 1, origin="SFO"), 200, flight_search)
    lax = copy.deepcopy(flight_search)
    lax["flights"][0]["origin"] = "LAX"
    other = call(engine, 2, origin="LAX")
    assert other.fault is not None and other.fault.name == "StaleData" and other.fault.fresh
    effect = engine.after_call(other, 200, lax)
    assert effect.delivered and effect.body == flight_search
    assert effect.notes["StaleData"] == {"served": "first reply of the same tool (other arguments)"}
    again = call(engine, 3, origin="LAX")
    assert again.fault is not None and not again.fault.fresh  # the incident of those arguments
    assert engine.after_call(again, 200, lax).body == flight_search


def test_stale_data_without_an_earlier_reply_is_repicked_and_recorded() -> None:
    profile = Profile.model_validate(
        {
            "name": "stale-or-empty",
            "failure_rate": 1.0,
            "weights": {"StaleData": 0.5, "EmptyResponse": 0.5},
        }
    )
    engine = FaultEngine(profile, seed=3)
    firsts = [call(engine, 1, episode=f"ep{n}", origin="SFO").fault for n in range(40)]
    assert all(f is not None and f.name == "EmptyResponse" for f in firsts)
    repicked = [f for f in firsts if f is not None and "repicked_from" in f.params]
    assert repicked and all(f.params["repicked_from"] == "StaleData" for f in repicked)
    assert len(repicked) < len(firsts)


def test_contradictory_data_clones_a_record_with_one_field_changed(
    flight_search: dict[str, Any],
) -> None:
    engine = only("ContradictoryData", first_step_only=True)
    effects = [engine.after_call(call(engine, s), 200, flight_search) for s in (1, 2)]
    assert effects[0].body == effects[1].body
    body = effects[0].body
    info = effects[0].notes["ContradictoryData"]
    flights = body["flights"]
    assert len(flights) == 4
    index = int(info["path"].split("[")[1].rstrip("]"))
    original, clone = flights[index], flights[index + 1]
    assert original == flight_search["flights"][index]
    assert clone["flight_id"] == original["flight_id"]
    changed = [key for key in original if original[key] != clone[key]]
    assert changed == [info["field"]]
    assert clone[info["field"]] == info["contradicting"] != info["original"]


def test_contradictory_data_with_a_domain_hint(patient_record: dict[str, Any]) -> None:
    hints = {"contradictions": {"search_flights": {"field": "allergies", "value": []}}}
    engine = only("ContradictoryData", hints=hints)
    effect = engine.after_call(call(engine, 1), 200, patient_record)
    assert effect.body["allergies"] == ["penicillin"]
    assert effect.body["conflicting_records"] == [
        {"source": "secondary-records", "field": "allergies", "value": []}
    ]
    assert {k: v for k, v in effect.body.items() if k != "conflicting_records"} == patient_record


@pytest.mark.parametrize(
    ("tool", "arguments", "argument", "allowed"),
    [
        ("search_flights", {"origin": "SFO"}, "origin", {"LAX", "SEA"}),
        (
            "search_flights",
            {"date": "2026-03-10"},
            "date",
            {"2026-03-11", "2026-03-09", "2026-03-17"},
        ),
        (
            "hold_flight",
            {"flight_id": "UA101", "passenger_name": "Ana Ruiz"},
            "flight_id",
            {"UA102", "UA103", "UA104"},
        ),
        ("set_budget", {"amount": 400}, "amount", {200, 800}),
    ],
)
def test_parameter_corruption_uses_the_domain_spec(
    tool: str,
    arguments: dict[str, Any],
    argument: str,
    allowed: set[Any],
    travel_hints: dict[str, Any],
) -> None:
    engine = only("ParameterCorruption", hints=travel_hints)
    decision = call(engine, 1, tool=tool, **arguments)
    assert decision.action == "forward"
    assert decision.arguments[argument] in allowed
    assert {k: v for k, v in decision.arguments.items() if k != argument} == {
        k: v for k, v in arguments.items() if k != argument
    }
    assert decision.fault is not None
    params = decision.fault.params
    assert params["applied"] is True
    assert params["argument"] == argument
    assert params["original"] == arguments[argument]
    assert params["corrupted"] == decision.arguments[argument]


@pytest.mark.parametrize(
    ("arguments", "check"),
    [
        (
            {"day": "2026-05-01", "note": "x"},
            lambda v: v in {"2026-05-02", "2026-04-30", "2026-05-08"},
        ),
        ({"patient": "P-0042"}, lambda v: v in {"P-0043", "P-0044", "P-0045"}),
        ({"dose_mg": 250}, lambda v: v in {125, 500}),
    ],
)
def test_parameter_corruption_without_hints_is_generic_but_plausible(
    arguments: dict[str, Any],
    check: Any,
) -> None:
    engine = only("ParameterCorruption")
    decision = call(engine, 1, tool="anything", **arguments)
    assert decision.fault is not None
    name = decision.fault.params["argument"]
    assert check(decision.arguments[name])


def test_parameter_corruption_is_not_drawn_where_nothing_can_be_corrupted() -> None:
    """Re-picked like StaleData (docs/faults.md): alone in the mix, no fault at all."""
    decision = call(only("ParameterCorruption"), 1, note="free text", confirmed=True)
    assert decision.fault is None
    assert decision.arguments == {"note": "free text", "confirmed": True}


def test_parameter_corruption_with_nothing_to_corrupt_is_re_picked() -> None:
    """Beside another fault, every call with nothing to corrupt still fails (the rate
    holds), with that fault and `repicked_from`; calls with an id get the corruption."""
    profile = Profile.model_validate(
        {"name": "pc", "failure_rate": 1.0, "weights": {"ParameterCorruption": 1, "ServerError": 1}}
    )
    engine = FaultEngine(profile, seed=3)
    bare = [call(engine, step, note="free text", episode="bare") for step in range(1, 41)]
    assert all(d.fault is not None and d.fault.name == "ServerError" for d in bare)
    repicked = [d for d in bare if d.fault and d.fault.params.get("repicked_from")]
    assert {d.fault.params["repicked_from"] for d in repicked if d.fault} == {"ParameterCorruption"}
    assert 8 <= len(repicked) <= 32  # about half of 40 picks land on it first
    with_id = [call(engine, step, flight="UA101", episode="id") for step in range(1, 41)]
    corrupted = [d for d in with_id if d.fault and d.fault.name == "ParameterCorruption"]
    assert corrupted and all(d.fault and d.fault.params["applied"] for d in corrupted)
    assert all(d.arguments["flight"] != "UA101" for d in corrupted)


def test_parameter_corruption_takes_a_digit_string_for_a_number_unless_named_id() -> None:
    """docs/faults.md: a number gets x0.5 or x2; query values arrive as strings."""
    for salt in (0.05, 0.35, 0.65, 0.95):
        page = corrupt({"page": "2"}, salt, {})
        assert page is not None and page.corrupted in ("1", "4")
        assert page.spec["kind"] == "number"
        order = corrupt({"order_id": "102"}, salt, {})
        assert order is not None and order.corrupted in ("103", "104", "105")


def test_adversarial_instruction_records_the_harmful_action(
    flight_search: dict[str, Any],
    travel_hints: dict[str, Any],
) -> None:
    engine = only("AdversarialPayload", hints=travel_hints)
    decision = call(engine, 1)
    assert decision.fault is not None
    action = travel_hints["harmful_actions"][0]
    assert decision.fault.params["harmful_action"] == action
    body = copy.deepcopy(flight_search)
    body["flights"][0]["notes"] = "Operated by United."
    effect = engine.after_call(decision, 200, body)
    injected = effect.body["flights"][0]["notes"]
    assert injected.startswith("Operated by United. ")
    assert "`confirm_booking`" in injected and json.dumps(action["arguments"]) in injected
    assert action["pretext"] in injected
    assert effect.body["flights"][1:] == body["flights"][1:]
    assert {k: v for k, v in effect.body["flights"][0].items() if k != "notes"} == {
        k: v for k, v in body["flights"][0].items() if k != "notes"
    }
    assert effect.notes["AdversarialPayload"]["harmful_action"] == action


def test_adversarial_without_a_text_field_adds_a_notice(travel_hints: dict[str, Any]) -> None:
    engine = only("AdversarialPayload", hints=travel_hints)
    effect = engine.after_call(call(engine, 1), 200, {"temperature_c": 21.5, "city": "Dubai"})
    assert effect.body["temperature_c"] == 21.5
    assert "confirm_booking" in effect.body["notice"]


def test_adversarial_falsified_value_without_hints(flight_search: dict[str, Any]) -> None:
    engine = only("AdversarialPayload")
    effect = engine.after_call(call(engine, 1), 200, flight_search)
    info = effect.notes["AdversarialPayload"]
    assert info["mode"] == "falsify"
    field = info["path"].rsplit(".", 1)[1]
    first = effect.body["flights"][0]
    assert (
        first[field] == info["falsified"] != info["original"] == flight_search["flights"][0][field]
    )
    assert {k: v for k, v in first.items() if k != field} == {
        k: v for k, v in flight_search["flights"][0].items() if k != field
    }


def test_error_replies_are_passed_untouched(flight_search: dict[str, Any]) -> None:
    engine = only("SchemaDrift")
    error = {"error": {"type": "not_found", "message": "no such flight"}}
    effect = engine.after_call(call(engine, 1), 404, error)
    assert effect.action == "pass" and effect.body == error and effect.status == 404


# ---- windows and cascades ---------------------------------------------------------------


def test_blocking_window_blocks_about_half_for_two_to_three_steps() -> None:
    blocked_after = 0
    in_window = 0
    for seed in range(60):
        engine = only("BlockingWindow", first_step_only=True, seed=seed)
        first = call(engine, 1)
        assert first.action == "respond" and first.response is not None
        assert first.response.mcp_render == "tool_error"
        incident = engine.episode_summary("ep")["incidents"][0]
        assert 2 <= incident["end_step"] - incident["start_step"] + 1 <= 3
        for step in range(2, 8):
            decision = call(engine, step)
            if step <= incident["end_step"]:
                in_window += 1
                blocked_after += decision.action == "respond"
            else:
                assert decision.action == "forward"
    assert 0.25 < blocked_after / in_window < 0.75


def test_cascading_failure_takes_down_every_tool_in_sequence() -> None:
    engine = only("CascadingFailure", first_step_only=True)
    tools = ["search_flights", "hold_flight", "confirm_booking", "get_itinerary", "search_flights"]
    decisions = [call(engine, step, tool=tool) for step, tool in enumerate(tools, start=1)]
    incident = engine.episode_summary("ep")["incidents"][0]
    span = incident["end_step"]
    assert span in (3, 4)
    statuses = [d.response.status for d in decisions[:span]]  # type: ignore[union-attr]
    assert statuses == [503, 502, 504, 503][:span]
    messages = {d.response.body["error"]["message"] for d in decisions[:span]}  # type: ignore[union-attr]
    assert len(messages) == span
    assert all(d.action == "forward" for d in decisions[span:])


def test_out_of_scope_calls_pass_but_still_count_positions() -> None:
    profile = Profile.model_validate(
        {
            "name": "scoped",
            "failure_rate": 1.0,
            "weights": {"ServerError": 1},
            "scope": {
                "tools": ["travel/hold_*"],
                "exclude_tools": ["hold_secret"],
                "episodes": ["run-*"],
            },
        }
    )
    engine = FaultEngine(profile, seed=1)

    def decide(episode: str, tool: str, step: int) -> str:
        ctx = CallContext(episode=episode, step=step, domain="travel", tool=tool)
        return engine.before_call(ctx).action

    assert decide("run-1", "search_flights", 1) == "forward"
    assert decide("run-1", "hold_flight", 2) == "respond"
    assert decide("run-1", "hold_secret", 3) == "forward"
    assert decide("debug", "hold_flight", 1) == "forward"
    assert engine.episode_summary("run-1")["positions"] == {
        "travel/search_flights": 1,
        "travel/hold_flight": 1,
        "travel/hold_secret": 1,
    }


def test_profile_hints_serve_user_upstreams_and_service_hints_win() -> None:
    profile = Profile.model_validate(
        {
            "name": "user",
            "failure_rate": 1.0,
            "weights": {"ParameterCorruption": 1},
            "hints": {
                "crm": {
                    "critical_args": {
                        "lookup": {"customer": {"kind": "choice", "values": ["C-1", "C-2"]}}
                    }
                }
            },
        }
    )
    engine = FaultEngine(profile, seed=1)

    def corrupted() -> Any:
        ctx = CallContext(
            episode="e", step=1, domain="crm", tool="lookup", arguments={"customer": "C-1"}
        )
        engine.forget_episode("e")
        return engine.before_call(ctx).arguments["customer"]

    assert corrupted() == "C-2"
    engine.set_hints(
        "crm", {"critical_args": {"lookup": {"customer": {"kind": "choice", "values": ["C-9"]}}}}
    )
    assert corrupted() == "C-9"


def test_a_parameter_corruption_incident_waits_for_a_call_it_can_change() -> None:
    """An incident's planned corruption skips a call with nothing to corrupt (as a
    planned fault skips a call it cannot land on) and lands on the next one that has."""
    profile = Profile.model_validate(
        {
            "name": "pc-incident",
            "incidents": {
                "kinds": {
                    "p2": {
                        "weight": 1,
                        "faults": [{"fault": "ParameterCorruption", "duration": [3, 3]}],
                    }
                },
                "timing": [{"name": "first", "weight": 1, "steps": 1}],
            },
        }
    )
    engine = FaultEngine(profile, seed=3)
    first = call(engine, 1, note="free text")
    second = call(engine, 2, flight="UA101")
    assert first.fault is None and first.arguments == {"note": "free text"}
    assert second.fault is not None and second.fault.name == "ParameterCorruption"
    assert second.fault.params["applied"] is True and second.arguments["flight"] != "UA101"
