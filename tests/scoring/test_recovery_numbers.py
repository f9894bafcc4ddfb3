"""Issue 25 ("Numbers II"), recovery statistics: each item on the episode pattern the issue
names, in a small constructed run directory, against numbers worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from chaosproxy.records import CallRecord


def call(
    ep: Any,
    tool: str = "search",
    *,
    fresh: bool | None = None,
    incident: str | None = None,
    position: int | None = None,
    restarted: bool | None = None,
    upstream_status: int | None = None,
    **kwargs: Any,
) -> Any:
    """One tool call through the builder, then the fields the builder does not set: the
    engine's `fresh` mark, the incident or draw key, `episode_restarted`, upstream status."""
    ep.call(tool, **kwargs)
    data = ep.builder.calls[-1].model_dump()
    if data["fault"] is not None:
        if fresh is not None:
            data["fault"]["fresh"] = fresh
        if incident is not None:
            data["fault"]["incident"] = incident
        if position is not None:
            data["fault"]["draw"] = {
                "seed": 7,
                "episode_key": ep.record.episode_key,
                "tool": tool,
                "position": position,
                "purpose": "fault",
            }
    if restarted is not None:
        data["episode_restarted"] = restarted
    if upstream_status is not None:
        data["upstream_status"] = upstream_status
    ep.builder.calls[-1] = CallRecord.model_validate(data)
    return ep


def cascade(ep: Any, carried: int, incident: str) -> Any:
    """A CascadingFailure drawn on `book` (503), carried by the next `carried` calls."""
    call(
        ep,
        "book",
        status=503,
        fault="CascadingFailure",
        recoverable=False,
        fresh=True,
        incident=incident,
    )
    for _ in range(carried):
        call(
            ep,
            "book",
            status=503,
            fault="CascadingFailure",
            recoverable=False,
            fresh=False,
            incident=incident,
        )
    return ep


def test_an_incident_is_counted_once(run: Any, score: Any, group: Any, tmp_path: Any) -> None:
    """Item 1: a CascadingFailure drawn at step 1 and carried by steps 2–4 is one fault."""
    from chaosproxy.papers import reliabilitybench
    from chaosproxy.plugin.summary import rows_from_run

    # episode A: drawn at 1, carried 2–4, step 5 clean; the episode succeeded
    call(cascade(run.episode(success=True, t_success=5), 3, "cf-a"), "book")
    # episode B: drawn at 1, carried at 2; the episode failed
    cascade(run.episode(success=False), 1, "cf-b")
    path = run.build()
    scored = score(path)
    row = next(r for r in group(scored.results).recovery if r.fault == "CascadingFailure")
    # by hand: 2 faults (the old count: 4 + 2 = 6 calls); adapt: recovered in A only → 1/2
    assert row.encountered == 2 and row.rule == "adapt"
    assert row.recovered.value == pytest.approx(0.5) and row.recovered.n == 2
    # extra calls: A: steps 2, 3, 4, 5 (the first clean one) = 4; B: step 2 (none clean) = 1
    assert row.extra_calls.value == pytest.approx(2.5)
    # A's latency to the goal: t_success 5 − step 1 = 4
    assert row.latency_steps.value == pytest.approx(4.0)
    # ReliabilityBench Table 8 prints the same rows
    table = reliabilitybench.table8(scored)
    cells = next(r for r in table.rows if r[1] == "CascadingFailure")
    assert cells[2] == "2" and cells[3].startswith("1/2 ")
    # the pytest plugin's "faults met" too: one per episode
    (plugin_row,) = rows_from_run(path, {"t1": 2})
    assert plugin_row.faults["CascadingFailure"] == 2
    # episodes.csv: faults_delivered counts faults, not faulted calls
    assert [s.calls.faulted_calls for s in scored.episodes] == [4, 2]
    assert [len(s.faults) for s in scored.episodes] == [1, 1]


