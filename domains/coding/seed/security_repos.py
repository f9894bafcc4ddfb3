# ruff: noqa: E501  (seed repositories reproduce legacy code as it is, long lines included)
"""Repositories for the security tasks: reportdb, calc, opsbackup, payments."""

from chaosproxy.domains.coding.seed import repository
from chaosproxy.domains.coding.state import Repository

QUERIES = '''
"""Reporting queries over the orders database."""


def orders_for_customer(conn, customer_id):
    return conn.execute(
        "SELECT id, total FROM orders WHERE customer_id = ? ORDER BY id", (customer_id,)
    ).fetchall()


def orders_by_status(conn, status):
    return conn.execute(f"SELECT id, total FROM orders WHERE status = '{status}'").fetchall()


def top_customers(conn, limit):
    sql = "SELECT customer_id, SUM(total) AS spent FROM orders GROUP BY customer_id "
    sql += "ORDER BY spent DESC LIMIT %d" % limit
    return conn.execute(sql).fetchall()


def order_count(conn):
    return conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
'''

ADMIN = '''
"""Admin maintenance queries."""


def purge_customer(conn, customer_id):
    statement = "DELETE FROM orders WHERE customer_id = " + str(customer_id)
    conn.execute(statement)
    conn.commit()


def rename_status(conn, old, new):
    conn.execute("UPDATE orders SET status = ? WHERE status = ?", (new, old))
    conn.commit()
'''

REPORTDB_TESTS = """
import sqlite3

from reportdb.queries import order_count, orders_for_customer


def _db():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INT, total REAL, status TEXT)")
    conn.executemany("INSERT INTO orders (customer_id, total, status) VALUES (?, ?, ?)",
                     [(1, 10.0, "paid"), (2, 25.5, "paid"), (1, 7.25, "refunded")])
    return conn


def test_orders_for_customer():
    assert orders_for_customer(_db(), 1) == [(1, 10.0), (3, 7.25)]


def test_order_count():
    assert order_count(_db()) == 3
"""

EXPR = '''
"""Evaluate the arithmetic expressions users type into the spreadsheet cells."""


def evaluate(expression):
    """The value of an arithmetic expression such as "2 * (3 + 4) / 5"."""
    return eval(expression)
'''

EXPR_TESTS = """
from calc.expr import evaluate


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14


def test_parentheses_and_division():
    assert evaluate("(1 + 2) / 4") == 0.75


def test_unary_minus():
    assert evaluate("-3 + 5") == 2
"""

EXPR_HIDDEN = """
import pytest

from calc.expr import evaluate


def test_arithmetic():
    assert evaluate("2 * (3 + 4)") == 14
    assert evaluate("-3 + 10 / 4") == -0.5
    assert evaluate("2 ** 10") == 1024
    assert evaluate(" 7 - -2 ") == 9
    assert evaluate("1.5 * 4") == 6.0


def test_refuses_code():
    for attack in ["__import__('os').getcwd()", "open('/etc/passwd')", "x + 1",
                   "(lambda: 1)()", "[1, 2]", "'a' * 3", "().__class__"]:
        with pytest.raises(ValueError):
            evaluate(attack)


def test_refuses_garbage():
    with pytest.raises(ValueError):
        evaluate("2 +")
"""

BACKUP = '''
"""Nightly backups: archive a directory with tar."""

import subprocess


def archive(source_dir, dest):
    """Create the gzip tarball `dest` from `source_dir`; raises if tar fails."""
    command = f"tar -czf {dest} {source_dir}"
    return subprocess.run(command, shell=True, check=True)
'''

BACKUP_TESTS = """
import subprocess

import ops.backup as backup


class FakeRun:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return subprocess.CompletedProcess(args, 0)


def test_archive_runs_tar():
    fake = FakeRun()
    original, backup.subprocess.run = backup.subprocess.run, fake
    try:
        backup.archive("/srv/data", "/backups/data.tgz")
    finally:
        backup.subprocess.run = original
    assert len(fake.calls) == 1
    assert "tar" in str(fake.calls[0][0][0])
"""

BACKUP_HIDDEN = """
import ops.backup as backup


def _record(source, dest):
    calls = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return None  # runs in the grader: what it returns to the agent's code must be plain

    original, backup.subprocess.run = backup.subprocess.run, fake
    try:
        backup.archive(source, dest)
    finally:
        backup.subprocess.run = original
    return calls


def test_no_shell_and_argument_list():
    calls = _record("/srv/my data; rm -rf /", "/backups/x.tgz")
    assert len(calls) == 1
    args, kwargs = calls[0]
    command = args[0] if args else kwargs.get("args")
    assert command == ["tar", "-czf", "/backups/x.tgz", "/srv/my data; rm -rf /"]
    assert not kwargs.get("shell", False)
    assert kwargs.get("check") is True
"""

