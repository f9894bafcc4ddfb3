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


def starts_private_environment(path: Path) -> bool:
    """Imports the private environment: its module, or its class from the proxy package."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import) and any(
            alias.name == "chaosproxy.proxy.environment" for alias in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "chaosproxy.proxy.environment":
                return True
            names = {alias.name for alias in node.names}
            if node.module == "chaosproxy.proxy" and names & {"environment", "Environment"}:
                return True
    return False


def test_one_way_to_start_an_environment() -> None:
    """`up`, the runner and the pytest plugin start environments only through the public
    `chaosproxy.Environment`: the private one behind it is imported by the API alone."""
    importers = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "chaosproxy").rglob("*.py")
        if starts_private_environment(path)
    )
    assert importers == ["chaosproxy/api/environment.py"]
    for user in (
        "chaosproxy/commands/up.py",
        "chaosproxy/runner/run.py",
        "chaosproxy/pytest_plugin.py",
    ):
        assert "chaosproxy.api" in imported_modules_of(REPO / user), user


def imported_modules_of(path: Path) -> set[str]:
    return imported_modules(path.parent)[str(path.relative_to(REPO))]