def test_a_carried_drift_does_not_spoil_a_retry(run: Any, score: Any, group: Any) -> None:
    """Item 2 (and the pinned "clean"): on a tool under a continuing ToolChanged, a clean
    retry after a StreamClosed recovers it; a fresh fault or an error does not."""
    ep = run.episode(success=True, t_success=4)
    call(ep, "list", fault="ToolChanged", fresh=True, incident="tc")  # step 1: drift starts
    call(ep, "list", status=502, outcome="reset", fault="StreamClosed", fresh=True, position=2)
    # step 3: the retry: 200, carrying the drift (fresh: false): clean
    call(ep, "list", fault="ToolChanged", fresh=False, incident="tc")
    # a second StreamClosed whose retry meets a fresh SchemaDrift (not clean), then an error
    # the drift did not cause (not clean): never recovered
    call(ep, "list", status=502, outcome="reset", fault="StreamClosed", fresh=True, position=4)
    call(ep, "list", fault="SchemaDrift", recoverable=False, fresh=True, position=5)
    call(ep, "list", status=500)
    rows = {r.fault: r for r in group(score(run.build()).results).recovery}
    closed = rows["StreamClosed"]
    # by hand: 2 StreamClosed, the first recovered at step 3 (1 step, 1 extra call), the
    # second never (extra calls 5 and 6 to the end: 2) → 1/2, extra (1 + 2) / 2 = 1.5
    assert closed.encountered == 2 and closed.recovered.value == pytest.approx(0.5)
    assert closed.latency_steps.value == pytest.approx(1.0)
    assert closed.extra_calls.value == pytest.approx(1.5)
    # the ToolChanged is one fault (step 3 carried it), not two
    assert rows["ToolChanged"].encountered == 1


def test_extra_calls_stop_at_the_first_clean_call(run: Any, score: Any, group: Any) -> None:
    """Item 3: naive at agentprop-p2: a corrupted `get` never re-issued, three more `get`
    calls with other arguments: 1 extra call (the first clean one), not 3."""
    ep = run.episode(success=False, profile="agentprop-p2")
    call(
        ep,
        "get",
        arguments={"id": "P-1"},
        forwarded={"id": "P-9"},
        fault="ParameterCorruption",
        recoverable=False,
        fresh=True,
        position=1,
    )
    for n in (2, 3, 4):
        call(ep, "get", arguments={"id": f"P-{n}"})
    # a SchemaDrift on `list` followed only by errors: counted to the end (2 calls)
    call(ep, "list", fault="SchemaDrift", recoverable=False, fresh=True, position=5)
    call(ep, "list", status=500)
    call(ep, "list", status=500)
    rows = {r.fault: r for r in group(score(run.build()).results, "agentprop-p2").recovery}
    assert rows["ParameterCorruption"].extra_calls.value == 1.0  # the old rule: 3
    assert rows["SchemaDrift"].extra_calls.value == 2.0


def test_an_invisible_fault_does_not_start_the_frr_clock(run: Any, score: Any, group: Any) -> None:
    """Item 4: t_f is the step of the first fault that needs recovery, not a HighLatency."""
    # HighLatency at 1, ServerError at 3, recovered at 4, goal at 5: t_f = 3, 5 − 3 = 2 →
    # FRR_e 1.0 (the old t_f = 1 gave 5 − 1 = 4 > 2 → 0.5)
    ep = run.episode(success=True, t_success=5)
    call(ep, fault="HighLatency", fresh=True, position=1)
    call(ep)
    call(ep, status=503, fault="ServerError", fresh=True, position=3)
    call(ep)
    call(ep, "book")
    # only a HighLatency, then a failure: no fault needed recovery → not in FRR (old: 0.0)
    call(run.episode(success=False), fault="HighLatency", fresh=True, position=1)
    g = group(score(run.build()).results)
    assert g.fault_episodes == 1
    assert g.frr.value == 1.0 and g.frr.n == 1


