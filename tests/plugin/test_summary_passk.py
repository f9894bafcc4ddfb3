"""The plugin's pass^k: the scorer's estimate and interval for one unit, worked out by hand."""

from __future__ import annotations

from chaosproxy.plugin.summary import pass_k_estimate
from chaosproxy.report.fmt import est

# Wilson 95 % for 0 of 1: high = z² / (1 + z²) = 3.8415 / 4.8415 = 0.7935;
# for 1 of 1: low = 1 / (1 + z²) = 1 / 4.8415 = 0.2065.


def test_two_of_three_trials_prints_an_interval_holding_its_estimate() -> None:
    # c = 2, n = k = 3: pass^3 = C(2, 3) / C(3, 3) = 0. The old print raised the per-trial
    # Wilson interval of 2/3, [0.2077, 0.9385], to the 3rd power: [0.0090, 0.8266], which
    # printed "0.00 [0.01, 0.83]" and left out its own 0.00.
    e = pass_k_estimate([(1, True), (2, False), (3, True)], 3, 7, "t/p")
    assert est(e) == "0.00 [0.00, 0.79]"
    assert e.low is not None and e.high is not None and e.value is not None
    assert e.low <= e.value <= e.high
    assert abs(e.high - 3.8414588 / 4.8414588) < 1e-6


def test_all_trials_passed() -> None:
    e = pass_k_estimate([(1, True), (2, True)], 2, 7, "t/p")
    assert est(e) == "1.00 [0.21, 1.00]"
    assert e.low is not None and abs(e.low - 1 / 4.8414588) < 1e-6


def test_a_missing_trial_is_not_measured() -> None:
    e = pass_k_estimate([(1, True)], 2, 7, "t/p")
    assert e.value is None and e.note == "only 1 of 2 trials evaluable"


def test_the_same_number_as_chaosproxy_score() -> None:
    """One definition: the scorer's pass^k table for the same unit gives the same Estimate."""
    from chaosproxy.scoring.passk import pass_table

    trials = [(1, False), (2, True), (3, True), (4, True)]
    [*_, row] = pass_table({"unit": trials}, 4, 7, "t/p")
    assert pass_k_estimate(trials, 4, 7, "t/p") == row.pass_hat
