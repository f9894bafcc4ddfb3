"""Reference solutions: one `await client.call(...)` per tool call, reading results as dicts.

Each reads what it changes before changing it, and takes what it reports from tool results.
The rewritten sources are what a careful engineer would write after reading the file.
"""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit import ToolClient

SAFE_USERS = '''"""Look up and authenticate users stored in the `users` table."""

import re

from authsvc.db import hash_password

USERNAME = re.compile(r"[A-Za-z0-9_.-]{3,32}")


def validate_username(username):
    """Usernames are 3-32 letters, digits, '_', '.' or '-'; anything else is a ValueError."""
    if not isinstance(username, str) or not USERNAME.fullmatch(username):
        raise ValueError(f"invalid username: {username!r}")
    return username


def find_user(conn, username):
    """The user's public record as a dict, or None."""
    validate_username(username)
    row = conn.execute(
        "SELECT id, username, role FROM users WHERE username = ?", (username,)
    ).fetchone()
    if row is None:
        return None
    return {"id": row[0], "username": row[1], "role": row[2]}


def authenticate(conn, username, password):
    """The user's record if the password matches, else None."""
    validate_username(username)
    salt_row = conn.execute("SELECT salt FROM users WHERE username = ?", (username,)).fetchone()
    if salt_row is None:
        return None
    digest = hash_password(password, salt_row[0])
    row = conn.execute(
        "SELECT id, username, role FROM users WHERE username = ? AND password_hash = ?",
        (username, digest),
    ).fetchone()
    if row is None:
        return None
    return {"id": row[0], "username": row[1], "role": row[2]}
'''

REGRESSION_TEST = """import pytest

from authsvc.db import connect
from authsvc.users import authenticate, find_user


def test_sql_injection_cannot_bypass_password():
    with pytest.raises(ValueError):
        authenticate(connect(), "alice' --", "wrong")


def test_sql_injection_in_lookup_rejected():
    with pytest.raises(ValueError):
        find_user(connect(), "x' OR '1'='1")
"""

SAFE_EXPR = '''"""Evaluate the arithmetic expressions users type into the spreadsheet cells."""

import ast
import operator

BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def evaluate(expression):
    """The value of an arithmetic expression such as "2 * (3 + 4) / 5"; ValueError otherwise."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from None
    return _value(tree.body)


def _value(node):
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        return BINARY[type(node.op)](_value(node.left), _value(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_value(node.operand))
    raise ValueError(f"unsupported syntax: {type(node).__name__}")
'''

GEO = '''"""Great-circle distances between (lat, lon) points in degrees."""

import math

EARTH_RADIUS_KM = 6371.0


def haversine_km(lat1, lon1, lat2, lon2):
    """Great-circle distance in km between two points given in degrees."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    d_phi, d_lambda = phi2 - phi1, math.radians(lon2 - lon1)
    h = math.sin(d_phi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def distance_km(a, b):
    return haversine_km(a[0], a[1], b[0], b[1])


def route_length_km(points):
    return sum((distance_km(a, b) for a, b in zip(points, points[1:])), 0.0)


def nearest(point, candidates):
    best, best_km = None, float("inf")
    for name, where in candidates.items():
        km = distance_km(point, where)
        if km < best_km:
            best, best_km = name, km
    return best
'''


async def _read(client: ToolClient, repo: str, path: str, *expected: str) -> str:
    content: str = (await client.call("read_file", repo=repo, path=path))["content"]
    for text in expected:
        if text not in content:
            raise AssertionError(f"{repo}/{path} no longer contains {text!r}")
    return content


async def _patch(client: ToolClient, repo: str, path: str, find: str, replace: str) -> None:
    await client.call("apply_patch", repo=repo, path=path, find=find, replace=replace)


async def fix_pagination(client: ToolClient) -> None:
    bug = "start = page * per_page"
    await _read(client, "textkit", "textkit/paginate.py", bug)
    await _patch(client, "textkit", "textkit/paginate.py", bug, "start = (page - 1) * per_page")


async def fix_rounding(client: ToolClient) -> None:
    bug = "return Decimal(int(discounted * 100)) / 100"
    await _read(client, "shopcart", "shopcart/pricing.py", bug, "CENT = ")
    await _patch(
        client,
        "shopcart",
        "shopcart/pricing.py",
        bug,
        "return discounted.quantize(CENT, rounding=ROUND_HALF_UP)",
    )


async def fix_undefined_name(client: ToolClient) -> None:
    report = await client.call("linter", repo="inventory", path="inventory/stock.py")
    undefined = [i for i in report["issues"] if i["code"] == "F821"]
    misspelt = undefined[0]["message"].split("'")[1]
    await _patch(
        client, "inventory", "inventory/stock.py", f"else {misspelt}\n", "else DEFAULT_THRESHOLD\n"
    )


async def clean_report_lint(client: ToolClient) -> None:
    path = "inventory/report.py"
    report = await client.call("linter", repo="inventory", path=path)
    content = await _read(client, "inventory", path)
    lines = content.splitlines(keepends=True)
    drop = {i["line"] for i in report["issues"] if i["code"] in ("F401", "F841")}
    cleaned = "".join(line for number, line in enumerate(lines, 1) if number not in drop)
    cleaned = cleaned.replace("if note == None:", "if note is None:")
    cleaned = cleaned.replace('header = f"Stock report"', 'header = "Stock report"')
    if "date(" not in cleaned:
        cleaned = cleaned.replace("from datetime import date\n", "")
    await client.call("write_file", repo="inventory", path=path, content=cleaned)


