"""The sandbox's child process: runs inside `python -P -s -S -B` with a clean environment.

The parent sends one JSON request on stdin and reads one JSON line tagged with a nonce from
stdout. Before any repository code runs, this process lowers its resource limits, drops root,
pre-imports an allowlist of standard modules and installs an audit hook that refuses file,
process, network and native-code access; repository files are served from memory by an
import hook. This file is stdlib-only: it cannot import the project.
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
import resource
import sys
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


class SandboxViolation(PermissionError):
    """Raised in place of any operation that would reach outside the sandbox."""


def _refusal(event: str, args: tuple[Any, ...]) -> str | None:
    if event == "open":
        return (
            f"open({args[0]!r}) refused: the sandbox has no host file system; repository "
            "files are importable as modules (use read_file/write_file to see or change them)"
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


def _limit(kind: int, value: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(kind, (value, value))


def _confine(limits: dict[str, Any]) -> None:
    cpu = int(limits["cpu_seconds"])
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    _limit(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)
    _limit(resource.RLIMIT_FSIZE, 0)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NOFILE, 64)
    _limit(resource.RLIMIT_NPROC, 0)
    if os.getuid() == 0:
        with contextlib.suppress(OSError):
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)


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


def _refused_open(file: Any, *args: Any, **kwargs: Any) -> Any:
    raise SandboxViolation(f"sandbox: {_refusal('open', (file,))}")


def _safe_builtins() -> dict[str, Any]:
    names = dict(vars(builtins))
    for name in ("input", "breakpoint", "help", "exit", "quit"):
        names.pop(name, None)
    names["open"] = _refused_open
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
    return {"type": type(exc).__name__, "message": message, "traceback": frames[-8:]}


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


def main() -> None:
    request = json.loads(sys.stdin.read())
    nonce: str = request.pop("nonce")
    limits: dict[str, Any] = request["limits"]
    files: dict[str, str] = request["files"]
    for name in PRELOADED:
        importlib.import_module(name)
    _confine(limits)
    real_stdout = sys.stdout
    sys.meta_path.insert(0, _RepoImporter(files))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        message = _refusal(event, args)
        if message is not None:
            raise SandboxViolation(f"sandbox: {message}")

    sys.addaudithook(hook)

    def keep(filename: str) -> bool:
        return filename in files or filename == "<snippet>"

    if request["mode"] == "snippet":
        result = _run_snippet(request["code"], keep, limits)
    else:
        result = _run_tests(request["tests"], keep, limits)
    real_stdout.write("\n" + nonce + json.dumps(result) + "\n")
    real_stdout.flush()
