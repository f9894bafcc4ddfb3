"""Static security checks on `ast`: injection, code execution, shell, secrets, weak hashes.

Each rule looks for one construction that is wrong regardless of context, so a finding is
something to fix, not to argue with.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from pydantic import BaseModel

Severity = Literal["high", "medium", "low"]
_SQL_METHODS = {"execute", "executemany", "executescript"}
_SECRET_NAME = re.compile(
    r"(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key)", re.IGNORECASE
)
_WEAK_HASHES = {"md5", "sha1"}


class SecurityFinding(BaseModel):
    rule: str
    severity: Severity
    path: str
    line: int
    function: str
    message: str
    code: str


def _is_dynamic_text(node: ast.AST, tainted: set[str]) -> bool:
    """Text assembled at run time from pieces: f-string, %, + or str.format."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(value, ast.FormattedValue) for value in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        sides = (node.left, node.right)
        textual = any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides)
        return textual or any(_is_dynamic_text(s, tainted) for s in sides)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "format" and isinstance(node.func.value, ast.Constant)
    return isinstance(node, ast.Name) and node.id in tainted


class _Analyzer(ast.NodeVisitor):
    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.lines = source.splitlines()
        self.findings: list[SecurityFinding] = []
        self.function = "<module>"
        self.tainted: set[str] = set()
        self.is_test = path.startswith("tests/") or path.rsplit("/", 1)[-1].startswith("test_")

    def _add(self, rule: str, severity: Severity, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.findings.append(
            SecurityFinding(
                rule=rule,
                severity=severity,
                path=self.path,
                line=line,
                function=self.function,
                message=message,
                code=code,
            )
        )

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        saved = self.function, self.tainted
        prefix = "" if self.function == "<module>" else f"{self.function}."
        self.function, self.tainted = f"{prefix}{node.name}", set()
        self.generic_visit(node)
        self.function, self.tainted = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        saved = self.function
        self.function = node.name if saved == "<module>" else f"{saved}.{node.name}"
        self.generic_visit(node)
        self.function = saved

    def visit_Assign(self, node: ast.Assign) -> None:
        dynamic = _is_dynamic_text(node.value, self.tainted)
        for target in node.targets:
            if isinstance(target, ast.Name):
                (self.tainted.add if dynamic else self.tainted.discard)(target.id)
            self._secret(target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if (
            isinstance(node.target, ast.Name)
            and isinstance(node.op, ast.Add)
            and (
                node.target.id in self.tainted
                or _is_dynamic_text(node.value, self.tainted)
                or not (isinstance(node.value, ast.Constant))
            )
        ):
            self.tainted.add(node.target.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            if isinstance(node.target, ast.Name) and _is_dynamic_text(node.value, self.tainted):
                self.tainted.add(node.target.id)
            self._secret(node.target, node.value)
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self._secret_value(key.value, value, value)
        self.generic_visit(node)

    def _secret(self, target: ast.AST, value: ast.AST) -> None:
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
        if isinstance(name, str):
            self._secret_value(name, value, target)

    def _secret_value(self, name: str, value: ast.AST, node: ast.AST) -> None:
        if self.is_test or not _SECRET_NAME.search(name):
            return
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and len(value.value) >= 4
        ):
            self._add(
                "S105",
                "medium",
                node,
                f"hard-coded secret in {name!r}: load it from configuration instead",
            )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else ""
        )
        owner = (
            func.value.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else ""
        )
        if (
            isinstance(func, ast.Attribute)
            and name in _SQL_METHODS
            and node.args
            and _is_dynamic_text(node.args[0], self.tainted)
        ):
            self._add(
                "S608",
                "high",
                node,
                f"SQL built from strings passed to {name}(): use a parameterised query "
                "(placeholders and a parameters tuple)",
            )
        if isinstance(func, ast.Name) and name in ("eval", "exec"):
            self._add("S307", "high", node, f"use of {name}(): arbitrary code execution")
        if owner == "os" and name in ("system", "popen"):
            self._add("S605", "high", node, f"os.{name}() runs a shell command")
        for keyword in node.keywords:
            if (
                keyword.arg == "shell"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value
            ):
                self._add("S602", "high", node, f"{name}() with shell=True: command injection risk")
            if keyword.arg is not None:
                self._secret_value(keyword.arg, keyword.value, node)
        if owner == "hashlib" and name in _WEAK_HASHES:
            self._add("S324", "medium", node, f"hashlib.{name}() is a weak hash for security use")
        if owner == "pickle" and name in ("loads", "load"):
            self._add("S301", "medium", node, f"pickle.{name}() deserialises untrusted data")
        self.generic_visit(node)


def analyze_source(path: str, source: str) -> list[SecurityFinding]:
    """Findings for one Python file; a file that does not parse has none (the linter says why)."""
    try:
        tree = ast.parse(source, path)
    except SyntaxError:
        return []
    analyzer = _Analyzer(path, source)
    analyzer.visit(tree)
    return sorted(analyzer.findings, key=lambda finding: (finding.line, finding.rule))
