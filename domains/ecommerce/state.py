"""The shop's world: catalogue, stock, customers, coupons, orders, returns, submitted answers.

Money is integer cents everywhere in state (no float rounding can creep into a total);
tools show it as `Money` with a decimal string. `today` and `now` are fixed in state and
ids come from counters, so two runs of the same calls produce the same records.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Literal, get_args

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

Category = Literal[
    "keyboards", "mice", "monitors", "audio", "cables", "power", "phone", "webcams", "gift-cards"
]
CATEGORIES: tuple[str, ...] = get_args(Category)
OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]
RefundMethod = Literal["original_payment", "store_credit"]

RETURN_WINDOW_DAYS = 30
FREE_SHIPPING_CENTS = 5000
SHIPPING_CENTS = 599


class Money(BaseModel):
    """How an amount is shown: exact cents plus a decimal string, never a float."""

    amount: str
    amount_cents: int
    currency: str = "USD"


def money(cents: int) -> Money:
    return Money(amount=f"{Decimal(cents) / 100:.2f}", amount_cents=cents)


def to_cents(value: float | str | Decimal) -> int:
    """Dollars as given by a caller -> cents, half-up, via Decimal (0.1 + 0.2 stays exact)."""
    return int((Decimal(str(value)) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def percent_of(cents: int, percent: int) -> int:
    return int((Decimal(cents) * percent / 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


class Product(BaseModel):
    sku: str
    name: str
    brand: str
    category: Category
    price_cents: int
    rating: float
    returnable: bool = True
    attributes: dict[str, str | int | float | bool] = Field(default_factory=dict)


class Stock(BaseModel):
    on_hand: int
    warehouse: str
    restock_date: str | None = None


class Customer(BaseModel):
    customer_id: str
    name: str
    email: str
    default_address: str
    orders_count: int = 0


class Coupon(BaseModel):
    code: str
    description: str
    percent_off: int | None = None
    amount_off_cents: int | None = None
    min_subtotal_cents: int = 0
    max_discount_cents: int | None = None
    category: Category | None = None
    first_order_only: bool = False
    expires_on: str


class OrderLine(BaseModel):
    sku: str
    name: str
    quantity: int
    unit_price_cents: int
    line_total_cents: int


class Order(BaseModel):
    order_id: str
    customer_id: str
    lines: list[OrderLine]
    subtotal_cents: int
    discount_cents: int = 0
    shipping_cents: int = 0
    total_cents: int
    currency: str = "USD"
    coupon_code: str | None = None
    shipping_address: str
    status: OrderStatus = "placed"
    placed_at: str
    delivered_on: str | None = None
    tracking_number: str | None = None


class ReturnRecord(BaseModel):
    return_id: str
    order_id: str
    skus: list[str]
    reason: str
    refund_method: RefundMethod
    refund_cents: int
    status: Literal["approved"] = "approved"
    created_at: str


class Answer(BaseModel):
    """A typed answer to an information request (submit_answer)."""

    order_id: str | None = None
    order_status: OrderStatus | None = None
    tracking_number: str | None = None
    sku: str | None = None
    quantity: int | None = None
    amount_cents: int | None = None
    note: str = ""


class ShopState(DomainState):
    today: str = "2026-03-02"
    now: str = "2026-03-02T10:00:00Z"
    next_order_number: int = 50008
    next_return_number: int = 7001
    products: dict[str, Product] = Field(default_factory=dict)
    inventory: dict[str, Stock] = Field(default_factory=dict)
    customers: dict[str, Customer] = Field(default_factory=dict)
    coupons: dict[str, Coupon] = Field(default_factory=dict)
    orders: dict[str, Order] = Field(default_factory=dict)
    returns: dict[str, ReturnRecord] = Field(default_factory=dict)
    answers: list[Answer] = Field(default_factory=list)


def shipping_for(discounted_subtotal_cents: int) -> int:
    return 0 if discounted_subtotal_cents >= FREE_SHIPPING_CENTS else SHIPPING_CENTS