def test_recovered_by_the_docs_rule_and_design_six_beside_it(
    run: Any, score: Any, group: Any
) -> None:
    """Item 5: `recovered` keeps docs/metrics.md's rule (a retryable fault: a later clean
    call of the same tool, whatever the episode's end); `recovered_and_succeeded` is
    DESIGN §6's stricter reading (and the episode succeeded)."""
    # a 503 retried clean, the episode succeeded: recovered under both readings
    ep = run.episode(success=True, t_success=2)
    call(ep, status=503, fault="ServerError", fresh=True, position=1)
    call(ep)
    # a 503 retried clean, but the episode failed: recovered by the docs' rule only
    ep = run.episode(success=False)
    call(ep, status=503, fault="ServerError", fresh=True, position=1)
    call(ep)
    # a 503 never retried, the episode succeeded anyway: recovered under neither
    ep = run.episode(success=True, t_success=2)
    call(ep, status=503, fault="ServerError", fresh=True, position=1)
    call(ep, "book")
    (row,) = group(score(run.build()).results).recovery
    assert row.recovered.value == pytest.approx(2 / 3)  # episodes 1 and 2
    assert row.recovered_and_succeeded.value == pytest.approx(1 / 3)  # episode 1
    assert row.recovered_and_succeeded.n == 3


def test_infrastructure_or_the_agent(run: Any, score: Any, group: Any) -> None:
    """Item 12 (and issue 26 item 2): one rule. A timeout right after a delivered fault (an
    agent in backoff) is the agent's failure, like a crash; an infra_error whose cause is a
    service 5xx to the agent's own call (no fault injected) is the agent's outcome."""
    # 1: a 503 retried clean, goal at 2: FRR_e 1.0
    ep = run.episode(success=True, t_success=2)
    call(ep, status=503, fault="ServerError", fresh=True, position=1)
    call(ep)
    # 2: killed by the runner while backing off from a 429: the agent's, success False,
    # FRR_e 0.0 (the old rule: infrastructure, left out)
    ep = run.episode(outcome="timeout")
    call(ep)
    call(ep, status=429, fault="SoftRateLimit", fresh=True, position=2, retry_after_s=5.0)
    # 3: timed out after a clean call: infrastructure
    call(run.episode(outcome="timeout"))
    # 4: the service answered 500 to the agent's own call (no fault): the runner recorded
    # infra_error with a verdict; the agent's failure, with no fault (not in FRR)
    ep = run.episode(outcome="infra_error")
    ep.record.success = False
    call(ep, status=500, upstream_status=500)
    # 5: a 500 the proxy injected, then infra_error: infrastructure
    ep = run.episode(outcome="infra_error")
    ep.record.success = False
    call(ep, status=500, fault="ServerError", fresh=True, position=1, upstream_status=None)
    scored = score(run.build())
    g = group(scored.results)
    # by hand: FRR over episodes 1 and 2 = (1.0 + 0.0) / 2 (old: 1.0 over 1)
    assert g.frr.value == pytest.approx(0.5) and g.frr.n == 2
    # SR over 1, 2, 4 = 1/3 (old: 1/1)
    assert g.sr.value == pytest.approx(1 / 3) and g.sr.n == 3
    c = g.counts
    assert (c.timeout, c.timeout_after_fault, c.infra_error, c.infra_error_agent_caused) == (
        2,
        1,
        2,
        1,
    )
    assert c.reclassified == {"timeout_after_fault": 1, "service_error_on_agent_call": 1}
    assert c.infrastructure == 2 and c.evaluable == 3
    assert [s.agent_outcome for s in scored.episodes] == [
        None,
        "timeout_after_fault",
        None,
        "service_error_on_agent_call",
        None,
    ]


