"""Grid files: a run as a list of blocks, each its own cross product.

A grid is always agents × tasks × ε × λ × trials; a paper's design rarely is (ReliabilityBench
runs its main grid at three ε and its fault ablation at one). A grid file lists blocks, and
the run is the union of their episodes, with one seed and one run directory:

    blocks:
      - name: main
        agents: [react, reflexion]
        models: [mock]
        suite: reliabilitybench
        epsilons: [0, 0.1, 0.2]
        profiles: [lambda0.0, lambda0.2]
        trials: 2
      - name: ablation
        agents: [react, reflexion]
        models: [mock]
        suite: reliabilitybench
        epsilons: [0]
        profiles: [ablation-timeout, ablation-ratelimit, ablation-partial, lambda0.2]
        trials: 2

An episode that two blocks both contain runs once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chaosproxy.errors import ChaosError
from chaosproxy.yamlfile import YamlFileError, parse_yaml, read_text

MAX_BLOCKS = 256
"""A grid names a paper's design in a handful of blocks; more is refused, not planned."""


class GridFileError(ChaosError, ValueError):
    """A grid file that cannot be used; the message names the file, the block and the field."""


class GridBlock(BaseModel):
    """One cross product of the run: its own agents, models, tasks, ε, profiles and trials."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    agents: list[str] = Field(min_length=1)
    models: list[str] = Field(default_factory=list)
    suite: str = "reliabilitybench"
    domains: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list, description="task-id glob patterns")
    epsilons: list[float] = Field(default_factory=lambda: [0.0], min_length=1)
    profiles: list[str] = Field(min_length=1)
    trials: int = Field(1, ge=1, le=1000)

    @field_validator("epsilons")
    @classmethod
    def _epsilon_range(cls, values: list[float]) -> list[float]:
        for value in values:
            if not 0 <= value <= 1:
                raise ValueError(f"{value} is outside [0, 1]")
        return list(dict.fromkeys(values))

    @field_validator("agents", "models", "profiles", "domains", "tasks")
    @classmethod
    def _unique(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(values))


class GridFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    blocks: list[GridBlock] = Field(min_length=1, max_length=MAX_BLOCKS)


def _where(location: tuple[int | str, ...], data: object) -> str:
    """'block 2 (ablation), field epsilons[0]' for a pydantic error location."""
    if len(location) >= 2 and location[0] == "blocks" and isinstance(location[1], int):
        index = location[1]
        name = ""
        if isinstance(data, dict):
            blocks = data.get("blocks")
            if isinstance(blocks, list) and index < len(blocks) and isinstance(blocks[index], dict):
                label = blocks[index].get("name")
                name = f" ({label})" if isinstance(label, str) else ""
        rest = location[2:]
        field = ".".join(str(part) for part in rest if isinstance(part, str))
        items = "".join(f"[{part}]" for part in rest if isinstance(part, int))
        return f"block {index + 1}{name}" + (f", field {field}{items}" if field else "")
    return "field " + ".".join(str(part) for part in location) if location else "the file"


def parse_grid(text: str, source: str) -> GridFile:
    """Validate a grid file's text; `source` names it in every error."""
    try:
        data = parse_yaml(text, source)
    except YamlFileError as bad:
        raise GridFileError(str(bad)) from None
    if not isinstance(data, dict):
        raise GridFileError(
            f"{source}: expected a mapping with `blocks:`, got {type(data).__name__}"
        )
    blocks = data.get("blocks")
    if isinstance(blocks, list) and len(blocks) > MAX_BLOCKS:
        raise GridFileError(f"{source}: {len(blocks)} blocks; a grid file has at most {MAX_BLOCKS}")
    try:
        grid = GridFile.model_validate(data)
    except ValidationError as invalid:
        problems = [
            f"{source}: {_where(tuple(error['loc']), data)}: {error['msg']}"
            for error in invalid.errors()
        ]
        raise GridFileError("\n".join(problems)) from None
    names = [block.name for block in grid.blocks]
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise GridFileError(f"{source}: block names must be unique; repeated: {repeated}")
    return grid


def load_grid(path: Path) -> GridFile:
    try:
        text = read_text(path, "grid")
    except YamlFileError as bad:
        raise GridFileError(str(bad)) from None
    return parse_grid(text, str(path))
