"""A pyflakes-style static checker built on `ast`: the verification path that needs no execution.

When test_runner is unavailable an agent can still check an edit with this; so the checks
favour precision (no false alarms on correct code) over coverage.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

ScopeKind = Literal["module", "function", "class", "comprehension"]
_MODULE_NAMES = {
    "__name__",
    "__file__",
    "__doc__",
    "__package__",
    "__spec__",
    "__loader__",
    "__builtins__",
    "__path__",
    "__annotations__",
    "__dict__",
    "__qualname__",
    "__module__",
    "__class__",
}
_BUILTINS = set(dir(builtins)) | _MODULE_NAMES


class LintIssue(BaseModel):
    code: str
    message: str
    path: str
    line: int
    column: int


@dataclass
class _Binding:
    kind: Literal["import", "assign", "other"]
    node: ast.AST
    used: bool = False


@dataclass
class _Scope:
    kind: ScopeKind
    parent: _Scope | None
    bindings: dict[str, _Binding] = field(default_factory=dict)
    loads: list[ast.Name] = field(default_factory=list)
    globals_: set[str] = field(default_factory=set)
    star_import: bool = False
    uses_locals: bool = False

    def bind(self, name: str, kind: Literal["import", "assign", "other"], node: ast.AST) -> None:
        target = self.module() if name in self.globals_ else self
        if name not in target.bindings:
            target.bindings[name] = _Binding(kind, node)
        elif kind != "import":
            target.bindings[name].kind = "other" if target.bindings[name].kind == "import" else kind

    def module(self) -> _Scope:
        return self if self.parent is None else self.parent.module()


class _Collector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scopes: list[_Scope] = []
        self.scope = self._new("module", None)

    def _new(self, kind: ScopeKind, parent: _Scope | None) -> _Scope:
        scope = _Scope(kind, parent)
        self.scopes.append(scope)
        return scope

    def _within(self, scope: _Scope, nodes: list[ast.AST]) -> None:
        saved, self.scope = self.scope, scope
        for node in nodes:
            self.visit(node)
        self.scope = saved

    def _arguments(self, args: ast.arguments, scope: _Scope) -> None:
        for default in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(default)
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [a for a in (args.vararg, args.kwarg) if a is not None]
        for arg in every:
            if arg.annotation is not None:
                self.visit(arg.annotation)
            scope.bind(arg.arg, "other", arg)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        if node.returns is not None:
            self.visit(node.returns)
        self.scope.bind(node.name, "other", node)
        scope = self._new("function", self.scope)
        self._arguments(node.args, scope)
        self._within(scope, list(node.body))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        scope = self._new("function", self.scope)
        self._arguments(node.args, scope)
        self._within(scope, [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for child in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(child)
        self.scope.bind(node.name, "other", node)
        self._within(self._new("class", self.scope), list(node.body))

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        self.visit(node.generators[0].iter)
        scope = self._new("comprehension", self.scope)
        rest: list[ast.AST] = []
        for index, generator in enumerate(node.generators):
            rest.append(generator.target)
            if index:
                rest.append(generator.iter)
            rest.extend(generator.ifs)
        rest.extend([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        self._within(scope, rest)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.scope.star_import = True
                continue
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            name = alias.asname or alias.name.split(".")[0]
            self.scope.bind(name, "import", node)

    visit_ImportFrom = visit_Import

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        self.scope.globals_.update(node.names) if isinstance(node, ast.Global) else None
        for name in node.names:
            self.scope.bindings.setdefault(name, _Binding("other", node, used=True))

    visit_Nonlocal = visit_Global

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.scope.bind(node.id, "other", node)
        else:
            self.scope.loads.append(node)
            if node.id == "locals":
                self.scope.uses_locals = True

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node, ast.AnnAssign):
            self.visit(node.annotation)
        for target in targets:
            if isinstance(target, ast.Name) and node.value is not None:
                self.scope.bind(target.id, "assign", target)
            else:
                self.visit(target)

    visit_AnnAssign = visit_Assign

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        scope.bind(node.target.id, "other", node.target)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.scope.bind(node.name, "other", node)
        for statement in node.body:
            self.visit(statement)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.scope.bind(node.name, "other", node)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.scope.bind(node.name, "other", node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.scope.bind(node.rest, "other", node)
        self.generic_visit(node)


def _resolve(scope: _Scope, name: ast.Name) -> _Binding | None:
    current: _Scope | None = scope
    while current is not None:
        if (current is scope or current.kind != "class") and name.id in current.bindings:
            return current.bindings[name.id]
        current = current.parent
    return None


def _all_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            names |= {
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
    return names


def lint_source(path: str, source: str) -> list[LintIssue]:
    """All issues of one Python file, sorted by position."""
    try:
        tree = ast.parse(source, path)
    except SyntaxError as error:
        return [
            LintIssue(
                code="E999",
                message=f"SyntaxError: {error.msg}",
                path=path,
                line=error.lineno or 1,
                column=(error.offset or 1) - 1,
            )
        ]
    collector = _Collector()
    collector.visit(tree)
    module = collector.scopes[0]
    for name in _all_names(tree):
        if name in module.bindings:
            module.bindings[name].used = True
    issues: list[LintIssue] = []
    for scope in collector.scopes:
        for load in scope.loads:
            binding = _resolve(scope, load)
            if binding is not None:
                binding.used = True
            elif load.id not in _BUILTINS and not module.star_import:
                issues.append(_issue("F821", f"undefined name {load.id!r}", path, load))
    is_package_init = path.endswith("__init__.py")
    for scope in collector.scopes:
        for name, binding in scope.bindings.items():
            if binding.used:
                continue
            if binding.kind == "import" and not (is_package_init and scope.kind == "module"):
                issues.append(_issue("F401", f"{name!r} imported but unused", path, binding.node))
            elif (
                binding.kind == "assign"
                and scope.kind == "function"
                and not scope.uses_locals
                and not name.startswith("_")
            ):
                issues.append(
                    _issue(
                        "F841",
                        f"local variable {name!r} is assigned to but never used",
                        path,
                        binding.node,
                    )
                )
    issues.extend(_style(path, tree))
    return sorted(issues, key=lambda issue: (issue.line, issue.column, issue.code))


def _style(path: str, tree: ast.Module) -> list[LintIssue]:
    issues: list[LintIssue] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is None:
            issues.append(_issue("E722", "do not use bare 'except'", path, node))
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Eq | ast.NotEq) and isinstance(c, ast.Constant) and c.value is None
            for op, c in zip(node.ops, node.comparators, strict=True)
        ):
            issues.append(
                _issue("E711", "comparison to None should be 'if cond is None:'", path, node)
            )
        elif isinstance(node, ast.JoinedStr) and not any(
            isinstance(v, ast.FormattedValue) for v in node.values
        ):
            issues.append(_issue("F541", "f-string is missing placeholders", path, node))
    return issues


def _issue(code: str, message: str, path: str, node: ast.AST) -> LintIssue:
    return LintIssue(
        code=code,
        message=message,
        path=path,
        line=getattr(node, "lineno", 1),
        column=getattr(node, "col_offset", 0),
    )
