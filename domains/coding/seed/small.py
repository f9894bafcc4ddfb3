# ruff: noqa: E501  (seed repositories reproduce legacy code as it is, long lines included)
"""Small repositories for the simple debug and refactor tasks: textkit, shopcart, inventory."""

from chaosproxy.domains.coding.seed import repository
from chaosproxy.domains.coding.state import Repository

PAGINATE = '''
"""Split result lists into 1-based pages."""

import math


def total_pages(count, per_page):
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return max(1, math.ceil(count / per_page))


def paginate(items, page, per_page=10):
    """Items on 1-based `page`, with paging metadata."""
    if page < 1:
        raise ValueError("page must be at least 1")
    pages = total_pages(len(items), per_page)
    start = page * per_page
    return {
        "items": list(items[start:start + per_page]),
        "page": page,
        "pages": pages,
        "has_next": page < pages,
    }
'''

PAGINATE_TESTS = """
from textkit.paginate import paginate, total_pages


def test_total_pages_rounds_up():
    assert total_pages(25, 10) == 3


def test_first_page():
    assert paginate(list(range(25)), 1)["items"] == list(range(10))


def test_second_page():
    assert paginate(list(range(25)), 2)["items"] == list(range(10, 20))
"""

PAGINATE_HIDDEN = """
import pytest

from textkit.paginate import paginate

ITEMS = [f"row-{i}" for i in range(23)]


def test_every_page():
    assert paginate(ITEMS, 1, 5)["items"] == ITEMS[0:5]
    assert paginate(ITEMS, 3, 5)["items"] == ITEMS[10:15]
    assert paginate(ITEMS, 5, 5)["items"] == ITEMS[20:23]


def test_metadata():
    last = paginate(ITEMS, 5, 5)
    assert (last["page"], last["pages"], last["has_next"]) == (5, 5, False)
    assert paginate(ITEMS, 4, 5)["has_next"] is True


def test_past_the_end_is_empty():
    assert paginate(ITEMS, 9, 5)["items"] == []


def test_bad_page():
    with pytest.raises(ValueError):
        paginate(ITEMS, 0)
"""

SLUG = '''
"""URL slugs for article titles."""

import re


def slugify(title):
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)
'''

PRICING = '''
"""Cart pricing: line totals, discounts, tax. Money is Decimal, rounded half-up to the cent."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def apply_discount(amount, percent):
    """`amount` reduced by `percent` (0-100), rounded half-up to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    discounted = Decimal(amount) * (Decimal(100) - Decimal(percent)) / Decimal(100)
    return Decimal(int(discounted * 100)) / 100


def calcTotal(items, discount_percent=0):
    """Sum of price * quantity over cart lines, after the cart-wide discount."""
    subtotal = sum((Decimal(str(line["price"])) * line["quantity"] for line in items), Decimal(0))
    return apply_discount(subtotal, discount_percent).quantize(CENT, rounding=ROUND_HALF_UP)
'''

CHECKOUT = '''
"""Checkout: turns a cart into an order summary."""

from shopcart.pricing import calcTotal


def order_summary(cart, discount_percent=0):
    total = calcTotal(cart["items"], discount_percent)
    return {"customer": cart["customer"], "lines": len(cart["items"]), "total": str(total)}
'''

PRICING_TESTS = """
from decimal import Decimal

from shopcart.checkout import order_summary
from shopcart.pricing import apply_discount, calcTotal

CART = {"customer": "C-1001", "items": [{"price": "19.99", "quantity": 2}, {"price": "5.00", "quantity": 1}]}


def test_no_discount():
    assert apply_discount(Decimal("20.00"), 0) == Decimal("20.00")


def test_round_discount():
    assert apply_discount(Decimal("40.00"), 25) == Decimal("30.00")


def test_total():
    assert calcTotal(CART["items"]) == Decimal("44.98")


def test_order_summary():
    assert order_summary(CART, 10) == {"customer": "C-1001", "lines": 2, "total": "40.48"}
"""

ROUNDING_HIDDEN = """
from decimal import Decimal

from shopcart.pricing import apply_discount


def test_rounds_half_up_to_the_cent():
    assert apply_discount(Decimal("10.05"), 10) == Decimal("9.05")
    assert apply_discount(Decimal("0.99"), 50) == Decimal("0.50")
    assert apply_discount(Decimal("19.99"), 15) == Decimal("16.99")


def test_exact_values_unchanged():
    assert apply_discount(Decimal("40.00"), 25) == Decimal("30.00")
    assert apply_discount(Decimal("3.10"), 0) == Decimal("3.10")
"""