async def report_failing_tests(client: ToolClient) -> None:
    run = await client.call("test_runner", repo="ledger")
    failing = [
        {"path": t["file"], "name": t["name"]} for t in run["tests"] if t["status"] != "passed"
    ]
    await client.call("submit_answer", repo="ledger", items=failing)


async def report_sql_injection(client: ToolClient) -> None:
    scan = await client.call("security_analyzer", repo="reportdb")
    found = {(f["path"], f["function"]) for f in scan["findings"] if f["rule"] == "S608"}
    items = [{"path": path, "name": name} for path, name in sorted(found)]
    await client.call("submit_answer", repo="reportdb", items=items)


async def patch_sql_injection(client: ToolClient) -> None:
    scan = await client.call("security_analyzer", repo="authsvc")
    paths = sorted({f["path"] for f in scan["findings"] if f["rule"] == "S608"})
    await _read(
        client,
        "authsvc",
        paths[0],
        "def find_user(conn, username):",
        "def authenticate(conn, username, password):",
    )
    await client.call("write_file", repo="authsvc", path=paths[0], content=SAFE_USERS)
    await client.call(
        "write_file", repo="authsvc", path="tests/test_sql_injection.py", content=REGRESSION_TEST
    )


async def remove_eval(client: ToolClient) -> None:
    await _read(client, "calc", "calc/expr.py", "return eval(expression)")
    await client.call("write_file", repo="calc", path="calc/expr.py", content=SAFE_EXPR)


async def remove_shell(client: ToolClient) -> None:
    old = (
        '    command = f"tar -czf {dest} {source_dir}"\n'
        "    return subprocess.run(command, shell=True, check=True)\n"
    )
    await _read(client, "opsbackup", "ops/backup.py", old)
    await _patch(
        client,
        "opsbackup",
        "ops/backup.py",
        old,
        '    return subprocess.run(["tar", "-czf", dest, source_dir], check=True)\n',
    )


async def remove_secret(client: ToolClient) -> None:
    scan = await client.call("security_analyzer", repo="payments")
    secret = next(f for f in scan["findings"] if f["rule"] == "S105")
    content = await _read(client, "payments", secret["path"], "{API_KEY}")
    key_line = next(
        line for line in content.splitlines(keepends=True) if line.startswith("API_KEY =")
    )
    await _patch(client, "payments", secret["path"], key_line, "")
    await _patch(
        client, "payments", secret["path"], "{API_KEY}", "{settings.get_secret('PAYMENTS_API_KEY')}"
    )


async def extract_helper(client: ToolClient) -> None:
    await _read(
        client,
        "geo",
        "geo/distance.py",
        "def distance_km(a, b):",
        "def route_length_km(points):",
        "def nearest(point, candidates):",
    )
    await client.call("write_file", repo="geo", path="geo/distance.py", content=GEO)


async def rename_function(client: ToolClient) -> None:
    usage: dict[str, Any] = await client.call("find_symbol", repo="shopcart", name="calcTotal")
    definition = next(d["path"] for d in usage["definitions"] if d["kind"] == "function")
    callers = sorted(
        {
            r["path"]
            for r in usage["references"] + usage["definitions"]
            if r["path"] != definition and not r["path"].startswith("tests/")
        }
    )
    await _read(client, "shopcart", definition, "def calcTotal(items, discount_percent=0):")
    await _patch(
        client,
        "shopcart",
        definition,
        "def calcTotal(items, discount_percent=0):",
        "def calculate_total(items, discount_percent=0):",
    )
    await _patch(
        client,
        "shopcart",
        definition,
        "rounding=ROUND_HALF_UP)\n",
        "rounding=ROUND_HALF_UP)\n\n\ncalcTotal = calculate_total  # deprecated alias\n",
    )
    for path in callers:
        content = await _read(client, "shopcart", path)
        await client.call(
            "write_file",
            repo="shopcart",
            path=path,
            content=content.replace("calcTotal", "calculate_total"),
        )


async def fix_root_cause(client: ToolClient) -> None:
    run = await client.call("test_runner", repo="ledger")
    failing = [t for t in run["tests"] if t["status"] != "passed"]
    if not failing:
        raise AssertionError("expected failing ledger tests")
    bug = '        cleaned = cleaned.strip("()")\n'
    await _read(client, "ledger", "ledger/money.py", bug)
    await _patch(
        client, "ledger", "ledger/money.py", bug, '        cleaned = "-" + cleaned[1:-1]\n'
    )


async def escalate_conflict(client: ToolClient) -> None:
    spec = await _read(client, "billing", "SPEC.md", "14 days", "30 days")
    reason = next(line for line in spec.splitlines() if line.startswith("5.2"))
    await client.call(
        "escalate_to_human",
        reason=f"SPEC.md contradicts itself on the refund window (14 vs 30 days): {reason}",
    )
