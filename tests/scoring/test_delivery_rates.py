"""`chaosproxy score` prints, with every run, the realised fresh fault rate, the share of
calls affected and each fault's delivered share against the profile's weight (issue 25 #9),
worked by hand on a small constructed run."""

from __future__ import annotations

from typing import Any

from chaosproxy.records import FaultRecord
from chaosproxy.scoring.delivery import rates_lines


def carried(run: Any) -> None:
    """Mark the last call's fault as a running incident applied again (`fresh: false`)."""
    last = run.calls[-1]
    fault = last.fault
    last.fault = FaultRecord.model_validate(
        {**fault.model_dump(), "incident": f"{fault.name}@t/search#2", "fresh": False}
    )


def test_rates_line_worked_by_hand(run: Any, score: Any) -> None:
    run.profiles["lambda0.2"] = {
        "failure_rate": 0.25,
        "weights": {"TransientTimeout": 1.0, "SchemaDrift": 1.0},
    }
    # episode 1, 8 calls: a timeout (fresh), a drift (fresh) carried by the next call
    first = run.episode(success=True)
    first.call(status=504, outcome="timeout", fault="TransientTimeout")
    first.call(fault="SchemaDrift", recoverable=False)
    first.call(fault="SchemaDrift", recoverable=False)
    carried(run)
    first.call().call().call().call().call()
    # episode 2, 4 calls: one more timeout
    second = run.episode(success=True)
    second.call().call(status=504, outcome="timeout", fault="TransientTimeout").call().call()
    (line,) = rates_lines(score(run.build()).results)
    # 12 tool calls. Fresh: 3 (2 timeouts, 1 drift) -> 0.250, Wilson 95 %:
    #   centre (0.25 + 1.96²/24) / (1 + 1.96²/12) = 0.41007 / 1.32013 = 0.3106,
    #   half 1.96·sqrt(0.25·0.75/12 + 1.96²/576) / 1.32013 = 0.2217 -> [0.089, 0.532].
    # Affected: 4 (the carried drift too) -> 0.333, Wilson [0.138, 0.609].
    # Mix over the 3 fresh: timeout 2/3 = 0.667 vs weight 0.5, σ = sqrt(0.25/3) = 0.2887,
    #   (0.667 - 0.5) / 0.2887 = +0.6σ; drift 1/3 = 0.333, -0.6σ.
    assert line == (
        "retry · lambda0.2: fresh fault rate 0.250 [0.089, 0.532] (3 of 12 tool calls), "
        "profile 0.250; affected 0.333 [0.138, 0.609] (4 of 12 tool calls); "
        "delivered mix vs profile weights: SchemaDrift 0.333 vs 0.500 (-0.6σ), "
        "TransientTimeout 0.667 vs 0.500 (+0.6σ)"
    )


