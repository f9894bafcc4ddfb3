"""Checking tools: sandboxed interpreter, tests, linter, security scan; and submit_answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any

from chaosproxy.domains.coding.access import check_path, existing_file, python_files, repository
from chaosproxy.domains.coding.domain import domain
from chaosproxy.domains.coding.fair import FairSlots
from chaosproxy.domains.coding.lint import lint_source
from chaosproxy.domains.coding.models import (
    AnswerReceipt,
    InterpreterResult,
    LintReport,
    SecurityReport,
    TestRunReport,
    TestSummary,
)
from chaosproxy.domains.coding.sandbox import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxRun,
    SandboxUnavailable,
    run_snippet,
    run_tests,
)
from chaosproxy.domains.coding.security import analyze_source
from chaosproxy.domains.coding.state import AnswerItem, CodingState, SubmittedAnswer, is_test_path
from chaosproxy.domains.coding.tools_files import PATH_CRITICAL, REPO_CRITICAL, RepoArg
from chaosproxy.domains.kit import CriticalArg, ToolError, current_episode
from pydantic import Field

MAX_CODE_CHARS = 20_000
SLOTS = FairSlots.from_env()
OptionalPath = Annotated[
    str | None, Field(description="One repository-relative .py file; omit for the whole repository")
]
TEST_NAMES = [
    "test_balance",
    "test_monthly_totals",
    "test_second_page",
    "test_login_with_right_password",
    "test_order_summary",
    "test_distance",
]


async def _confined(
    runner: Callable[[dict[str, str], Any, SandboxLimits], SandboxRun],
    files: dict[str, str],
    work: Any,
) -> SandboxRun:
    """Run in the kernel sandbox off the event loop, on the episode's fair share of the
    service's sandbox slots; a machine that cannot confine says so."""
    try:
        return await SLOTS.run(current_episode() or "(none)", runner, files, work, DEFAULT_LIMITS)
    except SandboxUnavailable as exc:
        raise ToolError(str(exc), status=503) from exc


@domain.tool(critical={"repo": REPO_CRITICAL})
async def code_interpreter(
    state: CodingState,
    repo: RepoArg,
    code: Annotated[
        str,
        Field(
            description="Python to run; the repository's modules are importable "
            "(e.g. 'from ledger.money import parse_amount'). The last "
            "expression's value is returned."
        ),
    ],
) -> InterpreterResult:
    """Run Python in a sandbox with the repository importable and its files readable by relative
    path: no other files, no writes, network or processes; 2 s CPU, 4 s wall clock, 256 MB
    memory. Use it to try code or reproduce a bug."""
    found = repository(state, repo)
    if not code.strip():
        raise ToolError("code must not be empty", status=422, field="code")
    if len(code) > MAX_CODE_CHARS:
        raise ToolError(
            f"code is {len(code)} characters; the limit is {MAX_CODE_CHARS}",
            status=422,
            field="code",
        )
    run = await _confined(run_snippet, found.sources(), code)
    return InterpreterResult(
        repo=repo,
        status=run.status,
        stdout=run.stdout,
        stderr=run.stderr,
        value=run.value,
        error=run.error,
        limits=DEFAULT_LIMITS,
    )


@domain.tool(critical={"repo": REPO_CRITICAL, "test": CriticalArg.choice(TEST_NAMES)})
async def test_runner(
    state: CodingState,
    repo: RepoArg,
    path: Annotated[
        str | None,
        Field(
            description="One test file, e.g. 'tests/test_users.py'; omit for every tests/test_*.py"
        ),
    ] = None,
    test: Annotated[
        str | None, Field(description="Only tests with this name, e.g. 'test_balance'")
    ] = None,
) -> TestRunReport:
    """Run the repository's tests (tests/test_*.py) in the sandbox; report each test's outcome."""
    found = repository(state, repo)
    if path is not None:
        existing_file(found, path)
        if not is_test_path(path):
            raise ToolError(
                f"{path!r} is not a test file (tests/test_*.py)", status=422, field="path"
            )
    paths = [path] if path is not None else found.visible_tests()
    if not paths:
        raise ToolError(f"repository {repo!r} has no tests under tests/", status=404, field="repo")
    run = await _confined(run_tests, found.sources(), paths)
    outcomes = [
        t for t in run.tests if test is None or t.name == test or t.name.endswith(f"::{test}")
    ]
    if test is not None and not outcomes and run.status != "timeout":
        raise ToolError(f"no test named {test!r} in {', '.join(paths)}", status=404, field="test")
    counts = Counter(t.status for t in outcomes)
    summary = TestSummary(
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["error"],
        total=len(outcomes),
    )
    if run.status == "timeout":
        status = "timeout"
    elif run.status != "ok" or summary.errors:
        status = "error"
    else:
        status = "failed" if summary.failed else "passed"
    return TestRunReport(repo=repo, status=status, tests=outcomes, summary=summary, error=run.error)


@domain.tool(critical={"repo": REPO_CRITICAL, "path": PATH_CRITICAL})
def linter(state: CodingState, repo: RepoArg, path: OptionalPath = None) -> LintReport:
    """Static checks without running code: syntax errors (E999), undefined names (F821), unused
    imports (F401) and variables (F841), bare except (E722), '== None' (E711), empty f-strings
    (F541)."""
    files = python_files(repository(state, repo), path)
    issues = [issue for p, source in files.items() for issue in lint_source(p, source)]
    return LintReport(
        repo=repo, checked_files=list(files), issues=issues, total=len(issues), clean=not issues
    )


@domain.tool(critical={"repo": REPO_CRITICAL, "path": PATH_CRITICAL})
def security_analyzer(
    state: CodingState, repo: RepoArg, path: OptionalPath = None
) -> SecurityReport:
    """Static security scan: SQL built by string formatting passed to execute (S608), eval/exec
    (S307), shell=True / os.system (S602/S605), hard-coded secrets (S105), weak hashes (S324),
    pickle (S301)."""
    files = python_files(repository(state, repo), path)
    findings = [finding for p, source in files.items() for finding in analyze_source(p, source)]
    severities = Counter(f.severity for f in findings)
    return SecurityReport(
        repo=repo,
        checked_files=list(files),
        findings=findings,
        total=len(findings),
        by_severity={level: severities[level] for level in ("high", "medium", "low")},
    )


@domain.tool(idempotent=False, critical={"repo": REPO_CRITICAL})
def submit_answer(
    state: CodingState,
    repo: RepoArg,
    items: Annotated[
        list[AnswerItem],
        Field(description="The answer: one {path, name} per function or test the task asks for"),
    ],
) -> AnswerReceipt:
    """Submit the answer to an information task (which functions, which tests).
    The last answer counts."""
    repository(state, repo)
    for index, item in enumerate(items):
        check_path(item.path.strip(), field=f"items[{index}].path")
        if not item.name.strip():
            raise ToolError("name must not be empty", status=422, field=f"items[{index}].name")
    answer = SubmittedAnswer(
        answer_id=f"ANS-{state.next_answer_id:04d}", repo=repo, items=items, submitted_at=state.now
    )
    state.next_answer_id += 1
    state.answers.append(answer)
    return AnswerReceipt(
        answer_id=answer.answer_id,
        repo=repo,
        status="recorded",
        items=items,
        submitted_at=state.now,
    )
