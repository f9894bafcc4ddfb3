"""pass^k, pass@k, the all-k variant and the reliability surface, by hand."""

from __future__ import annotations

import pytest

from chaosproxy.scoring.passk import first_k_all, pass_at, pass_hat, pass_table, surface


@pytest.mark.parametrize(
    ("n", "c", "k", "hat", "at"),
    [
        (4, 3, 1, 0.75, 0.75),
        (4, 3, 2, 3 / 6, 1.0),
        (4, 2, 2, 1 / 6, 1 - 1 / 6),
        (4, 2, 3, 0.0, 1.0),
        (4, 4, 4, 1.0, 1.0),
        (4, 0, 2, 0.0, 0.0),
        (4, 1, 2, 0.0, 0.5),
        (3, 3, 4, None, None),  # k > n: n/a, not 0
    ],
)
def test_estimators(n: int, c: int, k: int, hat: float | None, at: float | None) -> None:
    assert pass_hat(n, c, k) == (pytest.approx(hat) if hat is not None else None)
    assert pass_at(n, c, k) == (pytest.approx(at) if at is not None else None)


def test_all_k_uses_the_first_k_trials_by_number() -> None:
    trials = [(3, False), (1, True), (2, True)]
    assert first_k_all(trials, 2) is True
    assert first_k_all(trials, 3) is False
    assert first_k_all(trials, 4) is None


def test_pass_table_averages_over_tasks_with_enough_trials() -> None:
    units = {
        "A": [(1, True), (2, True), (3, False), (4, True)],  # c = 3
        "B": [(1, True), (2, False), (3, False), (4, False)],  # c = 1
        "C": [(1, True), (2, True)],  # only two evaluable trials
    }
    rows = {r.k: r for r in pass_table(units, 5, seed=1, name="t")}
    assert rows[1].pass_hat.value == pytest.approx((0.75 + 0.25 + 1.0) / 3)
    assert rows[2].pass_hat.value == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert rows[3].pass_hat.value == pytest.approx((0.25 + 0.0) / 2)
    assert rows[3].pass_hat.n == 2
    assert rows[2].all_k.value == pytest.approx(2 / 3)
    assert rows[2].pass_at.value == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert rows[5].pass_hat.value is None and rows[5].all_k.value is None
    assert "k = 5 > n" in (rows[5].pass_hat.note or "")


def test_surface_cells_volume_and_gradients() -> None:
    # two tasks, ε ∈ {0, 0.1}, λ ∈ {0, 0.2}, two trials each
    t = [(1, True), (2, True)]
    h = [(1, True), (2, False)]
    f = [(1, False), (2, False)]
    units = {
        ("a", 0.0, "l0"): t,
        ("b", 0.0, "l0"): t,
        ("a", 0.1, "l0"): t,
        ("b", 0.1, "l0"): h,
        ("a", 0.0, "l2"): h,
        ("b", 0.0, "l2"): f,
        ("a", 0.1, "l2"): f,
        ("b", 0.1, "l2"): f,
    }
    s = surface(units, {"l0": 0.0, "l2": 0.2}, 2, seed=1, name="x")
    cell = {(c.k, c.epsilon, c.lam): c.value.value for c in s.cells}
    expected = {
        (1, 0.0, 0.0): 1.0,
        (1, 0.1, 0.0): 0.75,
        (1, 0.0, 0.2): 0.25,
        (1, 0.1, 0.2): 0.0,
        (2, 0.0, 0.0): 1.0,
        (2, 0.1, 0.0): 0.5,
        (2, 0.0, 0.2): 0.0,
        (2, 0.1, 0.2): 0.0,
    }
    assert cell == pytest.approx(expected)
    assert s.volume.value == pytest.approx(sum(expected.values()) / 8)
    # along λ: (0.25−1)/0.2, (0−0.75)/0.2, (0−1)/0.2, (0−0.5)/0.2
    assert s.gradient_lambda.value == pytest.approx((-3.75 - 3.75 - 5.0 - 2.5) / 4)
    # along ε: (0.75−1)/0.1, (0−0.25)/0.1, (0.5−1)/0.1, (0−0)/0.1
    assert s.gradient_epsilon.value == pytest.approx((-2.5 - 2.5 - 5.0 + 0.0) / 4)
    # along k: 0, −0.25, −0.25, 0
    assert s.gradient_k.value == pytest.approx(-0.125)
    assert s.volume.low is not None and s.volume.value is not None
    assert s.volume.low <= s.volume.value


def test_surface_with_one_lambda_has_no_lambda_gradient() -> None:
    units = {("a", 0.0, "l2"): [(1, True), (2, False)]}
    s = surface(units, {"l2": 0.2}, 3, seed=1, name="x")
    assert s.gradient_lambda.value is None
    k3 = next(c for c in s.cells if c.k == 3)
    assert k3.value.value is None  # k > n
