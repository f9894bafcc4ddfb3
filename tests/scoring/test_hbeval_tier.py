"""HB-Eval's tier is judged on fault-injected episodes only, and its Δ_rel against a stress
profile outside the λ family (FIT v2) is in results.json: values worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from chaosproxy.papers.hbeval import cross_domain_variance


def _run(run: Any, *, with_lambda: bool = False) -> Any:
    """Task t1 has l_min = 2 (PEI = min(1, 2 / tool calls) for a success, 0 for a failure).

    λ0: A and B succeed in 2 calls: PEI 1.0 each, no fault.
    fit-v2: C meets a 500 at step 1 and succeeds at step 4 in 4 calls: PEI 0.5, FRR 0.5
    (4 − 1 > 2 steps); D meets a 500 at step 1 and fails: PEI 0, FRR 0.
    with_lambda, λ0.2: E succeeds in 2 clean calls: PEI 1.0, no FRR.
    """
    run.task("t1", l_min=2)
    for _ in range(2):
        run.episode(profile="lambda0.0", t_success=2).call().call()
    (
        run.episode(profile="fit-v2", t_success=4)
        .call(status=500, fault="ServerError")
        .call()
        .call()
        .call()
    )
    run.episode(profile="fit-v2", success=False).call(status=500, fault="ServerError").call()
    if with_lambda:
        run.episode(profile="lambda0.2", t_success=2).call().call()
    return run.build()


def test_the_tier_uses_the_stress_profile_alone(run: Any, score: Any, group: Any) -> None:
    results = score(_run(run)).results
    summary = results.agents[0]
    fit = group(results, "fit-v2")
    tier = summary.tier
    assert tier.profiles == ["fit-v2"]
    assert tier.frr.value == pytest.approx(0.25) and tier.frr.n == 2
    # pooled with λ0 it would be (1 + 1 + 0.5 + 0) / 4 = 0.625; fault-injected only: 0.25
    assert tier.pei.value == pytest.approx(0.25) and tier.pei.n == 2
    assert summary.pei.value == pytest.approx(0.625)  # the agent's PEI field is unchanged
    # one computation: the tier's figures are the FIT v2 group's (Table 4 prints these)
    assert tier.pei == fit.pei and tier.frr == fit.frr
    # Δ_rel against FIT v2: SR 2/2 − SR 1/2 = 0.5 (Newcombe); the λ-family gap stays n/a
    gap = summary.delta_rel_by_profile["fit-v2"]
    assert gap.value == pytest.approx(0.5) and gap.n == 4
    assert gap.low is not None and gap.high is not None and gap.low < 0.5 < gap.high
    assert list(summary.delta_rel_by_profile) == ["fit-v2"]
    assert summary.delta_rel.value is None


def test_several_stress_profiles_are_pooled_without_the_baseline(run: Any, score: Any) -> None:
    summary = score(_run(run, with_lambda=True)).results.agents[0]
    tier = summary.tier
    assert sorted(tier.profiles) == ["fit-v2", "lambda0.2"]
    assert tier.frr.value == pytest.approx(0.25) and tier.frr.n == 2  # C, D
    assert tier.pei.value == pytest.approx(0.5) and tier.pei.n == 3  # (0.5 + 0 + 1) / 3
    gaps = summary.delta_rel_by_profile
    assert gaps["fit-v2"].value == pytest.approx(0.5)
    assert gaps["lambda0.2"].value == pytest.approx(0.0)
    assert summary.delta_rel.value == pytest.approx(0.0)  # λ family: λ0 − λ0.2


def test_cross_domain_variance_is_the_papers() -> None:
    """HB-Eval Table 6: ReAct 43.1, 40.8, 43.2 → mean 42.367; squared deviations 0.538,
    2.454, 0.694; / 3 = 1.229 (printed 1.2). Reflexion 77.5, 75.2, 77.9 → 1.416 (1.4).
    An SD would print 1.1 and 1.2; a sample variance 1.8 and 2.1."""
    assert cross_domain_variance([43.1, 40.8, 43.2]) == pytest.approx(1.2289, abs=1e-3)
    assert cross_domain_variance([77.5, 75.2, 77.9]) == pytest.approx(1.4156, abs=1e-3)
    assert cross_domain_variance([50.0]) is None
