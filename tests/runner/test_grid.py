"""The grid: one episode per cell, agent-independent keys, clear errors."""

from __future__ import annotations

import pytest

from chaosproxy.runner.grid import GridError, build_grid, select_tasks, suite_domains


def test_suite_reliabilitybench_is_the_papers_four_domains() -> None:
    assert set(suite_domains("reliabilitybench")) == {
        "scheduling",
        "travel",
        "support",
        "ecommerce",
    }


def test_grid_has_one_episode_per_cell() -> None:
    tasks = select_tasks("reliabilitybench", ["travel"], ["travel-0[12]*"])
    grid = build_grid(["naive", "robust"], tasks, [0.0, 0.1], ["lambda0.0", "lambda0.2"], trials=3)
    assert len(tasks) == 2
    assert len(grid) == 2 * 2 * 2 * 2 * 3
    assert len({episode.episode_id for episode in grid}) == len(grid)


def test_episode_key_leaves_the_agent_out() -> None:
    tasks = select_tasks("reliabilitybench", ["travel"], ["travel-01*"])
    grid = build_grid(["naive", "robust"], tasks, [0.0], ["lambda0.2"], trials=1)
    naive, robust = grid
    assert naive.key == robust.key
    assert naive.episode_id != robust.episode_id


@pytest.mark.parametrize(
    ("suite", "domains", "patterns", "message"),
    [
        ("nope", [], [], "unknown suite 'nope'"),
        ("reliabilitybench", ["coding"], [], "not in suite"),
        ("reliabilitybench", [], ["zzz-*"], "no task id matches"),
    ],
)
def test_bad_selections_name_the_problem(
    suite: str, domains: list[str], patterns: list[str], message: str
) -> None:
    with pytest.raises(GridError, match=message):
        select_tasks(suite, domains, patterns)


def test_trials_must_be_positive() -> None:
    with pytest.raises(GridError, match="trials"):
        build_grid(["naive"], [], [0.0], ["lambda0.0"], trials=0)
