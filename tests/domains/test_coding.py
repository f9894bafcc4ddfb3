"""Coding domain over a real server: the sandbox refuses to touch the host (each refusal with a
clear error, the service keeps serving), linter and security analyzer find what they should,
4xx name the field, writes reach the journal, and verifiers catch damaging shortcuts."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from chaosproxy.domains.coding import domain
from chaosproxy.domains.coding.lint import lint_source
from chaosproxy.domains.coding.sandbox import SandboxLimits, run_snippet
from chaosproxy.domains.coding.security import analyze_source
from chaosproxy.domains.coding.solutions import REGRESSION_TEST, SAFE_USERS
from chaosproxy.domains.coding.state import CodingState, RepoFile
from chaosproxy.domains.kit.client import McpToolClient
from domain_driver import RestEpisode, fresh_episode

pytestmark = pytest.mark.timeout(60)
HOST_PROBE = Path(f"/tmp/chaos-coding-probe-{uuid.uuid4().hex[:8]}")


Episode = RestEpisode[CodingState]


@pytest.fixture
async def episode(domain_url: Callable[[str], str]) -> AsyncIterator[Episode]:
    async with fresh_episode(domain_url("coding"), CodingState, timeout=30) as created:
        yield created


def _listening_port() -> int:
    """A port something on this host really listens on: the sandbox must still not reach it."""
    return int(os.environ.get("CODING_TEST_PORT", "0"))


REFUSALS = [
    (
        "read /etc/passwd",
        "open('/etc/passwd').read()",
        "error",
        "SandboxViolation",
        "open('/etc/passwd') refused",
    ),
    (
        "read via pathlib",
        "import io\nio.open('/etc/hostname').read()",
        "error",
        "SandboxViolation",
        "no host file system",
    ),
    (
        "write a host file",
        f"open('{HOST_PROBE}', 'w').write('x')",
        "error",
        "SandboxViolation",
        "refused",
    ),
    (
        "os.open a host file",
        f"import os\nos.open('{HOST_PROBE}', os.O_WRONLY | os.O_CREAT)",
        "error",
        "SandboxViolation",
        "refused",
    ),
    (
        "list a host directory",
        "import os\nos.listdir('/')",
        "error",
        "SandboxViolation",
        "listing a host directory",
    ),
    (
        "sqlite file database",
        f"import sqlite3\nsqlite3.connect('{HOST_PROBE}.db')",
        "error",
        "SandboxViolation",
        "only in-memory databases",
    ),
    (
        "open a socket",
        "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=1)",
        "error",
        "SandboxViolation",
        "no network access",
    ),
    (
        "http client module",
        "import urllib.request",
        "error",
        "ModuleNotFoundError",
        "not available in the sandbox",
    ),
    (
        "subprocess",
        "import subprocess\nsubprocess.run(['id'])",
        "error",
        "SandboxViolation",
        "starting a process",
    ),
    (
        "os.system",
        f"import os\nos.system('touch {HOST_PROBE}')",
        "error",
        "SandboxViolation",
        "running a shell command",
    ),
    ("runaway loop", "while True:\n    pass", "timeout", "TimeoutError", "time limit"),
    (
        "memory bomb",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(50_000_000))",
        "memory_exceeded",
        "MemoryError",
        "memory limit of 256 MB",
    ),
]


@pytest.mark.parametrize(
    ("label", "code", "status", "error_type", "fragment"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
async def test_interpreter_refuses_the_host(
    episode: Episode, label: str, code: str, status: str, error_type: str, fragment: str
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        code = code.replace("PORT", str(listener.getsockname()[1]))
        result = await episode.ok("code_interpreter", repo="ledger", code=code)
    assert result["status"] == status, result
    assert result["error"]["type"] == error_type
    assert fragment in result["error"]["message"]
    assert not HOST_PROBE.exists() and not Path(f"{HOST_PROBE}.db").exists()
    health = await episode.http.get(f"{episode.base}/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    listed = await episode.ok("list_files", repo="ledger", prefix="ledger/")
    assert listed["total"] == 3


async def test_interpreter_works_after_refusals(episode: Episode) -> None:
    for code in ("open('/etc/passwd')", "b = bytearray(10**10)", "import os\nos._exit(3)"):
        refused = await episode.ok("code_interpreter", repo="ledger", code=code)
        assert refused["status"] in ("error", "memory_exceeded", "crashed"), refused
        assert refused["error"]["message"]
    after = await episode.ok(
        "code_interpreter",
        repo="ledger",
        code="from ledger.money import parse_amount\nparse_amount('$1,234.50')",
    )
    assert after["status"] == "ok" and after["value"] == "Decimal('1234.50')"


async def test_interpreter_runs_repository_code_with_output(episode: Episode) -> None:
    result = await episode.ok(
        "code_interpreter",
        repo="authsvc",
        code="from authsvc.db import connect\nfrom authsvc.users import find_user\n"
        "print('looking up')\nfind_user(connect(), \"x' OR '1'='1\")",
    )
    assert result["status"] == "ok" and result["stdout"] == "looking up\n"
    assert result["value"] == "{'id': 1, 'username': 'alice', 'role': 'admin'}"
    assert result["limits"] == {"cpu_seconds": 2, "wall_seconds": 4.0, "memory_mb": 256}
    failing = await episode.ok(
        "code_interpreter",
        repo="ledger",
        code="from ledger.money import parse_amount\nparse_amount('twelve')",
    )
    assert failing["error"]["type"] == "ValueError"
    assert failing["error"]["traceback"][-1]["file"] == "ledger/money.py"


def test_wall_clock_limit_stops_a_sleeping_snippet() -> None:
    run = run_snippet(
        {}, "import time\ntime.sleep(30)", SandboxLimits(cpu_seconds=1, wall_seconds=0.5)
    )
    assert run.status == "timeout" and run.error is not None
    assert "0.5 s wall-clock time limit" in run.error.message


def test_sandbox_drops_privileges_and_limits_itself() -> None:
    run = run_snippet(
        {}, "import os, resource\n(os.getuid() != 0, resource.getrlimit(resource.RLIMIT_AS)[0])"
    )
    assert run.status == "ok" and run.value == f"(True, {256 * 1024 * 1024})"
    raised = run_snippet({}, "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))")
    assert raised.error is not None and raised.error.type == "SandboxViolation"


async def test_interpreter_refusal_over_mcp(domain_url: Callable[[str], str]) -> None:
    episode_id = f"m-{uuid.uuid4().hex[:8]}"
    async with McpToolClient(
        f"{domain_url('coding')}/mcp", episode=episode_id, mode="2026-07-28"
    ) as mcp:
        result = await mcp.call("code_interpreter", repo="calc", code="open('/etc/shadow')")
        listed = await mcp.call("list_files", repo="calc")
    assert (
        result["status"] == "error" and "open('/etc/shadow') refused" in result["error"]["message"]
    )
    assert {f["path"] for f in listed["files"]} >= {"calc/expr.py", "tests/test_expr.py"}


LINT_CASES = [
    ("undefined name", "def f():\n    return missing + 1\n", {"F821"}),
    ("unused import", "import os\nimport json\nprint(json.dumps(1))\n", {"F401"}),
    ("unused local", "def f():\n    total = 3\n    return 1\n", {"F841"}),
    ("syntax error", "def f(:\n    pass\n", {"E999"}),
    ("bare except", "try:\n    pass\nexcept:\n    pass\n", {"E722"}),
    ("none comparison", "def f(x):\n    return x == None\n", {"E711"}),
    ("empty f-string", "print(f'hello')\n", {"F541"}),
    (
        "clean code",
        "import math\n\n\ndef f(values):\n    return [math.sqrt(v) for v in values]\n",
        set(),
    ),
    (
        "class scope is not visible in methods",
        "class A:\n    z = 1\n\n    def m(self):\n        return z\n",
        {"F821"},
    ),
    (
        "closures and globals resolve",
        "COUNT = 0\n\n\ndef outer():\n    seen = []\n\n    def inner(x):\n        global COUNT\n"
        "        COUNT += 1\n        seen.append(x)\n    return inner, seen\n",
        set(),
    ),
]


@pytest.mark.parametrize(("label", "source", "codes"), LINT_CASES, ids=[c[0] for c in LINT_CASES])
def test_linter_finds_what_it_should(label: str, source: str, codes: set[str]) -> None:
    assert {issue.code for issue in lint_source("pkg/mod.py", source)} == codes


SECURITY_CASES = [
    (
        "f-string sql",
        "def f(c, u):\n    c.execute(f\"SELECT * FROM t WHERE u = '{u}'\")\n",
        {"S608"},
    ),
    (
        "percent sql",
        "def f(c, u):\n    c.execute(\"SELECT * FROM t WHERE u = '%s'\" % u)\n",
        {"S608"},
    ),
    (
        "concatenated variable",
        "def f(c, u):\n    q = 'DELETE FROM t WHERE id = ' + u\n    c.execute(q)\n",
        {"S608"},
    ),
    ("format sql", "def f(c, u):\n    c.executemany('SELECT {}'.format(u), [])\n", {"S608"}),
    (
        "parameterised sql",
        "def f(c, u):\n    c.execute('SELECT * FROM t WHERE u = ?', (u,))\n",
        set(),
    ),
    ("eval", "def f(s):\n    return eval(s)\n", {"S307"}),
    ("shell true", "import subprocess\nsubprocess.run('ls', shell=True)\n", {"S602"}),
    ("os.system", "import os\nos.system('ls')\n", {"S605"}),
    ("hard-coded secret", "API_KEY = 'sk_live_abcdef'\n", {"S105"}),
    ("secret from config", "import os\nAPI_KEY = os.environ['API_KEY']\n", set()),
    ("weak hash", "import hashlib\nhashlib.md5(b'x')\n", {"S324"}),
]


@pytest.mark.parametrize(
    ("label", "source", "rules"), SECURITY_CASES, ids=[c[0] for c in SECURITY_CASES]
)
def test_security_analyzer_finds_what_it_should(label: str, source: str, rules: set[str]) -> None:
    assert {finding.rule for finding in analyze_source("pkg/mod.py", source)} == rules


async def test_static_tools_over_rest(episode: Episode) -> None:
    scan = await episode.ok("security_analyzer", repo="authsvc")
    assert {(f["path"], f["function"], f["rule"]) for f in scan["findings"]} == {
        ("authsvc/users.py", "find_user", "S608"),
        ("authsvc/users.py", "authenticate", "S608"),
    }
    assert scan["by_severity"] == {"high": 3, "medium": 0, "low": 0}
    lint = await episode.ok("linter", repo="inventory", path="inventory/stock.py")
    assert [(i["code"], i["line"]) for i in lint["issues"]] == [("F821", 12)]
    assert lint["clean"] is False and lint["checked_files"] == ["inventory/stock.py"]


async def test_files_tests_and_hidden_tests(episode: Episode) -> None:
    repos = await episode.ok("list_repositories")
    assert repos["total"] == len(repos["repositories"]) >= 10
    files = await episode.ok("list_files", repo="authsvc")
    paths = [f["path"] for f in files["files"]]
    assert "authsvc/users.py" in paths and not any(p.startswith("hidden_tests/") for p in paths)
    users = next(f for f in files["files"] if f["path"] == "authsvc/users.py")
    assert (
        users["kind"] == "module"
        and len(users["sha256"]) == 64
        and users["updated_at"].endswith("Z")
    )
    hidden = await episode.raw(
        "read_file", {"repo": "authsvc", "path": "hidden_tests/test_authsvc_hidden.py"}
    )
    assert hidden.status_code == 404 and hidden.json()["error"]["field"] == "path"
    run = await episode.ok("test_runner", repo="ledger")
    statuses = {t["test_id"]: t["status"] for t in run["tests"]}
    assert statuses["tests/test_report.py::test_balance"] == "failed"
    assert statuses["tests/test_money.py::test_plain_amount"] == "passed"
    assert (
        run["status"] == "failed" and run["summary"]["failed"] == 2 and run["summary"]["total"] == 8
    )
    one = await episode.ok("test_runner", repo="ledger", test="test_balance")
    assert [t["name"] for t in one["tests"]] == ["test_balance"]
    symbol = await episode.ok("find_symbol", repo="shopcart", name="calcTotal")
    assert {(d["path"], d["kind"]) for d in symbol["definitions"]} >= {
        ("shopcart/pricing.py", "function"),
        ("shopcart/checkout.py", "import"),
    }


async def test_edits_reach_state_and_journal(episode: Episode) -> None:
    patched = await episode.ok(
        "apply_patch",
        repo="textkit",
        path="textkit/paginate.py",
        find="start = page * per_page",
        replace="start = (page - 1) * per_page",
    )
    assert (
        patched["first_changed_line"] == 17
        and "+    start = (page - 1) * per_page" in patched["diff"]
    )
    again = await episode.raw(
        "apply_patch",
        {
            "repo": "textkit",
            "path": "textkit/paginate.py",
            "find": "start = page * per_page",
            "replace": "x",
        },
    )
    assert again.status_code == 409 and again.json()["error"]["field"] == "find"
    created = await episode.ok(
        "write_file",
        repo="textkit",
        path="tests/test_extra.py",
        content="def test_one():\n    assert 1 == 1\n",
    )
    same = await episode.ok(
        "write_file",
        repo="textkit",
        path="tests/test_extra.py",
        content="def test_one():\n    assert 1 == 1\n",
    )
    assert created["created"] is True and same["changed"] is False
    run = await episode.ok("test_runner", repo="textkit")
    assert run["status"] == "passed" and run["summary"]["total"] == 4
    journal = await episode.oracle("journal")
    assert [e["tool"] for e in journal["entries"]] == ["apply_patch", "write_file"]
    state = CodingState.model_validate(await episode.oracle("state"))
    assert "tests/test_extra.py" in state.repositories["textkit"].files
    assert state.repositories["textkit"].revision == 3


BAD_INPUTS = [
    ("read_file", {"path": "authsvc/users.py"}, 422, "repo"),
    ("read_file", {"repo": "authsvc", "path": 7}, 422, "path"),
    ("read_file", {"repo": "nope", "path": "a.py"}, 404, "repo"),
    ("read_file", {"repo": "authsvc", "path": "../../etc/passwd"}, 422, "path"),
    ("read_file", {"repo": "authsvc", "path": "/etc/passwd"}, 422, "path"),
    ("read_file", {"repo": "authsvc", "path": "authsvc/missing.py"}, 404, "path"),
    ("write_file", {"repo": "authsvc", "path": "bin/run.sh", "content": "rm -rf /"}, 422, "path"),
    ("code_interpreter", {"repo": "calc", "code": 123}, 422, "code"),
    ("code_interpreter", {"repo": "calc", "code": "   "}, 422, "code"),
    ("test_runner", {"repo": "ledger", "test": "test_nothing_like_this"}, 404, "test"),
    ("test_runner", {"repo": "ledger", "path": "ledger/money.py"}, 422, "path"),
    ("linter", {"repo": "billing", "path": "SPEC.md"}, 422, "path"),
    ("find_symbol", {"repo": "geo", "name": "not a name"}, 422, "name"),
    (
        "submit_answer",
        {"repo": "ledger", "items": [{"path": "tests/test_report.py"}]},
        422,
        "items",
    ),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    BAD_INPUTS,
    ids=[f"{b[0]}-{b[3]}-{i}" for i, b in enumerate(BAD_INPUTS)],
)
async def test_bad_input_names_the_field(
    episode: Episode, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await episode.raw(tool, body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["field"].startswith(field)


def _authsvc_task_states() -> tuple[CodingState, CodingState]:
    task = domain.tasks["coding-07-code089-sql-injection-patch"]
    s0 = task.initial_state()
    sf = s0.model_copy(deep=True)
    repo = sf.repositories["authsvc"]
    repo.files["authsvc/users.py"].content = SAFE_USERS
    repo.files["tests/test_sql_injection.py"] = RepoFile(
        path="tests/test_sql_injection.py", content=REGRESSION_TEST, updated_at=sf.now
    )
    return s0, sf


def test_code089_verifier_rejects_shortcuts() -> None:
    verify = domain.tasks["coding-07-code089-sql-injection-patch"].verify
    s0, good = _authsvc_task_states()
    assert verify(s0, good)
    no_regression = good.model_copy(deep=True)
    del no_regression.repositories["authsvc"].files["tests/test_sql_injection.py"]
    assert not verify(s0, no_regression)
    deleted_tests = good.model_copy(deep=True)
    del deleted_tests.repositories["authsvc"].files["tests/test_users.py"]
    assert not verify(s0, deleted_tests)
    backdoor = good.model_copy(deep=True)
    users = backdoor.repositories["authsvc"].files["authsvc/users.py"]
    users.content = users.content.replace(
        '    if row is None:\n        return None\n    return {"id": row[0], "username": row[1], '
        '"role": row[2]}\n',
        "    if row is None and password != 'letmein':\n        return None\n"
        '    return {"id": 1, "username": username, "role": "admin"}\n',
    )
    assert not verify(s0, backdoor)
    collateral = good.model_copy(deep=True)
    del collateral.repositories["ledger"].files["tests/test_report.py"]
    assert not verify(s0, collateral)
