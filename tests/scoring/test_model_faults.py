"""Model-call faults in the scorer, and an agent that crashes on a fault, with values
worked out by hand from small run directories."""

from __future__ import annotations

from typing import Any

import pytest

from chaosproxy.report.table import summary

RATE_LIMIT = "ModelRateLimit"
PROFILE = {"failure_rate": 0.25, "weights": {RATE_LIMIT: 1.0}}


def _model_run(run: Any) -> Any:
    run.profiles["m429"] = PROFILE
    # A: a 429 at t = 1001 (reply at once), the next model call at t = 1002 takes 0.5 s and
    # comes back clean: recovered, 1 extra call, 1.5 s. Three model calls, two tool calls.
    (
        run.episode(profile="m429", t_success=2)
        .model(status=429, fault=RATE_LIMIT, retry_after_s=1.0)
        .model(latency_ms=500.0)
        .call()
        .model()
        .call()
    )
    # B: the client gives up after two 429s in a row and raises: agent_crash right after a
    # delivered fault, so scored (as a failure: no verdict was recorded). Three model calls,
    # one tool call; the first 429 is followed by one more (faulted) call, the second by none.
    (
        run.episode(profile="m429", outcome="agent_crash")
        .model()
        .call()
        .model(status=429, fault=RATE_LIMIT)
        .model(status=429, fault=RATE_LIMIT)
    )
    # C: crashed after a clean call: infrastructure, counted apart, its fault not counted.
    run.episode(profile="m429", outcome="agent_crash").model(status=429, fault=RATE_LIMIT).model()
    return run.build()


def test_model_faults_are_delivered_and_recovered_apart_from_tool_calls(
    run: Any, score: Any, group: Any
) -> None:
    results = score(_model_run(run)).results
    g = group(results, "m429")
    assert (g.counts.total, g.counts.evaluable) == (3, 2)
    assert (g.counts.agent_crash, g.counts.agent_crash_after_fault) == (2, 1)
    assert g.counts.infrastructure == 1
    assert g.sr.value == 0.5 and g.sr.n == 2  # A succeeded, B crashed on the 429
    d = g.delivery
    # tool calls: A 2 + B 1 = 3, none faulted; the profile weights no tool fault: nominal 0
    assert (d.tool_calls, d.delivered, d.drawn, d.nominal_rate) == (3, 0, 0, 0.0)
    assert d.realised_rate.value == 0.0 and d.realised_rate.n == 3
    # model calls: A 3 + B 3 = 6, three 429s delivered: 3/6 against the profile's 0.25
    m = d.model
    assert m is not None
    assert (m.model_calls, m.delivered, m.drawn, m.nominal_rate) == (6, 3, 3, 0.25)
    assert m.realised_rate.value == 0.5 and m.realised_rate.n == 6
    [kind] = m.by_fault
    assert (kind.fault, kind.delivered, kind.drawn, kind.nominal_rate) == (RATE_LIMIT, 3, 3, 0.25)
    # recovery: tool faults none; ModelRateLimit seen 3, recovered 1 (A's), Wilson(1, 3)
    assert g.recovery == []
    [r] = g.model_recovery
    assert (r.fault, r.encountered, r.rule) == (RATE_LIMIT, 3, "retry")
    assert r.recovered.value == pytest.approx(1 / 3)
    assert r.recovered.low == pytest.approx(0.0615, abs=1e-4)
    assert r.recovered.high == pytest.approx(0.7923, abs=1e-4)
    assert r.extra_calls.value == pytest.approx((1 + 1 + 0) / 3)
    assert r.latency_s.value == pytest.approx(1.5) and r.latency_s.n == 1
    assert r.latency_steps.value is None  # a model call has no step
    text = summary(results)
    assert "no fault reached an agent" not in text
    assert "ModelRateLimit" in text and "(model)" in text
    assert "0.500 [" in text and "6 model" in text and "3 tool" in text
    assert "1 agent_crash right after a delivered fault scored as the agent's" in text
    assert "1 infrastructure (1 agent_crash) counted apart" in text


def test_crash_right_after_a_tool_fault_is_scored(run: Any, score: Any, group: Any) -> None:
    # a crash on a ServerError at step 2: scored as a failure, t_f = 2, FRR 0
    run.episode(outcome="agent_crash").call().call(status=503, fault="ServerError")
    # the runner recorded the verifier's verdict on the state a crashed agent left: kept
    kept = run.episode(outcome="agent_crash").call(status=503, fault="ServerError")
    kept.record.success = True
    kept.record.t_success = 1
    # a crash after a fault the agent could not see (HighLatency) stays infrastructure
    run.episode(outcome="agent_crash").call(fault="HighLatency")
    g = group(score(run.build()).results)
    assert (g.counts.evaluable, g.counts.agent_crash_after_fault, g.counts.infrastructure) == (
        2,
        2,
        1,
    )
    assert g.sr.value == 0.5
    [r] = g.recovery
    assert (r.fault, r.encountered) == ("ServerError", 2)
    assert r.recovered.value == 0.0  # no later clean call of the same tool in either


def test_old_run_directories_without_model_calls_score_as_before(
    run: Any, score: Any, group: Any
) -> None:
    run.profiles["lambda0.2"] = {"failure_rate": 0.2}  # no weights recorded: rate kept
    run.episode(t_success=2).call(status=503, fault="ServerError").call()
    g = group(score(run.build()).results)
    assert g.delivery.nominal_rate == 0.2 and g.delivery.model is None
    assert g.model_recovery == []
    assert g.counts.agent_crash_after_fault == 0
