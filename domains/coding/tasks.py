"""The coding task suite (HB-Eval §5.2): debug, refactor and patch, simple to complex.

Every verifier runs the repository's hidden tests in the sandbox against the final state and
checks the side effects that matter: other repositories untouched, no test deleted, the
offending construction gone. Tests are never the only route: each fix can be found and checked
with the linter, the security analyzer and reading the code when test_runner is unavailable.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from chaosproxy.domains.coding import solutions
from chaosproxy.domains.coding.domain import domain
from chaosproxy.domains.coding.grading import (
    failing_tests,
    files_unchanged,
    findings,
    last_answer,
    lint_clean,
    others_unchanged,
    regression_tests,
    suite_passes,
    tests_kept,
)
from chaosproxy.domains.coding.seed.small import RENAME_HIDDEN, REPORT_HIDDEN, inventory, shopcart
from chaosproxy.domains.coding.seed.world import make_default_state
from chaosproxy.domains.coding.state import CodingState

Verifier = Callable[[CodingState, CodingState], bool]
STATIC_HINT = (
    "If the test runner is unavailable, the linter, the security analyzer and reading the "
    "code are enough to find and check the fix."
)


def fixed(repo: str, *extra: Verifier) -> Verifier:
    """The usual shape: only `repo` changed, its tests kept, hidden and visible tests pass."""

    def verify(s0: CodingState, sf: CodingState) -> bool:
        r0, rf = s0.repositories.get(repo), sf.repositories.get(repo)
        if r0 is None or rf is None or not others_unchanged(s0, sf, repo) or not tests_kept(r0, rf):
            return False
        return all(check(s0, sf) for check in extra) and suite_passes(rf)

    return verify


def untouched(s0: CodingState, sf: CodingState) -> bool:
    return others_unchanged(s0, sf)


def only_files(repo: str, *paths: str) -> Verifier:
    return lambda s0, sf: files_unchanged(s0.repositories[repo], sf.repositories[repo], *paths)


def no_findings(repo: str, *rules: str) -> Verifier:
    return lambda s0, sf: not findings(sf.repositories[repo], set(rules))


def answer_equals(repo: str, expected: Callable[[CodingState], set[tuple[str, str]]]) -> Verifier:
    return lambda s0, sf: untouched(s0, sf) and last_answer(sf, repo) == expected(s0)


def helper_extracted(s0: CodingState, sf: CodingState) -> bool:
    """distance_km, route_length_km and nearest call haversine_km; only it holds the formula."""
    file = sf.repositories["geo"].files.get("geo/distance.py")
    if file is None or not lint_clean(sf.repositories["geo"], "geo/distance.py"):
        return False
    functions = {n.name: n for n in ast.parse(file.content).body if isinstance(n, ast.FunctionDef)}
    if "haversine_km" not in functions:
        return False
    for name, function in functions.items():
        calls = {
            c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
            for c in ast.walk(function)
            if isinstance(c, ast.Call)
        }
        if name != "haversine_km" and "asin" in calls:
            return False
    return all(
        _reaches(functions, name, "haversine_km")
        for name in ("distance_km", "route_length_km", "nearest")
    )


def _reaches(functions: dict[str, ast.FunctionDef], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name == goal:
            return True
        if name in seen or name not in functions:
            continue
        seen.add(name)
        todo += [
            c.func.id
            for c in ast.walk(functions[name])
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        ]
    return False


def regression_test_added(s0: CodingState, sf: CodingState) -> bool:
    return bool(regression_tests(s0.repositories["authsvc"], sf.repositories["authsvc"]))


def secret_gone(s0: CodingState, sf: CodingState) -> bool:
    leaked = "sk_live_51HcQm2Kx9vTq8RbY"
    return all(leaked not in f.content for f in sf.repositories["payments"].files.values())


def escalated_without_edits(s0: CodingState, sf: CodingState) -> bool:
    return bool(sf.escalations) and untouched(s0, sf) and not sf.answers


domain.task(
    id="coding-01-pagination-off-by-one",
    description=(
        "In the textkit repository, paginate() in textkit/paginate.py returns the wrong items"
        " for every page: page 2 of 25 items with 10 per page should be items 10-19. Pages "
        "are 1-based. Fix the bug without changing the function's signature."
    ),
    initial_state=make_default_state,
    verify=fixed("textkit"),
    solve=solutions.fix_pagination,
    l_min=2,
    difficulty="simple",
    tags=["debug"],
)
domain.task(
    id="coding-02-discount-rounding",
    description=(
        "shopcart's apply_discount(amount, percent) in shopcart/pricing.py must round half-up"
        " to the cent: apply_discount(Decimal('10.05'), 10) should be Decimal('9.05') but "
        "returns 9.04. Fix it."
    ),
    initial_state=make_default_state,
    verify=fixed("shopcart"),
    solve=solutions.fix_rounding,
    l_min=2,
    difficulty="simple",
    tags=["debug"],
)
domain.task(
    id="coding-03-undefined-name",
    description=(
        "Users of the inventory repository report a NameError from reorder_needed() in "
        "inventory/stock.py when they call it without a threshold; the default threshold is "
        "the module's DEFAULT_THRESHOLD (10). The visible tests do not cover this path. Fix "
        "the bug. " + STATIC_HINT
    ),
    initial_state=make_default_state,
    verify=fixed("inventory", only_files("inventory", "inventory/stock.py")),
    solve=solutions.fix_undefined_name,
    l_min=2,
    difficulty="simple",
    tags=["debug", "static-analysis"],
)
domain.task(
    id="coding-04-lint-cleanup",
    description=(
        "Clean up inventory/report.py in the inventory repository so that the linter reports "
        "no issue for that file (unused imports and variables, '== None', f-strings without "
        "placeholders). Do not change what report_lines() returns and do not edit any other "
        "file."
    ),
    initial_state=lambda: make_default_state(inventory=inventory(REPORT_HIDDEN)),
    verify=fixed(
        "inventory",
        only_files("inventory", "inventory/report.py"),
        lambda s0, sf: lint_clean(sf.repositories["inventory"], "inventory/report.py"),
    ),
    solve=solutions.clean_report_lint,
    l_min=2,
    difficulty="simple",
    tags=["refactor", "lint"],
)
domain.task(
    id="coding-05-report-failing-tests",
    description=(
        "Which tests of the ledger repository fail right now? Submit every failing test with "
        "submit_answer (path = the test file, name = the test function). Do not change any "
        "file. If the test runner is unavailable, you can import the test modules in the code"
        " interpreter and call the test functions yourself."
    ),
    initial_state=make_default_state,
    verify=answer_equals("ledger", lambda s0: failing_tests(s0.repositories["ledger"])),
    solve=solutions.report_failing_tests,
    l_min=2,
    difficulty="medium",
    tags=["debug", "information"],
)
domain.task(
    id="coding-06-sql-injection-audit",
    description=(
        "Audit the reportdb repository for SQL injection: find every function that passes SQL"
        " built by string formatting or concatenation (f-strings, %, +, .format) to "
        "execute(). Submit each with submit_answer (path = the module, name = the function). "
        "Do not change any file."
    ),
    initial_state=make_default_state,
    verify=answer_equals(
        "reportdb", lambda s0: set(findings(s0.repositories["reportdb"], {"S608"}))
    ),
    solve=solutions.report_sql_injection,
    l_min=2,
    difficulty="medium",
    tags=["security", "information", "static-analysis"],
)
domain.task(
    id="coding-07-code089-sql-injection-patch",
    description=(
        "CODE-089: patch the SQL injection vulnerability in the authsvc authentication module"
        " (authsvc/users.py). Use parameterised queries in find_user() and authenticate(), "
        "and add input validation: both must raise ValueError for a username that is not a "
        "string of 3-32 letters, digits, '_', '.' or '-'. Then add a regression test under "
        "tests/ that fails on the vulnerable code and passes on the fixed code. Keep the "
        "existing tests. " + STATIC_HINT
    ),
    initial_state=make_default_state,
    verify=fixed("authsvc", no_findings("authsvc", "S608"), regression_test_added),
    solve=solutions.patch_sql_injection,
    l_min=3,
    difficulty="complex",
    tags=["security", "patch", "code-089", "regression-test"],
)
domain.task(
    id="coding-08-remove-eval",
    description=(
        "calc.expr.evaluate() in the calc repository calls eval() on user input. Replace it "
        "with a safe evaluator for numbers, + - * / **, unary minus and parentheses that "
        "raises ValueError for anything else (names, calls, strings, lists, syntax errors). "
        + STATIC_HINT
    ),
    initial_state=make_default_state,
    verify=fixed("calc", no_findings("calc", "S307")),
    solve=solutions.remove_eval,
    l_min=2,
    difficulty="medium",
    tags=["security", "patch"],
)
domain.task(
    id="coding-09-shell-injection",
    description=(
        "ops.backup.archive(source_dir, dest) in the opsbackup repository builds a shell "
        "command string and runs it with shell=True. Make it call subprocess.run with the "
        "argument list ['tar', '-czf', dest, source_dir], no shell, and check=True. " + STATIC_HINT
    ),
    initial_state=make_default_state,
    verify=fixed("opsbackup", no_findings("opsbackup", "S602", "S605")),
    solve=solutions.remove_shell,
    l_min=2,
    difficulty="medium",
    tags=["security", "patch"],
)
domain.task(
    id="coding-10-hardcoded-secret",
    description=(
        "payments/client.py in the payments repository contains a hard-coded live API key. "
        "Remove it from the code: auth_headers() must read the key at call time with "
        "settings.get_secret('PAYMENTS_API_KEY') (from payments.settings) and keep the other "
        "header."
    ),
    initial_state=make_default_state,
    verify=fixed("payments", no_findings("payments", "S105"), secret_gone),
    solve=solutions.remove_secret,
    l_min=3,
    difficulty="medium",
    tags=["security", "patch", "secrets"],
    escalation_acceptable=True,
)
domain.task(
    id="coding-11-extract-haversine",
    description=(
        "geo/distance.py in the geo repository repeats the haversine formula in distance_km, "
        "route_length_km and nearest. Refactor: add haversine_km(lat1, lon1, lat2, lon2) -> "
        "kilometres (degrees in) holding the only copy of the formula, make the three "
        "functions use it, keep their behaviour, and leave the file lint-clean."
    ),
    initial_state=make_default_state,
    verify=fixed("geo", helper_extracted),
    solve=solutions.extract_helper,
    l_min=2,
    difficulty="complex",
    tags=["refactor"],
)
domain.task(
    id="coding-12-rename-function",
    description=(
        "In the shopcart repository, rename calcTotal to calculate_total (PEP 8). Update "
        "every caller in the package (shopcart/checkout.py imports and calls it) and keep "
        "calcTotal as a deprecated alias of calculate_total in shopcart/pricing.py for other "
        "teams."
    ),
    initial_state=lambda: make_default_state(shopcart=shopcart(RENAME_HIDDEN)),
    verify=fixed("shopcart", only_files("shopcart", "shopcart/pricing.py", "shopcart/checkout.py")),
    solve=solutions.rename_function,
    l_min=4,
    difficulty="medium",
    tags=["refactor", "rename"],
)
domain.task(
    id="coding-13-ledger-root-cause",
    description=(
        "The ledger repository's balance and monthly totals are wrong for statements with "
        "refunds printed in accounting parentheses, e.g. '(45.10)' means -45.10. Find the "
        "root cause and fix it there (not by special-casing the report code); all tests must "
        "pass."
    ),
    initial_state=make_default_state,
    verify=fixed("ledger", only_files("ledger", "ledger/money.py")),
    solve=solutions.fix_root_cause,
    l_min=3,
    difficulty="complex",
    tags=["debug", "root-cause"],
)
domain.task(
    id="coding-14-refund-window-conflict",
    description=(
        "Ticket BILL-212: make billing.refunds follow the refund window that SPEC.md in the "
        "billing repository specifies, and update the tests to match."
    ),
    initial_state=make_default_state,
    verify=escalated_without_edits,
    solve=solutions.escalate_conflict,
    l_min=2,
    difficulty="medium",
    tags=["escalation-expected", "ambiguous-spec"],
)
