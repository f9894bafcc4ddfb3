"""The sandbox's supervisor and worker: runs inside `python -I -S -B` with a clean environment.

The supervisor reads one JSON request on stdin, enters new network/IPC/UTS/PID namespaces,
writes the repository's copy to a private directory and forks one worker per unit of work
(the snippet, or each test file). Each worker closes every descriptor but its own report pipe,
then the kernel confines it (`sandbox_confine.py`: rlimits, an unprivileged uid, Landlock,
seccomp) before any repository code runs. The supervisor, which never runs untrusted code,
measures how each worker ended and alone writes the result, on its stdout, which no worker
holds. The audit hook and import allowlist below only turn refusals into clear messages: the
kernel is the boundary. This file is stdlib-only: it cannot import the project.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import linecache
import os
import select
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from typing import Any

PRELOADED = (
    "abc",
    "ast",
    "base64",
    "binascii",
    "bisect",
    "calendar",
    "collections",
    "collections.abc",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "encodings.ascii",
    "encodings.cp1252",
    "encodings.idna",
    "encodings.latin_1",
    "encodings.utf_16",
    "encodings.utf_32",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "itertools",
    "json",
    "logging",
    "math",
    "numbers",
    "operator",
    "random",
    "re",
    "_strptime",
    "secrets",
    "shlex",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "socket",
    "textwrap",
    "time",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib.parse",
    "uuid",
    "warnings",
    "zlib",
)
REFUSED_PREFIXES = (
    "os.",
    "subprocess.",
    "socket.",
    "shutil.",
    "glob.",
    "ctypes.",
    "pty.",
    "mmap.",
    "resource.",
    "urllib.",
    "http.",
    "ftplib.",
    "smtplib.",
    "poplib.",
    "imaplib.",
    "nntplib.",
    "telnetlib.",
    "webbrowser.",
    "signal.",
    "fcntl.",
    "syslog.",
    "_posixsubprocess.",
    "sqlite3.load_extension",
    "sqlite3.enable_load_extension",
    "tempfile.",
    "sys.addaudithook",
    "sys.settrace",
    "sys.setprofile",
)
WHAT = {
    "os.system": "running a shell command",
    "subprocess.Popen": "starting a process",
    "os.exec": "replacing the process",
    "os.posix_spawn": "starting a process",
    "os.spawn": "starting a process",
    "os.fork": "forking",
    "os.forkpty": "forking",
    "os.kill": "signalling a process",
    "os.killpg": "signalling a process",
    "os.listdir": "listing a host directory",
    "os.scandir": "listing a host directory",
    "os.remove": "deleting a host file",
    "os.rename": "renaming a host file",
    "os.mkdir": "creating a host directory",
    "os.rmdir": "removing a host directory",
    "os.chdir": "changing directory",
    "os.putenv": "changing the environment",
}
OUTPUT_LIMIT = 10_000
MESSAGE_LIMIT = 2_000
REPORT_LIMIT = 4_000_000
REPORT_FD = 3
CONFINED = b"C"  # the worker's first byte, written once it is confined
GRADER_MARGIN_SECONDS = 0.3  # the grader stops waiting for agent code this early, to report


class SandboxViolation(PermissionError):
    """Raised in place of any operation that would reach outside the sandbox."""


_COPY: list[str] = []  # the worker's copy of the repository (its root), once it runs there
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _reads_copy(args: tuple[Any, ...]) -> bool:
    """An open() that only reads a file of the repository's copy (what Landlock allows)."""
    path, mode, flags = (*args, None, None, None)[:3]
    if isinstance(mode, str):
        writes = any(letter in mode for letter in "wax+")
    else:
        writes = not isinstance(flags, int) or bool(flags & _WRITE_FLAGS)
    if writes or not _COPY or not isinstance(path, str | bytes):
        return False
    # The worker's root is the copy (chroot), so the copy's files are named relatively.
    name = os.path.normpath(os.fsdecode(path))
    return not os.path.isabs(name) and name != ".." and not name.startswith(".." + os.sep)


