"""Every fault's decisions and effects, recorded for fixed seeds: a refactor must not move a byte.

Scenarios cover each registered fault alone (REST and MCP, tool and model calls), a mix of
all tool faults, and an incident plan over every incident-able fault. Each record is the
decision, the response effect and the MCP tool list after the call, as JSON; the golden
file keeps a digest per record. A deliberate behaviour change regenerates it:
`CHAOSPROXY_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/faults/test_fault_golden.py`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from fault_bodies import FLIGHT_SEARCH, HOLD_RESULT, PATIENT_RECORD, TRAVEL_HINTS

from chaosproxy.faults import CallContext, FaultEngine, Profile
from chaosproxy.faults.catalog import CATALOG

GOLDEN = Path(__file__).parent / "golden" / "decisions.json"

HINTS: dict[str, Any] = {
    **copy.deepcopy(TRAVEL_HINTS),
    "contradictions": {"get_patient": {"field": "active", "value": False}},
}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_flights",
        "inputSchema": {
            "type": "object",
            "properties": {"origin": {"type": "string"}, "flight_date": {"type": "string"}},
        },
        "outputSchema": {
            "type": "object",
            "properties": {"flight_count": {"type": "integer"}, "price": {"type": "number"}},
        },
    },
    {"name": "hold_flight", "inputSchema": {"type": "object", "properties": {}}},
]
# (tool, arguments, reply status, reply body): repeats give StaleData kept replies
TOOL_CALLS: list[tuple[str, dict[str, Any], int, Any]] = [
    ("search_flights", {"origin": "SFO", "date": "2026-03-10"}, 200, FLIGHT_SEARCH),
    ("hold_flight", {"flight_id": "UA101"}, 200, HOLD_RESULT),
    ("search_flights", {"origin": "SFO", "date": "2026-03-10"}, 200, FLIGHT_SEARCH),
    ("get_patient", {"patient_id": "P-0042"}, 200, PATIENT_RECORD),
    ("search_flights", {"origin": "LAX", "date": "2026-03-11"}, 500, {"error": "boom"}),
    ("hold_flight", {"flight_id": "UA101"}, 200, HOLD_RESULT),
    ("get_patient", {"patient_id": "P-0042"}, 200, PATIENT_RECORD),
    ("search_flights", {"origin": "SFO", "date": "2026-03-10"}, 200, FLIGHT_SEARCH),
    ("hold_flight", {"flight_id": "DL202"}, 200, None),
    ("search_flights", {"origin": "SFO", "date": "2026-03-10"}, 200, FLIGHT_SEARCH),
    ("get_patient", {"patient_id": "P-0042"}, 200, PATIENT_RECORD),
    ("hold_flight", {"flight_id": "UA101"}, 200, HOLD_RESULT),
]
CHAT: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "scripted",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "search_flights",
                            "arguments": '{"origin": "SFO", "date": "2026-03-10"}',
                        },
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
}
MODEL_CALLS: list[tuple[int, Any]] = [(200, CHAT), (200, None), (503, {"error": "x"})] * 3
# non-default parameters that take another branch of a fault's effect
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("ConnectionReset", {"when": "response"}),
    ("LostReply", {"flavour": "closed"}),
    ("HardRateLimit", {"status": 429, "scope": "tool"}),
    ("AdversarialPayload", {"mode": "falsify"}),
    ("AdversarialPayload", {"mode": "instruction"}),
    ("ParameterCorruption", {"arguments": ["flight_id"]}),
    ("PartialResponse", {"modes": ["drop_fields"], "keep_fraction": 0.3}),
    ("SchemaDrift", {"ops": ["rename"], "input": False}),
    ("BlockingWindow", {"p_block": 0.9, "min_steps": 3, "max_steps": 5}),
    ("CombinedFailure", {"p_fail": 0.2, "statuses": [502, 503]}),
    ("EmptyChoice", {"modes": ["no_choices"]}),
    ("StreamCut", {"min_events": 0, "max_events": 5, "keep_fraction": 0.2}),
]
# the tool faults of the mixed and planned scenarios, fixed: a fault added later gets rows
# of its own and leaves these as they were
MIX: tuple[str, ...] = (
    "TransientTimeout",
    "LostReply",
    "HighLatency",
    "ConnectionReset",
    "ServerError",
    "SoftRateLimit",
    "Unauthorized",
    "HardRateLimit",
    "PartialResponse",
    "EmptyResponse",
    "SchemaDrift",
    "StaleData",
    "ContradictoryData",
    "ParameterCorruption",
    "AdversarialPayload",
    "BlockingWindow",
    "CascadingFailure",
    "CombinedFailure",
)
PLAN: dict[str, Any] = {
    "kinds": {
        "every": {
            "weight": 1,
            "faults": [
                {"fault": name, "duration": [1, 4] if i % 3 else "persistent"}
                for i, name in enumerate(MIX)
            ],
        }
    },
    "timing": [{"name": "early", "weight": 1, "steps": [1, 4]}],
}


def _run_tool_episode(engine: FaultEngine, episode: str, transport: str) -> list[dict[str, Any]]:
    records = []
    held = engine.before_initialize(episode, "travel") if transport == "mcp" else None
    if held is not None:
        records.append({"initialize": held.model_dump(mode="json")})
    for step, (tool, arguments, status, body) in enumerate(TOOL_CALLS, start=1):
        ctx = CallContext(
            episode=episode,
            step=step,
            domain="travel",
            tool=tool,
            transport=transport,  # type: ignore[arg-type]
            arguments=copy.deepcopy(arguments),
            mcp_session=transport == "mcp",
        )
        decision = engine.before_call(ctx)
        record: dict[str, Any] = {"decision": decision.model_dump(mode="json")}
        if decision.action == "forward":
            effect = engine.after_call(decision, status, copy.deepcopy(body))
            record["effect"] = effect.model_dump(mode="json")
        if transport == "mcp":
            record["tools"] = engine.rewrite_tool_list(episode, "travel", copy.deepcopy(TOOLS))
        records.append(record)
    records.append({"summary": engine.episode_summary(episode)})
    return records


def _run_model_episode(engine: FaultEngine, episode: str) -> list[dict[str, Any]]:
    records = []
    for step, (status, body) in enumerate(MODEL_CALLS, start=1):
        ctx = CallContext(
            episode=episode, step=step, domain="llm", tool="chat.completions", target="model"
        )
        decision = engine.before_call(ctx)
        record: dict[str, Any] = {"decision": decision.model_dump(mode="json")}
        if decision.action == "forward":
            effect = engine.after_call(decision, status, copy.deepcopy(body))
            record["effect"] = effect.model_dump(mode="json")
        records.append(record)
    return records


def scenarios() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for name, spec in CATALOG.items():
        profile = Profile.model_validate(
            {"name": f"only-{name}", "failure_rate": 0.7, "weights": {name: 1}}
        )
        for seed in (1, 2):
            engine = FaultEngine(profile, seed=seed, hints={"travel": HINTS})
            if spec.target == "model":
                out[f"{name}/model/{seed}"] = _run_model_episode(engine, "ep")
                continue
            for transport in ("rest", "mcp"):
                out[f"{name}/{transport}/{seed}"] = _run_tool_episode(engine, transport, transport)
    for index, (name, params) in enumerate(VARIANTS):
        profile = Profile.model_validate(
            {
                "name": f"variant-{name}",
                "failure_rate": 0.6,
                "weights": {name: 1},
                "params": {name: params},
            }
        )
        engine = FaultEngine(profile, seed=index, hints={"travel": HINTS})
        if CATALOG[name].target == "model":
            out[f"variant/{index}/{name}/model"] = _run_model_episode(engine, "ep")
            continue
        for transport in ("rest", "mcp"):
            out[f"variant/{index}/{name}/{transport}"] = _run_tool_episode(
                engine, transport, transport
            )
    weights = {name: 1 + i % 3 for i, name in enumerate(MIX)}
    mixed = Profile.model_validate({"name": "mixed", "failure_rate": 0.5, "weights": weights})
    engine = FaultEngine(mixed, seed=11, hints={"travel": HINTS})
    for episode in ("a", "b", "c", "d"):
        for transport in ("rest", "mcp"):
            out[f"mixed/{episode}/{transport}"] = _run_tool_episode(
                engine, f"{episode}-{transport}", transport
            )
    planned = Profile.model_validate({"name": "plan", "incidents": PLAN})
    engine = FaultEngine(planned, seed=5, hints={"travel": HINTS})
    for index in range(24):
        transport = "mcp" if index % 2 else "rest"
        out[f"plan/{index}"] = _run_tool_episode(engine, f"plan-{index}", transport)
    return out


def digest(records: list[dict[str, Any]]) -> str:
    text = json.dumps(records, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def faults_seen(records: list[dict[str, Any]]) -> list[str | None]:
    return [
        (record["decision"]["fault"] or {}).get("name")
        if "decision" in record
        else record["initialize"]["name"]
        if "initialize" in record
        else None
        for record in records
    ]


def test_decisions_and_effects_match_the_golden_record() -> None:
    current = {label: records for label, records in scenarios().items()}
    table = {
        label: {"digest": digest(records), "faults": faults_seen(records)}
        for label, records in current.items()
    }
    if os.environ.get("CHAOSPROXY_REGEN_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    new = sorted(set(table) - set(golden))
    assert not new, f"scenarios not in the record (a new fault? regenerate, see above): {new}"
    assert sorted(table) == sorted(golden)
    for label, entry in table.items():
        assert entry["faults"] == golden[label]["faults"], label
        assert entry["digest"] == golden[label]["digest"], (
            label,
            json.dumps(current[label], indent=1, default=str)[:4000],
        )


def test_the_golden_scenarios_reach_every_fault() -> None:
    """The record is only worth something if every fault shaped some call in it."""
    seen = {name for records in scenarios().values() for name in faults_seen(records) if name}
    missing = set(CATALOG) - seen
    assert not missing, f"no scenario draws {missing}: add one (e.g. a VARIANTS entry)"