def test_a_restart_is_a_new_segment_of_the_same_episode(run: Any, score: Any, group: Any) -> None:
    """Item 14: the proxy evicted an idle episode; its retry comes back as a restarted
    episode and the engine, starting over, draws the same 503 again (same draw key)."""
    ep = run.episode(success=True, t_success=2)
    call(ep, "book", status=503, fault="ServerError", fresh=True, position=1)
    ep.step = 0  # evicted: steps start over
    call(ep, "book", status=503, fault="ServerError", fresh=True, position=1, restarted=True)
    call(ep, "book")  # the same call right after the 503 of this segment: a retry
    g = group(score(run.build()).results)
    (row,) = g.recovery
    # by hand: one fault met twice (old: 2 faults); recovered at the third call; extra
    # calls: the restarted call (not clean) and the clean one = 2
    assert row.encountered == 1 and row.recovered.value == 1.0
    assert row.extra_calls.value == 2.0
    # retries: only the last call is "right after" an error of its segment (old: 2)
    assert g.hygiene.retries == 1


def test_model_retries_are_counted_apart(run: Any, score: Any, group: Any) -> None:
    """Item 13: retry hygiene counts the agent's retries of its model calls too, apart
    from tool-call retries."""
    ep = run.episode(success=True, t_success=1)
    # 429 (Retry-After 1 s), retried 0.1 s later (ignores it), 429 again, retried 1.5 s
    # later (honours it): 2 model retries, 1 ignored Retry-After
    ep.model(status=429, fault="ModelRateLimit", at=10.0, retry_after_s=1.0)
    ep.model(status=429, fault="ModelRateLimit", at=10.1, retry_after_s=1.0)
    ep.model(at=11.6)
    call(ep, "book", at=12.0)
    # a failed model call followed by a tool call, then a model call: not a retry
    ep.model(status=503, fault="ModelOverloaded", at=13.0)
    call(ep, "book", at=14.0)
    ep.model(at=15.0)
    # three back-to-back model retries 0.01 s apart: 3 retries, a storm
    ep.model(status=500, at=20.0)
    for t in (20.01, 20.02, 20.03):
        ep.model(status=500, at=t)
    h = group(score(run.build()).results).hygiene
    assert h.retries == 0  # no tool call was retried
    assert h.model_retries == 2 + 3
    assert h.model_ignored_retry_after.count == 1
    assert h.model_retry_storms.count == 1 and h.model_retry_storms.affected == 1


def test_quality_factor_is_a_product_over_steps(run: Any, score: Any, group: Any) -> None:
    """Item 6: HB-Eval eq. 4, QF = Π_i q_i over the steps: a rule broken at two steps costs
    twice; two rules broken on one call cost that step's harshest q once."""
    run.task("t1", l_min=3)
    # Retry-After 5 s ignored at steps 2 and 3: QF 0.9 × 0.9 = 0.81 (old: 0.9 once)
    ep = run.episode("t1", success=True, t_success=3)
    call(ep, "book", status=429, fault="SoftRateLimit", at=1.0, retry_after_s=5.0)
    call(ep, "book", status=429, fault="SoftRateLimit", at=2.0, retry_after_s=5.0)
    call(ep, "book", at=3.0)
    # a HardRateLimit (Retry-After 5 s) retried 1 s later: step 2 both ignores the
    # Retry-After and retries a non-retryable fault: one step, q = 0.9 (old: 0.9 × 0.9)
    ep = run.episode("t1", success=True, t_success=3)
    call(
        ep, "book", status=429, fault="HardRateLimit", recoverable=False, at=1.0, retry_after_s=5.0
    )
    call(ep, "book", at=2.0)
    call(ep, "list", at=3.0)
    scored = score(run.build())
    assert [s.qf for s in scored.episodes] == [pytest.approx(0.81), pytest.approx(0.9)]
    # PEI = min(1, 3/3) × QF, averaged: (0.81 + 0.9) / 2
    assert group(scored.results).pei.value == pytest.approx((0.81 + 0.9) / 2)