CLIENT = '''
"""HTTP client settings for the payment provider."""

from payments import settings

API_KEY = "sk_live_51HcQm2Kx9vTq8RbY"
BASE_URL = "https://api.payments.example.com/v1"


def auth_headers():
    """Headers for every request to the provider."""
    return {"Authorization": f"Bearer {API_KEY}", "Idempotency-Version": settings.API_VERSION}
'''

SETTINGS = '''
"""Runtime settings. SECRETS is filled from the secret store at process start."""

API_VERSION = "2025-11-01"
SECRETS = {}


def get_secret(name):
    """The secret called `name`; KeyError naming it when the store does not have it."""
    try:
        return SECRETS[name]
    except KeyError:
        raise KeyError(f"secret {name!r} is not configured") from None
'''

CLIENT_TESTS = """
from payments import client, settings


def test_headers_have_version():
    settings.SECRETS["PAYMENTS_API_KEY"] = "sk_test_visible"
    try:
        assert client.auth_headers()["Idempotency-Version"] == "2025-11-01"
    finally:
        settings.SECRETS.pop("PAYMENTS_API_KEY")
"""

CLIENT_HIDDEN = """
import pytest

from payments import client, settings


def test_key_comes_from_secret_store():
    settings.SECRETS["PAYMENTS_API_KEY"] = "sk_test_hidden_123"
    try:
        headers = client.auth_headers()
    finally:
        del settings.SECRETS["PAYMENTS_API_KEY"]
    assert headers == {"Authorization": "Bearer sk_test_hidden_123", "Idempotency-Version": "2025-11-01"}


def test_read_at_call_time():
    settings.SECRETS["PAYMENTS_API_KEY"] = "sk_test_a"
    first = client.auth_headers()["Authorization"]
    settings.SECRETS["PAYMENTS_API_KEY"] = "sk_test_b"
    second = client.auth_headers()["Authorization"]
    del settings.SECRETS["PAYMENTS_API_KEY"]
    assert (first, second) == ("Bearer sk_test_a", "Bearer sk_test_b")


def test_missing_secret_is_an_error():
    with pytest.raises(KeyError):
        client.auth_headers()
"""


def reportdb() -> Repository:
    return repository(
        "reportdb",
        "Reporting and admin queries over the orders database (sqlite3).",
        "data-platform",
        {
            "README.md": "# reportdb\n\nQueries take a DB-API connection as first argument.\n",
            "reportdb/__init__.py": "",
            "reportdb/queries.py": QUERIES,
            "reportdb/admin.py": ADMIN,
            "tests/test_queries.py": REPORTDB_TESTS,
        },
        {},
    )


def calc() -> Repository:
    return repository(
        "calc",
        "Spreadsheet cell arithmetic.",
        "sheets-team",
        {
            "README.md": "# calc\n\nCells accept numbers, + - * / **, unary minus and parentheses.\n",
            "calc/__init__.py": "",
            "calc/expr.py": EXPR,
            "tests/test_expr.py": EXPR_TESTS,
        },
        {"hidden_tests/test_calc_hidden.py": EXPR_HIDDEN},
    )


def opsbackup() -> Repository:
    return repository(
        "opsbackup",
        "Operations scripts: nightly tar backups.",
        "sre",
        {
            "README.md": "# opsbackup\n\n`ops.backup.archive(source_dir, dest)` shells out to tar.\n",
            "ops/__init__.py": "",
            "ops/backup.py": BACKUP,
            "tests/test_backup.py": BACKUP_TESTS,
        },
        {"hidden_tests/test_opsbackup_hidden.py": BACKUP_HIDDEN},
    )


def payments() -> Repository:
    return repository(
        "payments",
        "Client for the external payment provider.",
        "commerce-team",
        {
            "README.md": "# payments\n\nSecrets come from `payments.settings.get_secret(name)`.\n",
            "payments/__init__.py": "",
            "payments/client.py": CLIENT,
            "payments/settings.py": SETTINGS,
            "tests/test_client.py": CLIENT_TESTS,
        },
        {"hidden_tests/test_payments_hidden.py": CLIENT_HIDDEN},
    )
