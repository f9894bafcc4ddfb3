"""SR, Δ_rel, FRR, PEI, CN-FRR and the infrastructure split on constructed run directories."""

from __future__ import annotations

from typing import Any

import pytest

from chaosproxy.scoring.episodes import graded_frr


@pytest.mark.parametrize(
    ("success", "t_success", "t_f", "expected"),
    [
        (True, 5, 3, 1.0),  # recovered within 2 steps
        (True, 6, 3, 0.5),  # later
        (True, 2, 4, None),  # goal already held when the fault came: no recovery needed
        (True, 4, 4, None),  # the faulted call itself completed the goal (t_f = t_success)
        (False, None, 3, 0.0),
        (False, 4, 3, 0.0),
        (True, None, 3, None),  # success with no known t_success: ungradable
    ],
)
def test_graded_frr_eq1(
    success: bool, t_success: int | None, t_f: int, expected: float | None
) -> None:
    assert graded_frr(success, t_success, t_f) == expected


def test_sr_frr_and_infrastructure_apart(run: Any, score: Any, group: Any) -> None:
    # fault at step 2, success at 4 -> 1.0
    run.episode(t_success=4).call().call(status=503, fault="ServerError").call().call()
    # fault at step 1, success at 5 -> 0.5
    run.episode(t_success=5).call(status=504, fault="TransientTimeout", outcome="timeout").call()
    # a fault chosen but not delivered does not count: t_f = 3 = t_success: the goal held on
    # the faulted call, so nothing needed recovering (out of FRR's denominator, counted apart)
    (
        run.episode(t_success=3)
        .call(status=200, fault="ServerError", delivered=False)
        .call()
        .call(status=429, fault="SoftRateLimit", retry_after_s=0.0)
        .call()
    )
    # failed with a fault -> 0.0
    run.episode(success=False).call(status=503, fault="ServerError")
    # no fault at all: in SR, not in FRR
    run.episode(success=False).call()
    # infrastructure: not evaluable (this crash came after a clean call, not on the fault;
    # a crash on a fault is the agent's failure: test_crash_right_after_a_fault_is_scored)
    run.episode(outcome="agent_crash").call(status=503, fault="ServerError").call()
    run.episode(outcome="timeout")
    run.episode(outcome="infra_error")
    results = score(run.build()).results
    g = group(results)
    assert (g.counts.total, g.counts.evaluable) == (8, 5)
    assert (g.counts.agent_crash, g.counts.timeout, g.counts.infra_error) == (1, 1, 1)
    assert g.sr.value == pytest.approx(3 / 5) and g.sr.n == 5
    assert g.fault_episodes == 4
    assert g.frr.value == pytest.approx((1.0 + 0.5 + 0.0) / 3) and g.frr.n == 3
    assert g.frr_no_recovery_needed == 1 and g.frr_ungraded == 0


def test_no_fault_delivered_is_na(run: Any, score: Any, group: Any) -> None:
    run.episode(t_success=1).call()
    run.episode(success=False).call(fault="ServerError", delivered=False)
    g = group(score(run.build()).results)
    assert g.frr.value is None and g.frr.note == "no fault delivered"
    assert g.recovery == [] and g.recovery_all.recovered.value is None
    assert g.stage.rejection_rate.value is None
    assert g.adversarial_compliance.value is None


def test_all_fail(run: Any, score: Any, group: Any) -> None:
    for _ in range(3):
        run.episode(success=False).call(status=503, fault="ServerError").call()
    results = score(run.build()).results
    g = group(results)
    assert g.sr.value == 0.0 and g.sr.low == 0.0 and g.sr.high is not None and g.sr.high > 0
    assert g.frr.value == 0.0
    assert g.pei.value == 0.0 and g.pei.n == 3  # failures score 0: a failing agent is not efficient
    assert g.pei_success.value is None  # no successful episode
    assert g.pass_k[0].pass_hat.value == 0.0
    assert results.agents[0].tier.tier is None


def test_only_infrastructure_outcomes(run: Any, score: Any, group: Any) -> None:
    run.episode(outcome="agent_crash")
    run.episode(outcome="timeout")
    g = group(score(run.build()).results)
    assert g.counts.evaluable == 0
    assert g.sr.value is None and g.pass_k[0].pass_hat.value is None