def _refusal(event: str, args: tuple[Any, ...]) -> str | None:
    if event == "open":
        if _reads_copy(args):
            return None
        return (
            f"open({args[0]!r}) refused: the sandbox has no host file system and nothing in it "
            "is writable; the repository's own files can be read by relative path (e.g. "
            "open('README.md')) or imported as modules (use write_file to change them)"
        )
    if event == "sqlite3.connect":
        database = args[0] if args else None
        if database in (":memory:", b":memory:", ""):
            return None
        return (
            f"sqlite3.connect({database!r}) refused: only in-memory databases "
            "(sqlite3.connect(':memory:')) are allowed in the sandbox"
        )
    if event.startswith("socket."):
        return f"{event} refused: the sandbox has no network access"
    if event.startswith(REFUSED_PREFIXES):
        what = next((text for name, text in WHAT.items() if event.startswith(name)), None)
        return f"{event} refused: {what or 'host access'} is not allowed in the sandbox"
    return None


class _RepoImporter:
    """Serves repository files from memory; refuses modules the sandbox does not offer."""

    def __init__(self, files: dict[str, str]) -> None:
        self.modules: dict[str, tuple[str, str | None]] = {}
        for path, source in files.items():
            if not path.endswith(".py"):
                continue
            parts = path[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for depth in range(1, len(parts)):
                self.modules.setdefault(
                    ".".join(parts[:depth]), (f"{'/'.join(parts[:depth])}/", None)
                )
            if parts:
                self.modules[".".join(parts)] = (path, source)
            linecache.cache[path] = (len(source), None, source.splitlines(True), path)

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        loader: Any = self  # a duck-typed loader: importlib.abc would cost 60 ms of imports
        if fullname == "pytest":
            return importlib.util.spec_from_loader(fullname, loader, origin="<pytest shim>")
        if fullname in self.modules:
            origin, source = self.modules[fullname]
            is_package = source is None or origin.endswith("__init__.py")
            return importlib.util.spec_from_loader(
                fullname, loader, origin=origin, is_package=is_package
            )
        raise ModuleNotFoundError(
            f"module {fullname!r} is not available in the sandbox (standard modules offered: "
            f"{', '.join(PRELOADED)}; plus the repository's own modules)",
            name=fullname,
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = SAFE_BUILTINS
        if module.__name__ == "pytest":
            _fill_pytest_shim(module)
            return
        origin, source = self.modules[module.__name__]
        if source is None:
            return
        module.__file__ = origin
        exec(compile(source, origin, "exec"), module.__dict__)


def _guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    refusal = _refusal("open", (file, mode, None))
    if refusal is not None:
        raise SandboxViolation(f"sandbox: {refusal}")
    return open(file, mode, *args, **kwargs)


def _safe_builtins() -> dict[str, Any]:
    names = dict(vars(builtins))
    for name in ("input", "breakpoint", "help", "exit", "quit"):
        names.pop(name, None)
    names["open"] = _guarded_open
    return names


SAFE_BUILTINS = _safe_builtins()


class _Raises:
    def __init__(self, expected: type[BaseException], match: str | None) -> None:
        self.expected = expected
        self.match = match
        self.value: BaseException | None = None

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if value is None:
            raise AssertionError(f"DID NOT RAISE {self.expected.__name__}")
        if not isinstance(value, self.expected):
            return False
        if self.match is not None:
            import re

            if not re.search(self.match, str(value)):
                raise AssertionError(f"{str(value)!r} does not match {self.match!r}")
        self.value = value
        return True


def _fill_pytest_shim(module: types.ModuleType) -> None:
    """Enough of pytest for plain test modules: raises, approx, fail."""

    def raises(expected: type[BaseException], match: str | None = None) -> _Raises:
        return _Raises(expected, match)

    def approx(expected: float, rel: float = 1e-6, abs: float = 1e-12) -> Any:
        class Approx:
            def __eq__(self, other: object) -> bool:
                return isinstance(other, int | float) and builtins.abs(other - expected) <= max(
                    rel * builtins.abs(expected), abs
                )

            def __repr__(self) -> str:
                return f"approx({expected!r})"

        return Approx()

    def fail(reason: str = "") -> None:
        raise AssertionError(reason or "failed")

    module.raises = raises  # type: ignore[attr-defined]
    module.approx = approx  # type: ignore[attr-defined]
    module.fail = fail  # type: ignore[attr-defined]


def _clip(text: str) -> str:
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + "\n…[output truncated]"


def _error(
    exc: BaseException, keep: Callable[[str], bool], limits: dict[str, Any]
) -> dict[str, Any]:
    frames = [
        {"file": f.filename, "line": f.lineno, "function": f.name, "code": f.line or ""}
        for f in traceback.extract_tb(exc.__traceback__)
        if keep(f.filename)
    ]
    message = str(exc)
    if isinstance(exc, MemoryError):
        message = f"memory limit of {limits['memory_mb']} MB exceeded" + (
            f": {message}" if message else ""
        )
    elif isinstance(exc, AssertionError) and not message and frames:
        message = f"assert failed: {frames[-1]['code']}"
    return {
        "type": type(exc).__name__,
        "message": message[:MESSAGE_LIMIT],
        "traceback": frames[-8:],
    }


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved


def _run_snippet(code: str, keep: Callable[[str], bool], limits: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"value": None, "error": None}
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": SAFE_BUILTINS}
    with _captured() as (out, err):
        try:
            tree = ast.parse(code, "<snippet>")
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr):
                tree.body.pop()
            exec(compile(tree, "<snippet>", "exec"), namespace)
            if isinstance(last, ast.Expr):
                value = eval(compile(ast.Expression(last.value), "<snippet>", "eval"), namespace)
                result["value"] = None if value is None else _clip(repr(value))
        except BaseException as exc:
            result["error"] = _error(exc, keep, limits)
    result["stdout"], result["stderr"] = _clip(out.getvalue()), _clip(err.getvalue())
    return result


def _collect(module: types.ModuleType) -> list[tuple[str, Callable[[], Any]]]:
    tests: list[tuple[str, Callable[[], Any]]] = []
    for name, value in list(vars(module).items()):
        if name.startswith("test") and isinstance(value, types.FunctionType):
            if value.__module__ == module.__name__:
                tests.append((name, value))
        elif name.startswith("Test") and isinstance(value, type):
            for method in [m for m in vars(value) if m.startswith("test")]:
                tests.append((f"{name}::{method}", _bound(value, method)))
    return tests


def _bound(cls: type, method: str) -> Callable[[], Any]:
    def run() -> Any:
        import unittest

        if issubclass(cls, unittest.TestCase):
            case = cls(method)
            case.setUp()
            try:
                return getattr(case, method)()
            finally:
                case.tearDown()
        return getattr(cls(), method)()

    return run


def _run_tests(
    paths: list[str], keep: Callable[[str], bool], limits: dict[str, Any]
) -> dict[str, Any]:
    outcomes: list[dict[str, Any]] = []
    with _captured():
        for path in paths:
            name = path[:-3].replace("/", ".")
            try:
                module = importlib.import_module(name)
            except BaseException as exc:
                error = _error(exc, keep, limits)
                outcomes.append(
                    {
                        "test_id": f"{path}::<collection>",
                        "file": path,
                        "name": "<collection>",
                        "status": "error",
                        "message": f"{error['type']}: {error['message']}",
                    }
                )
                continue
            for test_name, function in _collect(module):
                outcome = {
                    "test_id": f"{path}::{test_name}",
                    "file": path,
                    "name": test_name,
                    "status": "passed",
                    "message": "",
                }
                try:
                    function()
                except AssertionError as exc:
                    error = _error(exc, keep, limits)
                    outcome.update(status="failed", message=error["message"])
                except BaseException as exc:
                    error = _error(exc, keep, limits)
                    outcome.update(status="error", message=f"{error['type']}: {error['message']}")
                outcomes.append(outcome)
    return {"tests": outcomes}


def _enter_repository(files: dict[str, str]) -> None:
    """The worker's own setup, after confinement: the repository importable, the clear
    messages of the audit hook on."""
    _COPY.append(os.path.realpath(os.getcwd()))
    sys.meta_path.insert(0, _RepoImporter(files))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        message = _refusal(event, args)
        if message is not None:
            raise SandboxViolation(f"sandbox: {message}")

    sys.addaudithook(hook)


def _work(request: dict[str, Any], unit: str | None) -> dict[str, Any]:
    """The worker's own code, after confinement: what the code under test did, as it says."""
    files: dict[str, str] = request["files"]
    limits: dict[str, Any] = request["limits"]
    _enter_repository(files)

    def keep(filename: str) -> bool:
        return filename in files or filename == "<snippet>"

    if unit is None:
        return _run_snippet(request["code"], keep, limits)
    return _run_tests([unit], keep, limits)


def _confine(
    confinement: Any, request: dict[str, Any], fds: list[int], diagnostics: int, uid: int
) -> None:
    """In a forked child: the kernel confines the process, `fds` become 3, 4, ... and every
    other descriptor is closed. Nothing untrusted has run yet."""
    import fcntl

    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 256) for fd in fds]
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(diagnostics, 1)
    os.dup2(diagnostics, 2)
    # The copy becomes the whole file system: Landlock does not govern stat(2), so without
    # this any host path's existence, size and times could be read.
    os.chdir(request["_copy"])
    os.chroot(".")
    confinement.apply(request["limits"], uid)  # closes its ruleset, which may hold 3, 4, ...
    for target, fd in enumerate(moved, start=REPORT_FD):
        os.dup2(fd, target)
    os.closerange(REPORT_FD + len(fds), 1 << 16)