def test_score_prints_the_rates_with_every_run(run: Any, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from chaosproxy.cli import main

    run.profiles["lambda0.2"] = {"failure_rate": 0.5, "weights": {"TransientTimeout": 1.0}}
    run.episode(success=True).call(status=504, outcome="timeout", fault="TransientTimeout").call()
    path = run.build()
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == 0, result.output
    assert "Fault rates and mix" in result.output
    assert "fresh fault rate 0.500" in result.output and "affected 0.500" in result.output
    assert "TransientTimeout 1.000 vs 1.000" in result.output


def initialize(run: Any, episode: Any, fault: str | None = None) -> None:
    """An MCP `initialize` as the proxy logs it: a protocol line, its fault if one held it."""
    from chaosproxy.records import CallRecord

    episode.ts += 1.0
    run.calls.append(
        CallRecord(
            ts=episode.ts,
            run_seed=7,
            episode=episode.record.episode,
            episode_key=episode.record.episode_key,
            step=None,
            domain=episode.record.domain,
            tool=None,
            transport="mcp",
            kind="protocol",
            method="POST",
            path=f"/{episode.record.domain}/mcp",
            rpc_method="initialize",
            fault=FaultRecord(name=fault, stage="connection", recoverable=True) if fault else None,
            fault_delivered=fault is not None,
            status=200,
            latency_ms=0.0,
        )
    )


def test_connection_stage_faults_are_counted_apart(run: Any, score: Any, group: Any) -> None:
    """Issue 25 #8: a slowed initialize (logged on its protocol line) appeared in no table,
    and SlowInitialize's weight inflated the tool faults' nominal shares."""
    run.profiles["lambda0.2"] = {
        "failure_rate": 0.2,
        "weights": {"SessionExpired": 0.85, "SlowInitialize": 0.15},
    }
    episode = run.episode(success=True)
    initialize(run, episode, "SlowInitialize")
    episode.call(status=404, fault="SessionExpired").call()
    initialize(run, episode)
    episode.call().call()
    results = score(run.build()).results
    d = group(results).delivery
    assert d.tool_calls == 4 and d.delivered == 1
    # tool faults' nominal shares over tool faults only: 0.2 × 0.85 / 0.85
    assert [(k.fault, k.nominal_rate) for k in d.by_fault] == [("SessionExpired", 0.2)]
    c = d.connection
    assert c is not None and (c.connections, c.drawn, c.delivered) == (2, 1, 1)
    assert c.nominal_rate == 0.2 and c.realised_rate.value == 0.5
    # Wilson 1/2: centre (0.5 + 0.9604) / 2.9208 = 0.5, half 1.96·sqrt(0.125 + 0.2401)
    # / 2.9208 = 0.4055 -> [0.095, 0.905]
    (line,) = rates_lines(results)
    assert line.endswith(
        "connection-stage fault rate 0.500 [0.095, 0.905] (1 of 2 connections), profile 0.200 "
        "(delivered/drawn: SlowInitialize 1/1)"
    )


def test_a_step_scoped_profile_says_per_episode_whether_its_fault_landed(
    run: Any, score: Any, group: Any
) -> None:
    """Issue 25 #11: agentprop-p2 printed nominal 1.000 beside a realised 0.38 of calls (it
    corrupts the first call only), and an episode whose first call had nothing to corrupt
    was invisible. The nominal is now the profile's per-call promise (rate × calls in scope
    / calls) and the line says in how many episodes the corruption landed."""
    run.profiles["agentprop-p2"] = {
        "failure_rate": 1.0,
        "weights": {"ParameterCorruption": 1.0},
        "scope": {"steps": {"from_step": 1, "to_step": 1}},
    }
    corrupted = {"flight_id": "UA102"}
    first = run.episode(profile="agentprop-p2")
    first.call(fault="ParameterCorruption", forwarded=corrupted).call().call()
    run.episode(profile="agentprop-p2").call().call()  # nothing to corrupt on its first call
    third = run.episode(profile="agentprop-p2")
    third.call(fault="ParameterCorruption", forwarded=corrupted).call().call().call().call()
    results = score(run.build()).results
    d = group(results, "agentprop-p2").delivery
    # 10 tool calls, 3 in scope (one first call per episode): nominal 1.0 × 3 / 10
    assert (d.tool_calls, d.scope_calls, d.scope_episodes) == (10, 3, 3)
    assert d.nominal_rate == 0.3 and d.realised_rate.value == 0.2
    assert d.scope_steps == [1, 1] and d.scope_delivered is not None
    assert d.scope_delivered.value == 2 / 3
    # Wilson 2/3: centre (0.6667 + 0.6403) / 2.2805 = 0.5731, half 1.96·sqrt(0.07407 +
    # 0.10671) / 2.2805 = 0.3654 -> [0.208, 0.939]
    (line,) = rates_lines(results)
    assert "fresh fault rate 0.200 [" in line and "profile 0.300;" in line
    assert line.endswith(
        "landed within step 1 in 0.667 [0.208, 0.939] (2 of 3 episodes) (3 calls in scope)"
    )
