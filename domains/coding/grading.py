"""Verifier building blocks: pure functions of state that run hidden tests in the sandbox.

A verifier is judged many times over one episode (once per journal entry), so test runs are
memoised on the exact files they ran.
"""

from __future__ import annotations

import ast

from chaosproxy.domains.coding.lint import lint_source
from chaosproxy.domains.coding.sandbox import SandboxRun, run_tests_cached
from chaosproxy.domains.coding.security import analyze_source
from chaosproxy.domains.coding.state import AnswerItem, CodingState, Repository

HIDDEN_PREFIX = "hidden_tests/"


def run_suite(repo: Repository, *, hidden: bool = True) -> SandboxRun:
    """The visible tests (and, unless told otherwise, the hidden ones) against the repository."""
    agent_files = {p: c for p, c in repo.sources().items() if not p.startswith(HIDDEN_PREFIX)}
    graders = tuple(sorted(repo.hidden_tests.items())) if hidden else ()
    return run_tests_cached(
        tuple(sorted(agent_files.items())), tuple(repo.visible_tests()), graders
    )


def suite_passes(repo: Repository) -> bool:
    run = run_suite(repo)
    return run.status == "ok" and bool(run.tests) and all(t.status == "passed" for t in run.tests)


def failing_tests(repo: Repository) -> set[tuple[str, str]]:
    """(file, test name) of every visible test that does not pass."""
    return {(t.file, t.name) for t in run_suite(repo, hidden=False).tests if t.status != "passed"}


def others_unchanged(s0: CodingState, sf: CodingState, *changed: str) -> bool:
    """No repository outside `changed` was touched, and none was added or removed."""
    if set(s0.repositories) != set(sf.repositories):
        return False
    return all(
        s0.repositories[n] == sf.repositories[n] for n in s0.repositories if n not in changed
    )


def files_unchanged(r0: Repository, rf: Repository, *except_paths: str) -> bool:
    keep = {p for p in set(r0.files) | set(rf.files) if p not in except_paths}
    return all(
        p in r0.files and p in rf.files and r0.files[p].content == rf.files[p].content for p in keep
    )


def _test_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name.lower().startswith("test")
    }


def tests_kept(r0: Repository, rf: Repository) -> bool:
    """Every visible test of the initial repository is still defined in the same file."""
    for path in r0.visible_tests():
        if path not in rf.files:
            return False
        if not _test_names(r0.files[path].content) <= _test_names(rf.files[path].content):
            return False
    return True


def lint_clean(repo: Repository, path: str) -> bool:
    file = repo.files.get(path)
    return file is not None and not lint_source(path, file.content)


def findings(repo: Repository, rules: set[str], prefix: str = "") -> list[tuple[str, str]]:
    """(path, function) of every security finding of `rules` under `prefix`."""
    return [
        (f.path, f.function)
        for path, file in sorted(repo.files.items())
        if path.endswith(".py") and path.startswith(prefix)
        for f in analyze_source(path, file.content)
        if f.rule in rules
    ]


def regression_tests(r0: Repository, rf: Repository) -> set[str]:
    """Tests of the final repository that pass on its code but fail on the initial code."""
    after = {t.test_id for t in run_suite(rf, hidden=False).tests if t.status == "passed"}
    old_code = {p: f.content for p, f in r0.files.items() if not p.startswith("tests/")}
    new_tests = {p: f.content for p, f in rf.files.items() if p.startswith("tests/")}
    files = {**old_code, **new_tests}
    tests = tuple(sorted(p for p in new_tests if p in rf.visible_tests()))
    before = run_tests_cached(tuple(sorted(files.items())), tests)
    return {t.test_id for t in before.tests if t.status != "passed"} & after


def normalise(item: AnswerItem) -> tuple[str, str]:
    """Answer items compare on (path, name); 'path::name' and a leading './' are accepted."""
    path = item.path.strip().removeprefix("./")
    name = item.name.strip().removeprefix(f"{path}::")
    return path, name


def last_answer(sf: CodingState, repo: str) -> set[tuple[str, str]] | None:
    answers = [a for a in sf.answers if a.repo == repo]
    return None if not answers else {normalise(item) for item in answers[-1].items}