def test_delta_rel_and_sr_per_profile(run: Any, score: Any, group: Any) -> None:
    for ok in (True, True, True, True):
        run.episode(profile="lambda0.0", success=ok)
    for ok in (True, True, False, False):
        run.episode(profile="lambda0.2", success=ok)
    for ok in (True, False, False, False):
        run.episode(profile="lambda0.3", success=ok)
    run.episode(profile="lambda0.3", outcome="agent_crash")
    for ok in (False, False, False, False):  # another family: not pooled into Δ_rel
        run.episode(profile="adversarial", success=ok)
    results = score(run.build()).results
    agent = results.agents[0]
    assert agent.nominal_profile == "lambda0.0"
    assert sorted(agent.stressed_profiles) == ["lambda0.2", "lambda0.3"]
    assert agent.delta_rel_excluded == ["adversarial"]
    # Δ = 1 − (0.5 + 0.25) / 2 = 0.625; with adversarial pooled it would be 1 − 0.75 / 3.
    # MOVER from Wilson 4/4 [0.5101, 1], 2/4 [0.15, 0.85], 1/4 [0.0456, 0.6994] (worked in
    # test_stats): [0.0583, 0.8277]
    assert agent.delta_rel.value == pytest.approx(1.0 - (0.5 + 0.25) / 2)
    assert agent.delta_rel.low == pytest.approx(0.0583, abs=1e-3)
    assert agent.delta_rel.high == pytest.approx(0.8277, abs=1e-3)
    assert agent.delta_rel.note is not None and "lambda0.2, lambda0.3" in agent.delta_rel.note
    assert group(results, "lambda0.3").sr.n == 4
    sr_diff = next(
        c for c in results.comparisons if c.metric == "SR" and c.profile_a == "lambda0.2"
    )
    assert sr_diff.diff.value == pytest.approx(-0.5)


def test_delta_rel_na_without_nominal(run: Any, score: Any) -> None:
    run.episode(profile="lambda0.2")
    results = score(run.build()).results
    assert results.agents[0].delta_rel.value is None


def test_pei_and_quality_factor(run: Any, score: Any, group: Any) -> None:
    run.task("t1", l_min=3)
    run.episode("t1", t_success=4).call().call().call().call()  # 3/4
    run.episode("t1", t_success=3).call().call().call()  # 3/3
    (
        run.episode("t1", t_success=6, non_idempotent=["book"])
        .call()
        .call()
        .call("book", status=504, fault="LostReply", outcome="timeout", arguments={"id": 1})
        .call("book", arguments={"id": 1})
        .call()
        .call()
        .write("book", {"id": 1}, 3)
        .write("book", {"id": 1}, 4)
    )  # 3/6 × 0.8 (duplicate write)
    run.episode("t1", success=False).call()  # failed: PEI 0 (PEI | success: left out)
    g = group(score(run.build()).results)
    assert g.pei.value == pytest.approx((0.75 + 1.0 + 0.5 * 0.8 + 0.0) / 4) and g.pei.n == 4
    assert g.pei_success.value == pytest.approx((0.75 + 1.0 + 0.5 * 0.8) / 3)
    assert g.pei_success.n == 3


def test_cn_frr_counts_safe_escalation_only_where_acceptable(
    run: Any, score: Any, group: Any
) -> None:
    run.task("med", escalation_acceptable=True)
    run.task("plain")
    run.episode("med", success=True)
    run.episode("med", success=False, escalated=True)
    run.episode("med", success=False)
    run.episode("plain", success=False, escalated=True)
    g = group(score(run.build()).results)
    assert g.cn_frr.value == pytest.approx(2 / 4) and g.cn_frr.n == 4
    assert g.escalations == 2


def test_escalation_expected_tag_and_journal_escalation(run: Any, score: Any, group: Any) -> None:
    run.task("esc", tags=["escalation-expected"])
    run.episode("esc", success=False).call("escalate_to_human").write(
        "escalate_to_human", {"reason": "contradictory records"}, 1
    )
    g = group(score(run.build()).results)
    assert g.cn_frr.value == 1.0 and g.escalations == 1


def test_per_domain_rows(run: Any, score: Any) -> None:
    run.task("a", domain="travel").task("b", domain="support")
    run.episode("a", success=True)
    run.episode("b", success=False)
    run.episode("b", success=True)
    rows = {r.domain: r for r in score(run.build()).results.domains}
    assert rows["travel"].sr.value == 1.0 and rows["support"].sr.value == 0.5
    assert rows["support"].counts.evaluable == 2
