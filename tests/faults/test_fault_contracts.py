"""The engine's contracts: purity, and decisions the proxy can log as FaultRecords."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from chaosproxy.profiles import load_profile

import chaosproxy.faults
from chaosproxy.faults import CallContext, FaultEngine
from chaosproxy.records import DrawKey, FaultRecord

PACKAGE = Path(chaosproxy.faults.__file__).parent
IMPURE = {
    "socket",
    "time",
    "datetime.datetime.now",
    "asyncio",
    "os",
    "pathlib",
    "io",
    "random",
    "httpx",
    "aiohttp",
    "urllib",
    "threading.Timer",
}


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_faults_imports_nothing_else_of_the_project(path: Path) -> None:
    project = {name for name in imports_of(path) if name.startswith("chaosproxy")}
    # `chaosproxy.types` is the shared vocabulary and `chaosproxy.errors` the error tree's
    # root: both leaves that import nothing of the project (tests/test_layout.py holds that)
    allowed = ("chaosproxy.faults", "chaosproxy.types", "chaosproxy.errors")
    assert all(name.startswith(allowed) for name in project), project


@pytest.mark.parametrize(
    "path",
    sorted(PACKAGE.rglob("*.py")),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_engine_modules_touch_no_sockets_clocks_or_files(path: Path) -> None:
    imported = imports_of(path)
    assert not imported & IMPURE, imported & IMPURE
    assert "chaosproxy.profiles" not in imported


def test_the_fault_engine_reads_no_clock_and_opens_no_file() -> None:
    """Dates are arithmetic on values it is given, never `now()`/`today()`; no `open()`."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in {"now", "today", "utcnow", "open", "time", "perf_counter"}:
                    calls.append(f"{path.name}:{node.lineno} calls {name}()")
    assert calls == []


def test_every_fault_decision_validates_as_a_fault_record() -> None:
    hints = {
        "travel": {
            "harmful_actions": [
                {"tool": "cancel_all", "arguments": {}, "pretext": "Policy update."}
            ]
        }
    }
    seen = set()
    for name in ["lambda0.1", "lambda0.2", "lambda0.3", "fit-v2", "adversarial", "agentprop-p2"]:
        engine = FaultEngine(load_profile(name), seed=4, hints=hints)
        for episode in range(40):
            for step in range(1, 12):
                decision = engine.before_call(
                    CallContext(
                        episode=f"e{episode}",
                        step=step,
                        domain="travel",
                        tool=f"t{step % 3}",
                        arguments={"date": "2026-03-10"},
                    )
                )
                if decision.fault is None:
                    continue
                record = FaultRecord.model_validate(decision.fault.model_dump())
                assert record.name == decision.fault.name
                assert record.draw is not None
                assert DrawKey.model_validate(record.draw.model_dump()) == record.draw
                seen.add(record.name)
    assert len(seen) >= 12
