"""Run repository code in kernel-confined child processes.

Why child processes: the code comes from the agent under test and must be refused by the
kernel, not by Python (which the code itself could patch). The supervisor child
(`sandbox_child.py`) enters new namespaces and forks one worker per snippet or test file; each
worker is confined by `sandbox_confine.py` (Landlock, seccomp, rlimits, an unprivileged uid)
before repository code runs. The supervisor alone writes the result, on its stdout, which no
worker holds; how a worker ended (killed, out of time) is measured, never taken from it.
Where the kernel lacks what the confinement needs, `SandboxUnavailable` is raised: code never
runs unconfined.
"""

from __future__ import annotations

import ast
import ctypes.util
import fcntl
import importlib.util
import json
import marshal
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

_HERE = Path(__file__).parent
_CHILD_PATH = _HERE / "sandbox_child.py"
# The child compiles nothing: the supervisor's code arrives marshalled ahead of the request.
_BOOTSTRAP = (
    "import marshal, sys\n"
    "data = sys.stdin.buffer.read()\n"
    "size = int.from_bytes(data[:8], 'little')\n"
    "exec(marshal.loads(data[8 : 8 + size]))\n"
    "main(data[8 + size :])\n"
)
_INTERPRETER_FLAGS = ("-I", "-S", "-B", "-X", "utf8")
_CLEAN_ENV = {"PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"}
REQUIRED_LANDLOCK_ABI = 1
SUPERVISOR_SLACK_SECONDS = 3.0


class SandboxUnavailable(RuntimeError):
    """The kernel lacks a feature the sandbox needs; no code was run."""


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
    files: dict[str, str],
    tests: list[str],
    limits: SandboxLimits = DEFAULT_LIMITS,
    hidden: dict[str, str] | None = None,
) -> SandboxRun:
    """Import each test file and run its `test*` functions and `Test*` classes.

    `hidden` test files (path -> source, run after `tests`) are the grader's: they are not in
    the repository's copy, and each runs in a process that holds no agent code, reaching the
    agent's modules only through `sandbox_link` (plain values, compared there)."""
    hidden = hidden or {}
    request = {"mode": "tests", "tests": [*tests, *sorted(hidden)], "hidden_units": sorted(hidden)}
    return _run(request, files, limits, sources={**files, **hidden}, hidden=hidden)


@lru_cache(maxsize=512)
def run_tests_cached(
    files: tuple[tuple[str, str], ...],
    tests: tuple[str, ...],
    hidden: tuple[tuple[str, str], ...] = (),
) -> SandboxRun:
    """Verifiers re-judge the same state many times (once per journal entry): memoise them."""
    return run_tests(dict(files), list(tests), hidden=dict(hidden))


@lru_cache(maxsize=1)
def _confine_settings() -> dict[str, Any]:
    """Where the supervisor finds the kernel bindings, and what workers may read: the stdlib."""
    origins = {name: importlib.util.find_spec(name) for name in ("landlockpy", "pyseccomp")}
    missing = [name for name, spec in origins.items() if spec is None or spec.origin is None]
    if missing:
        raise SandboxUnavailable(
            f"the coding sandbox cannot run code: {', '.join(missing)} is not installed "
            "(pip install chaosproxy on Linux installs it)"
        )
    paths = sorted(
        {
            str(Path(str(spec.origin)).parents[1 if spec.submodule_search_locations else 0])
            for spec in origins.values()
            if spec is not None
        }
    )
    libraries = {
        name: found
        for name in ("c", "seccomp")
        if (found := ctypes.util.find_library(name)) is not None
    }
    readable = [sysconfig.get_paths()["stdlib"]]
    return {
        "module": str(_HERE / "sandbox_confine.py"),
        "link": str(_HERE / "sandbox_link.py"),
        "paths": paths,
        "libraries": libraries,
        "readable": readable,
        "min_abi": REQUIRED_LANDLOCK_ABI,
    }


@lru_cache(maxsize=1)
def _child_code() -> bytes:
    code = compile(_CHILD_PATH.read_text() + "\n", str(_CHILD_PATH), "exec")
    data = marshal.dumps(code)
    return len(data).to_bytes(8, "little") + data


def _run(
    request: dict[str, Any],
    files: dict[str, str],
    limits: SandboxLimits,
    sources: dict[str, str] | None = None,
    hidden: dict[str, str] | None = None,
) -> SandboxRun:
    """The copy's directory is the service's to remove: a supervisor killed at the deadline
    cannot clean up after itself."""
    copy = tempfile.mkdtemp(prefix="chaos-sandbox-")
    secret = _hidden_file(hidden) if hidden else None
    try:
        os.chmod(copy, 0o755)
        return _supervise(request, files, limits, copy, sources or files, secret)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        if secret is not None:
            os.close(secret)


