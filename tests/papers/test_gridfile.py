"""Grid files: errors name the file, the block and the field; blocks are unioned."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.runner.gridfile import GridFileError, load_grid, parse_grid
from chaosproxy.runner.run import RunSpec, _plan

GOOD = """
blocks:
  - name: main
    agents: [naive, robust]
    tasks: ["scheduling-0[12]*"]
    epsilons: [0, 0.1]
    profiles: [lambda0.0, lambda0.2]
    trials: 2
  - name: ablation
    agents: [naive]
    tasks: ["scheduling-0[12]*"]
    epsilons: [0]
    profiles: [ablation-timeout, lambda0.2]
    trials: 2
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("blocks: [", "g.yaml: line 2, column 1: not valid YAML"),
        ("- a\n- b\n", "g.yaml: expected a mapping with `blocks:`, got list"),
        ("blocks: []\n", "g.yaml: field blocks: List should have at least 1 item"),
        (
            "blocks:\n  - {name: a, agents: [naive], profiles: [lambda0.0]}\n"
            "  - {name: abl, profiles: [lambda0.2]}\n",
            "g.yaml: block 2 (abl), field agents: Field required",
        ),
        (
            "blocks:\n  - {name: a, agents: [naive], profiles: [x], epsilons: [0, 1.5]}\n",
            "g.yaml: block 1 (a), field epsilons: Value error, 1.5 is outside [0, 1]",
        ),
        (
            "blocks:\n  - {name: a, agents: [naive], profiles: [x], trials: 0}\n",
            "g.yaml: block 1 (a), field trials: Input should be greater than or equal to 1",
        ),
        (
            "blocks:\n  - {name: a, agents: [naive], profiles: [x], colour: red}\n",
            "g.yaml: block 1 (a), field colour: Extra inputs are not permitted",
        ),
        (
            "blocks:\n  - {name: a, agents: [naive], profiles: [x]}\n"
            "  - {name: a, agents: [robust], profiles: [x]}\n",
            "g.yaml: block names must be unique; repeated: ['a']",
        ),
        (
            "blocks:\n  - {name: a, agents: [naive], profiles: [x], epsilons: [zero]}\n",
            "g.yaml: block 1 (a), field epsilons[0]: Input should be a valid number",
        ),
    ],
)
def test_errors_name_file_block_and_field(text: str, expected: str) -> None:
    with pytest.raises(GridFileError) as caught:
        parse_grid(text, "g.yaml")
    assert expected in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GridFileError, match=r"nothing\.yaml: no such grid file"):
        load_grid(tmp_path / "nothing.yaml")


def test_blocks_are_unioned_and_shared_episodes_run_once() -> None:
    blocks = parse_grid(GOOD, "g.yaml").blocks
    planned = _plan(
        RunSpec(
            agents=[],
            suite="",
            profiles=[],
            epsilons=[],
            trials=1,
            out=Path("unused"),
            blocks=blocks,
        )
    )
    # main: 2 agents × 2 tasks × 2 ε × 2 λ × 2 trials = 32; ablation: 1 × 2 × 1 × 2 × 2 = 8,
    # of which naive at ε 0 under lambda0.2 (2 tasks × 2 trials = 4) is already in main.
    assert len(planned.grid) == 32 + 8 - 4
    assert len({e.episode_id for e in planned.grid}) == len(planned.grid)
    ablation = [e for e in planned.grid if e.profile == "ablation-timeout"]
    assert {e.agent for e in ablation} == {"naive"} and {e.epsilon for e in ablation} == {0.0}
    assert sorted({t.id[:12] for t in planned.tasks}) == ["scheduling-0"]


def test_run_refuses_grid_flags_beside_a_grid_file(tmp_path: Path) -> None:
    grid = tmp_path / "g.yaml"
    grid.write_text(GOOD)
    result = CliRunner().invoke(main, ["run", "--grid", str(grid), "--agent", "naive"])
    assert result.exit_code == 2 and "--grid sets the grid; drop --agent" in result.output
    grid.write_text("blocks:\n  - {name: a, profiles: [x]}\n")
    result = CliRunner().invoke(main, ["run", "--grid", str(grid)])
    assert result.exit_code == 2 and "block 1 (a), field agents: Field required" in result.output
