"""Coupon rules and order arithmetic, shared by the tools and the task verifiers.

All amounts are integer cents; percentages round half-up once, on the discount.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from chaosproxy.domains.ecommerce.state import (
    RETURN_WINDOW_DAYS,
    Coupon,
    Customer,
    Order,
    Product,
    percent_of,
    shipping_for,
)


@dataclass(frozen=True)
class CouponCheck:
    valid: bool
    discount_cents: int
    reason: str | None = None


def dollars(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def check_coupon(
    coupon: Coupon, eligible_cents: int, today: str, customer: Customer | None = None
) -> CouponCheck:
    """Is the coupon usable on this eligible subtotal, and what does it take off?"""
    if today > coupon.expires_on:
        return CouponCheck(False, 0, f"coupon {coupon.code} expired on {coupon.expires_on}")
    if coupon.first_order_only and customer is not None and customer.orders_count > 0:
        return CouponCheck(False, 0, f"coupon {coupon.code} is only valid on a first order")
    if coupon.category is not None and eligible_cents == 0:
        return CouponCheck(
            False, 0, f"coupon {coupon.code} applies only to {coupon.category} items"
        )
    if eligible_cents < coupon.min_subtotal_cents:
        return CouponCheck(
            False,
            0,
            f"coupon {coupon.code} needs a subtotal of at least "
            f"{dollars(coupon.min_subtotal_cents)}"
            f" (got {dollars(eligible_cents)})",
        )
    if coupon.percent_off is not None:
        discount = percent_of(eligible_cents, coupon.percent_off)
    else:
        discount = coupon.amount_off_cents or 0
    if coupon.max_discount_cents is not None:
        discount = min(discount, coupon.max_discount_cents)
    return CouponCheck(True, min(discount, eligible_cents))


def eligible_cents(coupon: Coupon, lines: list[tuple[Product, int]]) -> int:
    return sum(
        product.price_cents * quantity
        for product, quantity in lines
        if coupon.category is None or product.category == coupon.category
    )


@dataclass(frozen=True)
class Totals:
    subtotal_cents: int
    discount_cents: int
    shipping_cents: int
    total_cents: int


def totals(subtotal_cents: int, discount_cents: int) -> Totals:
    shipping = shipping_for(subtotal_cents - discount_cents)
    return Totals(
        subtotal_cents, discount_cents, shipping, subtotal_cents - discount_cents + shipping
    )


def return_window_end(order: Order) -> str | None:
    if order.delivered_on is None:
        return None
    return (date.fromisoformat(order.delivered_on) + timedelta(days=RETURN_WINDOW_DAYS)).isoformat()


def refund_cents(
    order: Order, skus: list[str], products: dict[str, Product], coupon: Coupon | None
) -> int:
    """Line totals of the returned skus less their pro-rata share of the order's discount."""

    def eligible(sku: str) -> bool:
        return (
            coupon is None or coupon.category is None or products[sku].category == coupon.category
        )

    eligible_total = sum(line.line_total_cents for line in order.lines if eligible(line.sku))
    refund = 0
    for line in order.lines:
        if line.sku not in skus:
            continue
        share = 0
        if order.discount_cents and eligible_total and eligible(line.sku):
            share = (order.discount_cents * line.line_total_cents * 2 + eligible_total) // (
                2 * eligible_total
            )
        refund += line.line_total_cents - share
    return refund
