"""The import directions DESIGN.md promises, checked on the source (ast), not by convention.

The fault engine's own purity is checked in tests/faults/test_fault_contracts.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def imported_modules(folder: Path) -> dict[str, set[str]]:
    """file -> absolute module names it imports."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(REPO))] = names
    return found


def offenders(folder: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    bad = []
    for path, names in imported_modules(REPO / folder).items():
        for name in names:
            if name.startswith(forbidden) and not name.startswith(allowed):
                bad.append(f"{path} imports {name}")
    return bad


@pytest.mark.parametrize(
    ("folder", "forbidden", "allowed"),
    [
        (
            "domains",
            ("chaosproxy.proxy", "chaosproxy.runner", "chaosproxy.scoring", "chaosproxy.agents"),
            (),
        ),
        (
            "agents",
            ("chaosproxy.proxy", "chaosproxy.runner", "chaosproxy.scoring", "chaosproxy.domains."),
            ("chaosproxy.domains.kit",),
        ),
        (
            "chaosproxy/scoring",
            ("chaosproxy.proxy", "chaosproxy.runner", "chaosproxy.domains", "aiohttp", "httpx"),
            (),
        ),
    ],
)
def test_import_directions(
    folder: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]
) -> None:
    assert offenders(folder, forbidden, allowed) == []