RENAME_HIDDEN = """
from decimal import Decimal

import shopcart.checkout as checkout
from shopcart.pricing import calcTotal, calculate_total

ITEMS = [{"price": "2.50", "quantity": 4}, {"price": "1.25", "quantity": 2}]


def test_new_name():
    assert calculate_total(ITEMS) == Decimal("12.50")
    assert calculate_total(ITEMS, 20) == Decimal("10.00")


def test_deprecated_alias_still_works():
    assert calcTotal(ITEMS, 20) == Decimal("10.00")


def test_checkout_uses_new_name():
    assert "calculate_total" in vars(checkout)
    assert "calcTotal" not in vars(checkout)
    assert checkout.order_summary({"customer": "C-7", "items": ITEMS})["total"] == "12.50"
"""

STOCK = '''
"""Stock levels and reorder decisions for the warehouse."""

DEFAULT_THRESHOLD = 10


def stock_level(item):
    return item["on_hand"] - item["reserved"]


def reorder_needed(item, threshold=None):
    """True when the free stock is below the threshold (default DEFAULT_THRESHOLD)."""
    limit = threshold if threshold is not None else DEFAULT_TRESHOLD
    return stock_level(item) < limit
'''

REPORT = '''
"""A plain-text stock report."""

import json
import os
from datetime import date

from inventory.stock import reorder_needed, stock_level


def report_lines(items, threshold=None):
    generated = date(2026, 3, 2)
    lines = []
    for item in items:
        level = stock_level(item)
        flag = " REORDER" if reorder_needed(item, threshold) == True else ""
        note = item.get("note")
        if note == None:
            note = ""
        lines.append(f"{item['sku']}: {level}{flag}" + (f" ({note})" if note else ""))
    header = f"Stock report"
    return [header] + lines
'''

STOCK_TESTS = """
from inventory.report import report_lines
from inventory.stock import reorder_needed, stock_level

WIDGET = {"sku": "W-1", "on_hand": 12, "reserved": 5}


def test_stock_level():
    assert stock_level(WIDGET) == 7


def test_reorder_with_threshold():
    assert reorder_needed(WIDGET, threshold=8) is True
    assert reorder_needed(WIDGET, threshold=5) is False


def test_report_with_threshold():
    assert report_lines([WIDGET], threshold=8) == ["Stock report", "W-1: 7 REORDER"]
"""

STOCK_HIDDEN = """
from inventory.stock import DEFAULT_THRESHOLD, reorder_needed


def test_default_threshold():
    assert DEFAULT_THRESHOLD == 10
    assert reorder_needed({"on_hand": 12, "reserved": 5}) is True
    assert reorder_needed({"on_hand": 30, "reserved": 5}) is False
    assert reorder_needed({"on_hand": 10, "reserved": 0}) is False


def test_explicit_threshold_unchanged():
    assert reorder_needed({"on_hand": 12, "reserved": 5}, threshold=5) is False
"""

REPORT_HIDDEN = """
from inventory.report import report_lines

ITEMS = [
    {"sku": "W-1", "on_hand": 12, "reserved": 5, "note": "fragile"},
    {"sku": "B-2", "on_hand": 40, "reserved": 0, "note": None},
    {"sku": "C-3", "on_hand": 3, "reserved": 1},
]


def test_report_unchanged():
    assert report_lines(ITEMS, threshold=8) == [
        "Stock report", "W-1: 7 REORDER (fragile)", "B-2: 40", "C-3: 2 REORDER",
    ]
    assert report_lines([], threshold=1) == ["Stock report"]
"""


def textkit() -> Repository:
    return repository(
        "textkit",
        "Text helpers shared by the web front-ends: pagination and slugs.",
        "web-platform",
        {
            "README.md": "# textkit\n\n`paginate(items, page, per_page)` uses 1-based pages.\n",
            "textkit/__init__.py": "",
            "textkit/paginate.py": PAGINATE,
            "textkit/slug.py": SLUG,
            "tests/test_paginate.py": PAGINATE_TESTS,
        },
        {"hidden_tests/test_textkit_hidden.py": PAGINATE_HIDDEN},
    )


def shopcart(hidden: str = ROUNDING_HIDDEN) -> Repository:
    return repository(
        "shopcart",
        "Shopping-cart pricing and checkout for the web shop.",
        "commerce-team",
        {
            "README.md": "# shopcart\n\nPrices are Decimal; totals round half-up to the cent.\n",
            "shopcart/__init__.py": "",
            "shopcart/pricing.py": PRICING,
            "shopcart/checkout.py": CHECKOUT,
            "tests/test_pricing.py": PRICING_TESTS,
        },
        {"hidden_tests/test_shopcart_hidden.py": hidden},
    )


def inventory(hidden: str = STOCK_HIDDEN) -> Repository:
    return repository(
        "inventory",
        "Warehouse stock levels, reorder rules and the daily stock report.",
        "ops-tools",
        {
            "README.md": "# inventory\n\nFree stock = on_hand - reserved; reorder below the threshold.\n",
            "inventory/__init__.py": "",
            "inventory/stock.py": STOCK,
            "inventory/report.py": REPORT,
            "tests/test_stock.py": STOCK_TESTS,
        },
        {"hidden_tests/test_inventory_hidden.py": hidden},
    )
