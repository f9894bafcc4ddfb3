"""ε perturbations: seeded, cumulative by level, and meaning-preserving for dates."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from chaosproxy.runner.perturb import SYNONYMS, level_relations, perturb

TEXT = (
    "Book the cheapest flight from SFO to JFK on 2026-03-10 for Ana Ruiz. "
    "It must arrive before 14:00. Do not book a red-eye. Budget is 400 USD."
)
TODAY = dt.date(2026, 3, 2)


@pytest.mark.parametrize(
    ("epsilon", "expected"),
    [
        (0.0, ()),
        (0.1, ("synonym", "date_format", "reorder")),
        (0.2, ("synonym", "date_format", "reorder", "distractor", "correction")),
        (0.3, ("synonym", "date_format", "reorder", "distractor", "correction", "relative_date")),
    ],
)
def test_levels_are_cumulative(epsilon: float, expected: tuple[str, ...]) -> None:
    assert level_relations(epsilon) == expected


@pytest.mark.parametrize("epsilon", [-0.1, 1.5])
def test_out_of_range_epsilon_is_refused(epsilon: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        level_relations(epsilon)


def test_zero_epsilon_is_identity() -> None:
    result = perturb(TEXT, epsilon=0.0, seed=1, task_id="t", reference_date=TODAY)
    assert result.text == TEXT
    assert result.relations == ()


@pytest.mark.parametrize("epsilon", [0.1, 0.2, 0.3])
def test_same_seed_same_text_and_other_seed_differs_somewhere(epsilon: float) -> None:
    first = perturb(TEXT, epsilon=epsilon, seed=7, task_id="travel-01", reference_date=TODAY)
    again = perturb(TEXT, epsilon=epsilon, seed=7, task_id="travel-01", reference_date=TODAY)
    assert first == again
    assert first.text != TEXT
    others = {
        perturb(TEXT, epsilon=epsilon, seed=seed, task_id="travel-01", reference_date=TODAY).text
        for seed in range(8)
    }
    assert len(others) > 1


def test_date_format_keeps_the_date() -> None:
    result = perturb(TEXT, epsilon=0.1, seed=3, task_id="t", reference_date=TODAY)
    assert "2026-03-10" not in result.text
    assert re.search(r"\b10\b", result.text) and "Mar" in result.text and "2026" in result.text


def test_correction_ends_on_the_right_date() -> None:
    result = perturb("Fly on 2026-03-10. Window seat.", epsilon=0.2, seed=5, task_id="t")
    assert "correction" in result.relations
    assert re.search(r"Mon 09 Mar 2026|9 March 2026|March 9, 2026", result.text)
    assert result.text.index("I mean") < result.text.rindex("10")


def test_relative_date_is_arithmetic_from_the_reference() -> None:
    result = perturb("Fly on 2026-03-10.", epsilon=0.3, seed=2, task_id="t", reference_date=TODAY)
    assert "relative_date" in result.relations
    assert "2 March 2026 plus 8 days" in result.text
    assert "2 March 2026 plus 7 days" in result.text


def test_relative_date_needs_a_reference() -> None:
    result = perturb("Fly on 2026-03-10.", epsilon=0.3, seed=2, task_id="t", reference_date=None)
    assert "relative_date" not in result.relations


def test_synonyms_come_from_the_table() -> None:
    result = perturb("Please book a meeting.", epsilon=0.1, seed=11, task_id="s")
    words = set(re.findall(r"[a-z-]+", result.text.lower()))
    allowed = {"please", "book", "a", "meeting"} | {
        part for options in SYNONYMS.values() for option in options for part in option.split()
    }
    assert words <= allowed