def _hidden_file(hidden: dict[str, str]) -> int:
    """The hidden tests in a sealed memory file, never in the supervisor's request: every
    worker is a fork of the supervisor, so whatever its memory holds, agent code can read.
    Only a grader receives this descriptor, and reads it once it is confined; every other
    worker closes it before any repository code runs."""
    fd = os.memfd_create("sandbox-hidden-tests", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    data = memoryview(json.dumps(hidden).encode())
    while data:
        data = data[os.write(fd, data) :]
    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def _supervise(
    request: dict[str, Any],
    files: dict[str, str],
    limits: SandboxLimits,
    copy: str,
    sources: dict[str, str],
    secret: int | None = None,
) -> SandboxRun:
    confine = {**_confine_settings(), "min_abi": REQUIRED_LANDLOCK_ABI}
    payload = json.dumps(
        {
            **request,
            "files": files,
            "limits": limits.model_dump(),
            "confine": confine,
            "copy": copy,
            "hidden_fd": secret,
        }
    )
    try:
        done = subprocess.run(
            [sys.executable, *_INTERPRETER_FLAGS, "-c", _BOOTSTRAP],
            input=_child_code() + payload.encode(),
            capture_output=True,
            timeout=limits.wall_seconds + SUPERVISOR_SLACK_SECONDS,
            env=_CLEAN_ENV,
            cwd="/",
            start_new_session=True,
            pass_fds=() if secret is None else (secret,),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _timeout(f"{limits.wall_seconds:g} s wall-clock")
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return _crash(
            f"the sandbox supervisor ended without a result "
            f"(exit code {done.returncode}): {tail[0][:300]}"
        )
    if "unavailable" in answer:
        raise SandboxUnavailable(
            f"the coding sandbox cannot run code on this machine: {answer['unavailable']}"
        )
    runs: list[dict[str, Any]] = answer["runs"]
    if request["mode"] == "snippet":
        return _snippet_result(runs[0], limits)
    return _tests_result(runs, sources, limits)


def _timeout(which: str) -> SandboxRun:
    return SandboxRun(
        status="timeout",
        error=SandboxError(
            type="TimeoutError",
            message=f"execution exceeded the {which} time limit and was stopped",
        ),
    )


def _crash(message: str) -> SandboxRun:
    return SandboxRun(status="crashed", error=SandboxError(type="SandboxCrash", message=message))


def _ended(run: dict[str, Any], limits: SandboxLimits) -> SandboxRun | None:
    """What the supervisor measured, which overrides anything the worker said."""
    if run["timed_out"]:
        return _timeout(f"{limits.wall_seconds:g} s wall-clock")
    if run["oversized"]:
        return _crash("the sandboxed process wrote more output than the sandbox accepts")
    code = run["exit"]
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return _timeout(f"{limits.cpu_seconds} s CPU-time")
    if code != 0 and "MemoryError" in run["diagnostics"]:
        return SandboxRun(
            status="memory_exceeded",
            error=SandboxError(
                type="MemoryError", message=f"memory limit of {limits.memory_mb} MB exceeded"
            ),
        )
    if code != 0 or not run["report"]:
        reason = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        tail = run["diagnostics"].strip().splitlines()[-1:] or ["no output"]
        return _crash(f"the sandboxed process ended without a result ({reason}): {tail[0][:300]}")
    return None


def _report(run: dict[str, Any]) -> dict[str, Any]:
    """The worker's report, with text that is not valid Unicode escaped (`\\ud800`): what
    the code printed is the snippet's result, and a reply must be encodable. A report nested
    deeper than the parser's stack is malformed (a ValueError), like any other."""
    try:
        report = _escaped(json.loads(run["report"]))
    except RecursionError:
        raise ValueError("the report is nested too deep") from None
    if not isinstance(report, dict):
        raise ValueError("the report is not an object")
    return report


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    return value


def _snippet_result(run: dict[str, Any], limits: SandboxLimits) -> SandboxRun:
    ended = _ended(run, limits)
    if ended is not None:
        return ended
    try:
        report = _report(run)
        result = SandboxRun(
            status="ok",
            stdout=report.get("stdout", ""),
            stderr=report.get("stderr", ""),
            value=report.get("value"),
            error=report.get("error"),
        )
    except (ValueError, TypeError, ValidationError):
        return _crash("the sandboxed process returned a malformed result")
    if result.error is not None:
        result.status = "memory_exceeded" if result.error.type == "MemoryError" else "error"
    return result


def _declared_tests(source: str) -> list[str]:
    """The tests a file declares, read from its syntax by the service (as the runner collects
    them): a worker that reports fewer cannot make the missing ones disappear."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.extend(
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test")
            )
    return names


def _file_outcomes(run: dict[str, Any], source: str, limits: SandboxLimits) -> SandboxRun:
    """One test file's outcomes, filed under that file, with every declared test accounted for."""
    path = run["unit"]
    ended = _ended(run, limits)
    if ended is None:
        try:
            reported: dict[str, TestOutcome] = {}
            for item in _report(run).get("tests", []):
                outcome = TestOutcome.model_validate(
                    {**item, "file": path, "test_id": f"{path}::{item['name']}"}
                )
                reported.setdefault(outcome.name, outcome)
        except (ValueError, TypeError, KeyError, AttributeError, ValidationError):
            ended = _crash("the sandboxed process returned a malformed result")
    if ended is not None:
        message = ended.error.message if ended.error else ended.status
        ended.tests = [
            TestOutcome(
                test_id=f"{path}::<collection>",
                file=path,
                name="<collection>",
                status="error",
                message=message,
            )
        ]
        return ended
    collection_failed = "<collection>" in reported
    for name in _declared_tests(source):
        if name not in reported and not collection_failed:
            reported[name] = TestOutcome(
                test_id=f"{path}::{name}",
                file=path,
                name=name,
                status="error",
                message="no outcome was reported for this test: its process ended or its "
                "report was altered before the test ran",
            )
    return SandboxRun(status="ok", tests=list(reported.values()))


def _tests_result(
    runs: list[dict[str, Any]], files: dict[str, str], limits: SandboxLimits
) -> SandboxRun:
    """Each test file ran in its own worker: its outcomes can only be about that file."""
    result = SandboxRun(status="ok")
    for run in runs:
        found = _file_outcomes(run, files.get(run["unit"], ""), limits)
        result.tests.extend(found.tests)
        if found.status != "ok":
            result.status, result.error = found.status, found.error
    return result