def _worker(confinement: Any, request: dict[str, Any], unit: str | None, report: int) -> None:
    """Runs in the forked child: confine, drop every descriptor but the report pipe, run."""
    try:
        _confine(confinement, request, [report], request["_diagnostics"], request["_uid"])
        os.write(REPORT_FD, CONFINED)
    except BaseException as exc:
        os.write(REPORT_FD, f"confinement failed: {exc!r}".encode())
        os._exit(70)
    _write_all(REPORT_FD, json.dumps(_work(request, unit)).encode())
    os._exit(0)


def _module_names(files: dict[str, str]) -> set[str]:
    names: set[str] = set()
    for path in files:
        if path.endswith(".py"):
            parts = path[:-3].split("/")
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            names.update(".".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return {name for name in names if name}


def _agent_worker(
    confinement: Any, request: dict[str, Any], inbox: int, outbox: int, diagnostics: int
) -> None:
    """The agent's side of a hidden test: imports the agent's modules and answers the
    grader's requests with values. It holds no report pipe: only the two link pipes."""
    try:
        _confine(confinement, request, [inbox, outbox], diagnostics, request["_uid"])
        os.write(REPORT_FD + 1, CONFINED)
    except BaseException as exc:
        os.write(REPORT_FD + 1, f"confinement failed: {exc!r}".encode())
        os._exit(70)
    link = request["_link"]
    _enter_repository(request["files"])
    modules = _module_names(request["files"])
    with _captured():
        link.serve(REPORT_FD, REPORT_FD + 1, importlib.import_module, modules)
    os._exit(0)


def _source(files: dict[str, str], module: str) -> str | None:
    path = module.replace(".", "/")
    return files.get(f"{path}.py", files.get(f"{path}/__init__.py"))


def _grader(
    confinement: Any,
    request: dict[str, Any],
    unit: str,
    fds: list[int],
    diagnostics: int,
) -> None:
    """A hidden test file, run with no agent code in this process: the agent's modules are
    `RemoteModule`s speaking to `_agent_worker`; the report pipe is this process's alone."""
    link = request["_link"]
    try:
        _confine(confinement, request, fds, diagnostics, request["_uid"] + (1 << 16))
        os.write(REPORT_FD, CONFINED)
    except BaseException as exc:
        os.write(REPORT_FD, f"confinement failed: {exc!r}".encode())
        os._exit(70)
    outbox, inbox = REPORT_FD + 1, REPORT_FD + 2
    deadline = float(request["_deadline"])
    try:
        first = link.read_exactly(inbox, len(CONFINED), deadline)
    except link.AgentUnavailable as exc:
        first = str(exc).encode()
    if first != CONFINED:
        rest = os.read(inbox, 4096) if first else b""
        reason = (first + rest).decode("utf-8", "replace")
        _write_all(REPORT_FD, json.dumps({"unconfined": reason}).encode())
        os._exit(0)
    channel = link.Link(outbox, inbox, deadline)
    files: dict[str, str] = request["files"]
    modules = _module_names(files)
    for name in sorted(modules):
        if name not in sys.modules and name.partition(".")[0] not in ("pytest", "hidden_tests"):
            sys.modules[name] = link.RemoteModule(channel, name, modules, _source(files, name))
    hidden = {unit: _hidden_source(REPORT_FD + 3, unit)}
    _COPY.append(os.path.realpath(os.getcwd()))
    sys.meta_path.insert(0, _RepoImporter(hidden))

    def keep(filename: str) -> bool:
        return filename in hidden

    report = _run_tests([unit], keep, request["limits"])
    _write_all(REPORT_FD, json.dumps(report).encode())
    os._exit(0)


def _hidden_source(fd: int, unit: str) -> str:
    """The hidden file's source, from the service's sealed memory file: read only here, in a
    confined grader, so no process that runs agent code ever held it."""
    chunks: list[bytes] = []
    while chunk := os.pread(fd, 1 << 20, sum(map(len, chunks))):
        chunks.append(chunk)
    os.close(fd)
    source = json.loads(b"".join(chunks))[unit]
    if not isinstance(source, str):
        raise TypeError(f"no hidden source for {unit}")
    return source


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _supervise(pid: int, report: int, deadline: float) -> dict[str, Any]:
    """Collect a worker's report and measure how it ended; kill it at the deadline."""
    pidfd = os.pidfd_open(pid)
    chunks: list[bytes] = []
    size, exited, timed_out, oversized = 0, False, False, False
    poller = select.poll()
    poller.register(report, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    open_report = True
    while open_report or not exited:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for fd, _ in poller.poll(remaining * 1000):
            if fd == pidfd:
                exited = True
                poller.unregister(pidfd)
            elif fd == report:
                chunk = os.read(report, 65536)
                if not chunk:
                    open_report = False
                    poller.unregister(report)
                    continue
                size += len(chunk)
                if size > REPORT_LIMIT:
                    oversized = True
                    break
                chunks.append(chunk)
        if oversized:
            break
        if exited and open_report:
            with contextlib.suppress(BlockingIOError):
                os.set_blocking(report, False)
                while chunk := os.read(report, 65536):
                    chunks.append(chunk)
            open_report = False
    if not exited:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    text = b"".join(chunks).decode("utf-8", "replace")
    return {
        "report": None if oversized or timed_out else text,
        "oversized": oversized,
        "timed_out": timed_out,
        "exit": os.waitstatus_to_exitcode(status),
    }


def _grade(
    confinement: Any,
    request: dict[str, Any],
    unit: str,
    result: int,
    diagnostics: int,
    deadline: float,
) -> dict[str, Any]:
    """A hidden test file: the agent's worker and the grader, linked by two pipes. Only the
    grader holds the report pipe; the agent's worker is killed once the grader has ended."""
    agent_diagnostics = os.memfd_create("sandbox-agent-diagnostics")
    to_agent, from_grader = os.pipe()[::-1]
    to_grader, from_agent = os.pipe()[::-1]
    agent = os.fork()
    if agent == 0:
        os.close(result)
        os.close(to_agent)
        os.close(from_agent)
        _agent_worker(confinement, request, from_grader, to_grader, agent_diagnostics)
    os.close(from_grader)
    os.close(to_grader)
    agent_pidfd = os.pidfd_open(agent)
    read, write = os.pipe()
    grader = os.fork()
    if grader == 0:
        os.close(read)
        os.close(result)
        os.close(agent_pidfd)
        fds = [write, to_agent, from_agent, request["hidden_fd"]]
        _grader(confinement, request, unit, fds, diagnostics)
    for fd in (write, to_agent, from_agent):
        os.close(fd)
    record = _supervise(grader, read, deadline)
    os.close(read)
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(agent_pidfd, signal.SIGKILL)
    os.waitpid(agent, 0)
    os.close(agent_pidfd)
    os.close(agent_diagnostics)
    raw = record["report"]
    if raw is not None and raw.startswith(CONFINED.decode()):
        with contextlib.suppress(ValueError):
            report = json.loads(raw[len(CONFINED) :])
            if isinstance(report, dict) and "unconfined" in report:
                record["report"] = str(report["unconfined"]) or "the agent's worker ended"
    return record


def _start_init() -> int:
    """PID 1 of the new PID namespace: keeps it alive while workers come and go."""
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(write)
        os.closerange(3, read)
        os.closerange(read + 1, 1 << 16)
        os.read(read, 1)
        os._exit(0)
    os.close(read)
    return write


def _write_copy(files: dict[str, str], root: str) -> str:
    """The repository's copy the worker may read, in the service's fresh directory: readable
    by everyone, writable by no worker."""
    for path, content in files.items():
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chmod(target, 0o644)
    return root


def _unit_record(unit: str | None, record: dict[str, Any], diagnostics: int) -> dict[str, Any]:
    os.lseek(diagnostics, 0, os.SEEK_SET)
    tail = os.read(diagnostics, 1 << 20)[-2000:].decode("utf-8", "replace")
    return {"unit": unit, **record, "diagnostics": tail}


def main(data: bytes) -> None:
    """The supervisor: never runs repository code; writes the only result, on its stdout."""
    request = json.loads(data)
    result = os.dup(1)
    os.dup2(2, 1)
    confine = request.pop("confine")
    try:
        spec = importlib.util.spec_from_file_location("sandbox_confine", confine["module"])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        link_spec = importlib.util.spec_from_file_location("sandbox_link", confine["link"])
        assert link_spec is not None and link_spec.loader is not None
        request["_link"] = importlib.util.module_from_spec(link_spec)
        link_spec.loader.exec_module(request["_link"])
        try:
            landlockpy, pyseccomp = module.load_libraries(confine["paths"], confine["libraries"])
            module.enter_namespaces()
            for name in PRELOADED:
                importlib.import_module(name)
            copy = _write_copy(request["files"], request["copy"])
            confinement = module.Confinement(
                landlockpy, pyseccomp, [*confine["readable"], copy], confine["min_abi"]
            )
        except module.KernelUnavailable as exc:
            _write_all(result, json.dumps({"unavailable": str(exc)}).encode())
            os._exit(0)
        request["_copy"] = copy
        request["_uid"] = module.FIRST_UID + int.from_bytes(os.urandom(2), "little")
        init = _start_init()
        deadline = time.monotonic() + float(request["limits"]["wall_seconds"])
        units: list[str | None] = [None] if request["mode"] == "snippet" else request["tests"]
        runs = []
        request["_deadline"] = deadline - GRADER_MARGIN_SECONDS
        hidden: list[str] = request.get("hidden_units", [])
        for unit in units:
            diagnostics = os.memfd_create("sandbox-diagnostics")
            request["_diagnostics"] = diagnostics
            if unit in hidden:
                record = _grade(confinement, request, unit, result, diagnostics, deadline)
            else:
                read, write = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read)
                    os.close(result)
                    _worker(confinement, request, unit, write)
                os.close(write)
                record = _supervise(pid, read, deadline)
                os.close(read)
            raw = record["report"]
            if raw is not None and not raw.startswith(CONFINED.decode()):
                # Written before any repository code ran: only the worker's own setup says this.
                failure = raw or f"the worker ended while being confined (exit {record['exit']})"
                _write_all(result, json.dumps({"unavailable": failure}).encode())
                os._exit(0)
            record["report"] = None if raw is None else raw[len(CONFINED) :]
            runs.append(_unit_record(unit, record, diagnostics))
            os.close(diagnostics)
            if record["timed_out"]:
                break
        os.close(init)
        _write_all(result, json.dumps({"runs": runs}).encode())
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)  # interpreter shutdown would only cost time
