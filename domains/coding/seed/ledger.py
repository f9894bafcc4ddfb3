"""ledger: bank-statement parsing whose balance is wrong for refunds in parentheses."""

from chaosproxy.domains.coding.seed import repository
from chaosproxy.domains.coding.state import Repository

MONEY = '''
"""Parse amounts as printed on bank statements: "$1,234.50", "-12.00", "(45.10)"."""

from decimal import Decimal, InvalidOperation


def parse_amount(text):
    """The amount as a Decimal; accounting parentheses mean a negative amount."""
    cleaned = text.strip().replace("$", "").replace(",", "")
    if cleaned.startswith("(") and cleaned.endswith(")"):
        cleaned = cleaned.strip("()")
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
'''

REPORT = '''
"""Balances and monthly totals over statement rows {"date": "YYYY-MM-DD", "amount": "..."}."""

from collections import defaultdict
from decimal import Decimal

from ledger.money import parse_amount


def balance(rows, opening="0.00"):
    total = parse_amount(opening)
    for row in rows:
        total += parse_amount(row["amount"])
    return total


def monthly_totals(rows):
    months = defaultdict(lambda: Decimal("0.00"))
    for row in rows:
        months[row["date"][:7]] += parse_amount(row["amount"])
    return dict(sorted(months.items()))
'''

MONEY_TESTS = """
from decimal import Decimal

import pytest

from ledger.money import parse_amount


def test_plain_amount():
    assert parse_amount("12.50") == Decimal("12.50")


def test_thousands_and_currency():
    assert parse_amount("$1,234.50") == Decimal("1234.50")


def test_minus_sign():
    assert parse_amount("-12.00") == Decimal("-12.00")


def test_garbage():
    with pytest.raises(ValueError):
        parse_amount("twelve")
"""

REPORT_TESTS = """
from decimal import Decimal

from ledger.report import balance, monthly_totals

ROWS = [
    {"date": "2026-01-05", "amount": "$1,200.00"},
    {"date": "2026-01-19", "amount": "(45.10)"},
    {"date": "2026-02-02", "amount": "-300.00"},
    {"date": "2026-02-14", "amount": "12.35"},
]


def test_empty_statement():
    assert balance([], opening="100.00") == Decimal("100.00")


def test_balance():
    assert balance(ROWS) == Decimal("867.25")


def test_monthly_totals():
    assert monthly_totals(ROWS) == {"2026-01": Decimal("1154.90"), "2026-02": Decimal("-287.65")}


def test_credit_only_month():
    assert monthly_totals([ROWS[0]]) == {"2026-01": Decimal("1200.00")}
"""

HIDDEN = """
from decimal import Decimal

import pytest

from ledger.money import parse_amount
from ledger.report import balance


def test_parentheses_are_negative():
    assert parse_amount("(45.10)") == Decimal("-45.10")
    assert parse_amount(" ($1,000.00) ") == Decimal("-1000.00")


def test_other_formats_unchanged():
    assert parse_amount("$1,234.50") == Decimal("1234.50")
    assert parse_amount("-12.00") == Decimal("-12.00")
    with pytest.raises(ValueError):
        parse_amount("(abc)")


def test_balance_with_refunds():
    rows = [{"date": "2026-03-01", "amount": "100.00"}, {"date": "2026-03-02", "amount": "(20.00)"}]
    assert balance(rows, opening="(5.00)") == Decimal("75.00")
"""


def ledger() -> Repository:
    return repository(
        "ledger",
        "Bank-statement import: amount parsing, balances and monthly totals.",
        "finance-eng",
        {
            "README.md": "# ledger\n\nAmounts in parentheses are debits/refunds (negative).\n",
            "ledger/__init__.py": "",
            "ledger/money.py": MONEY,
            "ledger/report.py": REPORT,
            "tests/test_money.py": MONEY_TESTS,
            "tests/test_report.py": REPORT_TESTS,
        },
        {"hidden_tests/test_ledger_hidden.py": HIDDEN},
    )
