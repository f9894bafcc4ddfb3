"""Run repository code in a confined child Python process.

Why a child process: resource limits, a dropped uid and an audit hook can only be trusted
when the code they confine cannot undo them, and a runaway or crashing snippet must never
take the domain service down with it. The child's side is `sandbox_child.py`.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

_CHILD_SOURCE = (Path(__file__).with_name("sandbox_child.py")).read_text() + "\nmain()\n"
_INTERPRETER_FLAGS = ("-P", "-s", "-S", "-B", "-X", "utf8")
_CLEAN_ENV = {"PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"}

RunStatus = Literal["ok", "error", "timeout", "memory_exceeded", "crashed"]
TestStatus = Literal["passed", "failed", "error"]


class SandboxLimits(BaseModel):
    """Bounds of one sandbox run: CPU and wall-clock seconds, address space."""

    cpu_seconds: int = Field(default=2, ge=1, le=10)
    wall_seconds: float = Field(default=4.0, gt=0, le=30)
    memory_mb: int = Field(default=256, ge=64, le=2048)


DEFAULT_LIMITS = SandboxLimits()


class TraceFrame(BaseModel):
    file: str
    line: int
    function: str
    code: str


class SandboxError(BaseModel):
    type: str
    message: str
    traceback: list[TraceFrame] = Field(default_factory=list)


class TestOutcome(BaseModel):
    test_id: str
    file: str
    name: str
    status: TestStatus
    message: str = ""


class SandboxRun(BaseModel):
    """What one confined run produced. `status` is about the run, `error` about the code."""

    status: RunStatus
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: SandboxError | None = None
    tests: list[TestOutcome] = Field(default_factory=list)


def run_snippet(
    files: dict[str, str], code: str, limits: SandboxLimits = DEFAULT_LIMITS
) -> SandboxRun:
    """Execute `code` with the repository importable; `value` is the last expression's repr."""
    return _run({"mode": "snippet", "code": code}, files, limits)


def run_tests(
    files: dict[str, str], tests: list[str], limits: SandboxLimits = DEFAULT_LIMITS
) -> SandboxRun:
    """Import each test file and run its `test*` functions and `Test*` classes."""
    return _run({"mode": "tests", "tests": tests}, files, limits)


@lru_cache(maxsize=512)
def run_tests_cached(files: tuple[tuple[str, str], ...], tests: tuple[str, ...]) -> SandboxRun:
    """Verifiers re-judge the same state many times (once per journal entry): memoise them."""
    return run_tests(dict(files), list(tests))


def _run(request: dict[str, Any], files: dict[str, str], limits: SandboxLimits) -> SandboxRun:
    nonce = secrets.token_hex(16)
    payload = json.dumps({**request, "nonce": nonce, "files": files, "limits": limits.model_dump()})
    try:
        done = subprocess.run(
            [sys.executable, *_INTERPRETER_FLAGS, "-c", _CHILD_SOURCE],
            input=payload,
            capture_output=True,
            text=True,
            timeout=limits.wall_seconds,
            env=_CLEAN_ENV,
            cwd="/",
            start_new_session=True,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return SandboxRun(
            status="timeout",
            error=SandboxError(
                type="TimeoutError",
                message=f"execution exceeded the {limits.wall_seconds:g} s wall-clock time limit "
                "and was stopped",
            ),
        )
    return _parse(done, nonce, limits)


def _parse(done: subprocess.CompletedProcess[str], nonce: str, limits: SandboxLimits) -> SandboxRun:
    marker = "\n" + nonce
    position = done.stdout.rfind(marker)
    if position < 0:
        return _failure(done.returncode, done.stderr, limits)
    result = json.loads(done.stdout[position + len(marker) :])
    error = result.get("error")
    status: RunStatus = "ok"
    if error is not None:
        status = "memory_exceeded" if error["type"] == "MemoryError" else "error"
    return SandboxRun(status=status, **result)


def _failure(returncode: int, stderr: str, limits: SandboxLimits) -> SandboxRun:
    if returncode in (-24, -9):
        return SandboxRun(
            status="timeout",
            error=SandboxError(
                type="TimeoutError",
                message=f"execution exceeded the {limits.cpu_seconds} s CPU-time limit "
                "and was stopped",
            ),
        )
    if "MemoryError" in stderr:
        return SandboxRun(
            status="memory_exceeded",
            error=SandboxError(
                type="MemoryError", message=f"memory limit of {limits.memory_mb} MB exceeded"
            ),
        )
    tail = stderr.strip().splitlines()[-1:] or ["no output"]
    return SandboxRun(
        status="crashed",
        error=SandboxError(
            type="SandboxCrash",
            message=f"the sandboxed process ended without a result (exit code {returncode}): "
            f"{tail[0][:300]}",
        ),
    )
