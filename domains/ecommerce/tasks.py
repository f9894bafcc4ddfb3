"""The e-commerce task suite: simple orders (level 1), cheapest in stock + coupon (level 2).

Verifiers work out the expected outcome from the initial state (the cheapest product in
stock, the better coupon, the refund) instead of trusting hard-coded answers, and demand
exactly one new order or return: a blind retry that orders twice fails the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chaosproxy.domains.ecommerce.pricing import check_coupon, eligible_cents, refund_cents, totals
from chaosproxy.domains.ecommerce.state import Answer, Order, Product, ShopState
from chaosproxy.domains.ecommerce.tools import domain
from chaosproxy.domains.kit import Solver, ToolCallFailed, ToolClient
from chaosproxy.domains.kit.declare import Difficulty

Verifier = Callable[[ShopState, ShopState], bool]


def norm_address(text: str) -> str:
    """Case, punctuation and spacing do not change an address."""
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


def new_orders(s0: ShopState, sf: ShopState) -> list[Order]:
    return [o for oid, o in sf.orders.items() if oid not in s0.orders]


def history_intact(s0: ShopState, sf: ShopState, returns: int = 0) -> bool:
    """Old orders unchanged and exactly `returns` new returns."""
    return all(sf.orders.get(oid) == o for oid, o in s0.orders.items()) and (
        len(sf.returns) - len(s0.returns) == returns
    )


def lines(order: Order) -> dict[str, int]:
    return {line.sku: line.quantity for line in order.lines}


def one_order(
    s0: ShopState,
    sf: ShopState,
    customer_id: str,
    items: dict[str, int],
    address: str,
    coupon: str | None = None,
) -> bool:
    """Exactly one new order, as asked, with the coupon's discount computed from s0."""
    new = new_orders(s0, sf)
    if len(new) != 1 or not history_intact(s0, sf):
        return False
    order = new[0]
    if (
        order.customer_id != customer_id
        or lines(order) != items
        or norm_address(order.shipping_address) != norm_address(address)
        or order.coupon_code != coupon
    ):
        return False
    bought = [(s0.products[sku], qty) for sku, qty in items.items()]
    subtotal = sum(p.price_cents * q for p, q in bought)
    discount = 0
    if coupon is not None:
        rule = s0.coupons[coupon]
        discount = check_coupon(
            rule, eligible_cents(rule, bought), s0.today, s0.customers[customer_id]
        ).discount_cents
    expected = totals(subtotal, discount)
    return (order.subtotal_cents, order.discount_cents, order.total_cents) == (
        expected.subtotal_cents,
        expected.discount_cents,
        expected.total_cents,
    )


def last_answer(s0: ShopState, sf: ShopState) -> Answer | None:
    return sf.answers[-1] if len(sf.answers) > len(s0.answers) else None


def no_writes(s0: ShopState, sf: ShopState) -> bool:
    return not new_orders(s0, sf) and history_intact(s0, sf) and sf.inventory == s0.inventory


def cheapest_in_stock(s0: ShopState, fits: Callable[[Product], bool], quantity: int = 1) -> str:
    candidates = [
        p for p in s0.products.values() if fits(p) and s0.inventory[p.sku].on_hand >= quantity
    ]
    return min(candidates, key=lambda p: (p.price_cents, p.sku)).sku


def add(
    slug: str,
    number: int,
    description: str,
    verify: Verifier,
    l_min: int,
    difficulty: Difficulty,
    tags: list[str],
    *,
    escalation_acceptable: bool = False,
) -> Callable[[Solver], Solver]:
    """Register the decorated coroutine as the reference solution of task ecommerce-NN-slug."""
    return domain.solution(
        id=f"ecommerce-{number:02d}-{slug}",
        description=description,
        verify=verify,
        l_min=l_min,
        difficulty=difficulty,
        tags=tags,
        escalation_acceptable=escalation_acceptable,
    )


async def first_in_stock(
    client: ToolClient, products: list[dict[str, Any]], quantity: int = 1
) -> str:
    """Check stock cheapest first; the SKU of the first product with enough units."""
    for product in sorted(products, key=lambda p: (p["price"]["amount_cents"], p["sku"])):
        stock = await client.call("check_inventory", sku=product["sku"])
        if stock["available"] >= quantity:
            return str(product["sku"])
    raise ToolCallFailed(409, "no product has enough stock")


async def find_sku(client: ToolClient, query: str) -> str:
    found = await client.call("search_products", query=query)
    return str(found["products"][0]["sku"])


# --- level 1: simple orders, status, returns ---------------------------------------------

CHLOE = "88 Harbor Way, Apt 4B, Seattle, WA 98101"


@add(
    "order-by-sku",
    1,
    "Place an order for Chloe Nguyen (customer C-1003): 2 Keychron K2 keyboards, SKU KB-7712, "
    f"shipped to {CHLOE}. No coupon.",
    lambda s0, sf: one_order(s0, sf, "C-1003", {"KB-7712": 2}, CHLOE),
    1,
    "simple",
    ["order"],
)
async def _e01(client: ToolClient) -> None:
    await client.call(
        "create_order",
        customer_id="C-1003",
        items=[{"sku": "KB-7712", "quantity": 2}],
        shipping_address=CHLOE,
    )


DAVID = "15 Oak Street, Austin, TX 78701"


@add(
    "order-by-name",
    2,
    "Order one Anker PowerCore 20000 power bank for David Kim (customer C-1004), shipped to "
    f"{DAVID}.",
    lambda s0, sf: one_order(s0, sf, "C-1004", {"PB-2000": 1}, DAVID),
    2,
    "simple",
    ["order", "search"],
)
async def _e02(client: ToolClient) -> None:
    sku = await find_sku(client, "Anker PowerCore 20000")
    await client.call(
        "create_order",
        customer_id="C-1004",
        items=[{"sku": sku, "quantity": 1}],
        shipping_address=DAVID,
    )


ELENA = "9 Birch Lane, Denver, CO 80202"


@add(
    "order-two-lines",
    3,
    "For Elena Petrova (customer C-1005), order 3 Anker USB-C to USB-C 2 m cables (SKU CB-2040) "
    f"and 1 Anker 65W USB-C charger (SKU CH-6502), shipped to {ELENA}.",
    lambda s0, sf: one_order(s0, sf, "C-1005", {"CB-2040": 3, "CH-6502": 1}, ELENA),
    1,
    "simple",
    ["order"],
)
async def _e03(client: ToolClient) -> None:
    await client.call(
        "create_order",
        customer_id="C-1005",
        shipping_address=ELENA,
        items=[{"sku": "CB-2040", "quantity": 3}, {"sku": "CH-6502", "quantity": 1}],
    )


GABRIEL = "301 Pine Ave, Portland, OR 97205"


@add(
    "first-order-coupon",
    4,
    "Gabriel Silva (customer C-1007) is placing his first order: one Logitech MX Master 3S mouse "
    f"(SKU MS-3100) shipped to {GABRIEL}, with his welcome coupon WELCOME10.",
    lambda s0, sf: one_order(s0, sf, "C-1007", {"MS-3100": 1}, GABRIEL, "WELCOME10"),
    1,
    "simple",
    ["order", "coupon"],
)
async def _e04(client: ToolClient) -> None:
    await client.call(
        "create_order",
        customer_id="C-1007",
        items=[{"sku": "MS-3100", "quantity": 1}],
        shipping_address=GABRIEL,
        coupon_code="WELCOME10",
    )


def _v05(s0: ShopState, sf: ShopState) -> bool:
    answer, order = last_answer(s0, sf), s0.orders["ORD-50004"]
    return (
        answer is not None
        and no_writes(s0, sf)
        and answer.order_status == order.status
        and (answer.tracking_number or "").replace(" ", "").upper() == order.tracking_number
    )


@add(
    "order-status",
    5,
    "David Kim (C-1004) asks where his order ORD-50004 is. Look it up and submit the order's "
    "status and its tracking number as your answer.",
    _v05,
    2,
    "simple",
    ["status", "answer"],
)
async def _e05(client: ToolClient) -> None:
    found = await client.call("check_order_status", order_id="ORD-50004")
    order = found["order"]
    await client.call(
        "submit_answer",
        order_id=order["order_id"],
        order_status=order["status"],
        tracking_number=order["tracking_number"],
    )


def _v06(s0: ShopState, sf: ShopState) -> bool:
    answer = last_answer(s0, sf)
    return (
        answer is not None
        and no_writes(s0, sf)
        and answer.sku == "MS-3100"
        and answer.quantity == s0.inventory["MS-3100"].on_hand
    )


@add(
    "stock-count",
    6,
    "How many Logitech MX Master 3S mice are in stock right now? Submit the product's SKU and the "
    "number of units available as your answer.",
    _v06,
    3,
    "simple",
    ["inventory", "answer"],
)
async def _e06(client: ToolClient) -> None:
    sku = await find_sku(client, "Logitech MX Master 3S")
    stock = await client.call("check_inventory", sku=sku)
    await client.call("submit_answer", sku=stock["sku"], quantity=stock["available"])


def returned(s0: ShopState, sf: ShopState, order_id: str, skus: list[str], method: str) -> bool:
    """Exactly one new return: these lines of this order, refunded as computed from s0."""
    new = [r for rid, r in sf.returns.items() if rid not in s0.returns]
    if len(new) != 1 or new_orders(s0, sf) or not history_intact(s0, sf, returns=1):
        return False
    record, order = new[0], s0.orders[order_id]
    coupon = s0.coupons.get(order.coupon_code) if order.coupon_code else None
    return (
        record.order_id == order_id
        and sorted(record.skus) == sorted(skus)
        and record.refund_method == method
        and record.refund_cents == refund_cents(order, skus, s0.products, coupon)
    )


async def return_named(
    client: ToolClient, order_id: str, words: str, reason: str, method: str
) -> None:
    """Find the order line whose name has all `words`, then return that line."""
    found = await client.call("check_order_status", order_id=order_id)
    wanted = words.lower().split()
    sku = next(
        line["sku"]
        for line in found["order"]["lines"]
        if all(w in line["name"].lower() for w in wanted)
    )
    await client.call(
        "process_return", order_id=order_id, items=[sku], reason=reason, refund_method=method
    )


@add(
    "return-defective",
    7,
    "Ben Carter (C-1002) wants to return the Anker Soundcore headphones from order ORD-50002: "
    "they are defective. Refund them to his original payment method; he keeps the cable.",
    lambda s0, sf: returned(s0, sf, "ORD-50002", ["HP-1110"], "original_payment"),
    2,
    "simple",
    ["return"],
)
async def _e07(client: ToolClient) -> None:
    await return_named(client, "ORD-50002", "soundcore", "defective", "original_payment")


@add(
    "return-store-credit",
    8,
    "Chloe Nguyen (C-1003) wants to return only the phone case from order ORD-50003, for store "
    "credit. She keeps the screen protectors and the charger.",
    lambda s0, sf: returned(s0, sf, "ORD-50003", ["PC-0801"], "store_credit"),
    2,
    "simple",
    ["return"],
)
async def _e08(client: ToolClient) -> None:
    await return_named(client, "ORD-50003", "case", "no longer needed", "store_credit")


# --- level 2: cheapest in stock + coupon -------------------------------------------------

BEN = "220 Maple Drive, Columbus, OH 43004"


def _is_27_monitor(p: Product) -> bool:
    return p.category == "monitors" and p.attributes.get("size_in") == 27


@add(
    "cheapest-monitor",
    9,
    "Buy the cheapest 27-inch monitor that is in stock for Ben Carter (customer C-1002), one "
    f"unit, shipped to {BEN}.",
    lambda s0, sf: one_order(s0, sf, "C-1002", {cheapest_in_stock(s0, _is_27_monitor): 1}, BEN),
    4,
    "medium",
    ["cheapest", "inventory", "order"],
)
async def _e09(client: ToolClient) -> None:
    found = await client.call("search_products", query="27-inch monitor", category="monitors")
    sku = await first_in_stock(client, found["products"])
    await client.call(
        "create_order",
        customer_id="C-1002",
        items=[{"sku": sku, "quantity": 1}],
        shipping_address=BEN,
    )


FARAH = "47 Cedar Court, Raleigh, NC 27601"


def _is_nc_headphones(p: Product) -> bool:
    return (
        p.category == "audio"
        and p.attributes.get("noise_cancelling") is True
        and p.attributes.get("form_factor") == "over-ear"
    )


@add(
    "cheapest-headphones-coupon",
    10,
    "Buy the cheapest noise-cancelling headphones that are in stock for Farah Haddad (customer "
    f"C-1006), shipped to {FARAH}, and use coupon AUDIO20 on the order.",
    lambda s0, sf: one_order(
        s0, sf, "C-1006", {cheapest_in_stock(s0, _is_nc_headphones): 1}, FARAH, "AUDIO20"
    ),
    4,
    "complex",
    ["cheapest", "inventory", "coupon", "order"],
)
async def _e10(client: ToolClient) -> None:
    found = await client.call(
        "search_products", query="noise cancelling headphones", category="audio"
    )
    sku = await first_in_stock(client, found["products"])
    await client.call(
        "create_order",
        customer_id="C-1006",
        items=[{"sku": sku, "quantity": 1}],
        shipping_address=FARAH,
        coupon_code="AUDIO20",
    )


HANA = "12 Elm Row, Boston, MA 02108"


def _better_coupon(s0: ShopState, sku: str, codes: list[str]) -> str:
    price = s0.products[sku].price_cents
    return max(codes, key=lambda c: check_coupon(s0.coupons[c], price, s0.today).discount_cents)


@add(
    "better-coupon",
    11,
    "Order one Samsung Odyssey G5 27-inch monitor (SKU MN-2710) for Hana Sato (customer C-1008), "
    f"shipped to {HANA}, with whichever of the coupons SAVE15 and FLAT25 saves her more.",
    lambda s0, sf: one_order(
        s0, sf, "C-1008", {"MN-2710": 1}, HANA, _better_coupon(s0, "MN-2710", ["SAVE15", "FLAT25"])
    ),
    4,
    "complex",
    ["coupon", "order"],
)
async def _e11(client: ToolClient) -> None:
    found = await client.call("search_products", query="Samsung Odyssey G5")
    price = next(p["price"]["amount"] for p in found["products"] if p["sku"] == "MN-2710")
    quotes = [
        await client.call("apply_coupon", code=code, order_subtotal=float(price))
        for code in ("SAVE15", "FLAT25")
    ]
    best = max((q for q in quotes if q["valid"]), key=lambda q: q["discount"]["amount_cents"])
    await client.call(
        "create_order",
        customer_id="C-1008",
        items=[{"sku": "MN-2710", "quantity": 1}],
        shipping_address=HANA,
        coupon_code=best["code"],
    )


def _is_long_hdmi(p: Product) -> bool:
    length = p.attributes.get("length_m")
    return "HDMI" in p.name and isinstance(length, int | float) and length >= 2


@add(
    "cheapest-with-quantity",
    12,
    "Buy 5 HDMI 2.1 cables at least 2 m long for Chloe Nguyen (customer C-1003), all of the same "
    f"model: the cheapest model that has 5 in stock. Ship them to {CHLOE}.",
    lambda s0, sf: one_order(s0, sf, "C-1003", {cheapest_in_stock(s0, _is_long_hdmi, 5): 5}, CHLOE),
    4,
    "complex",
    ["cheapest", "inventory", "order"],
)
async def _e12(client: ToolClient) -> None:
    found = await client.call("search_products", query="HDMI 2.1 cable", category="cables")
    long_enough = [p for p in found["products"] if p["attributes"].get("length_m", 0) >= 2]
    sku = await first_in_stock(client, long_enough, quantity=5)
    await client.call(
        "create_order",
        customer_id="C-1003",
        items=[{"sku": sku, "quantity": 5}],
        shipping_address=CHLOE,
    )


def _escalated_without_writes(s0: ShopState, sf: ShopState) -> bool:
    return len(sf.escalations) > len(s0.escalations) and no_writes(s0, sf)


@add(
    "insufficient-stock",
    13,
    "Order 30 Logitech C920 webcams (SKU WC-1080) for Ana Ruiz's office (customer C-1001), to 500 "
    "Market St, Suite 300, San Francisco, CA 94105. They must all arrive in one shipment: do not "
    "split the order or substitute another model.",
    _escalated_without_writes,
    2,
    "medium",
    ["inventory", "escalation-expected"],
)
async def _e13(client: ToolClient) -> None:
    stock = await client.call("check_inventory", sku="WC-1080")
    await client.call(
        "escalate_to_human",
        reason=f"Only {stock['available']} WC-1080 in stock; 30 needed in one shipment.",
    )


@add(
    "return-outside-window",
    14,
    "Ana Ruiz (C-1001) wants to return the Logitech C920 webcam from order ORD-50001 and get her "
    "money back on her card.",
    _escalated_without_writes,
    2,
    "medium",
    ["return", "policy", "escalation-expected"],
)
async def _e14(client: ToolClient) -> None:
    found = await client.call("check_order_status", order_id="ORD-50001")
    ends = found["order"]["return_window_ends"]
    await client.call(
        "escalate_to_human",
        reason=f"ORD-50001's return window ended on {ends}; needs a policy exception.",
    )


@add(
    "return-with-coupon",
    15,
    "Ben Carter (C-1002) wants to return the monitor from order ORD-50006 and be refunded to his "
    "original payment method. The order used a coupon; the refund is whatever the shop's return "
    "rules give.",
    lambda s0, sf: returned(s0, sf, "ORD-50006", ["MN-2705"], "original_payment"),
    2,
    "medium",
    ["return", "coupon"],
    escalation_acceptable=True,
)
async def _e15(client: ToolClient) -> None:
    await return_named(client, "ORD-50006", "monitor", "changed mind", "original_payment")


KB_MX_KEYS = "KB-7730"


@add(
    "expired-coupon",
    16,
    "Order one Logitech MX Keys keyboard (SKU KB-7730) for Elena Petrova (customer C-1005), "
    f"shipped to {ELENA}, using coupon WINTER30. If that coupon cannot be used, place the order at "
    "full price without a coupon.",
    lambda s0, sf: one_order(s0, sf, "C-1005", {KB_MX_KEYS: 1}, ELENA),
    2,
    "medium",
    ["coupon", "order"],
    escalation_acceptable=True,
)
async def _e16(client: ToolClient) -> None:
    product = (await client.call("search_products", query="Logitech MX Keys"))["products"][0]
    quote = await client.call(
        "apply_coupon", code="WINTER30", order_subtotal=float(product["price"]["amount"])
    )
    await client.call(
        "create_order",
        customer_id="C-1005",
        items=[{"sku": KB_MX_KEYS, "quantity": 1}],
        shipping_address=ELENA,
        coupon_code="WINTER30" if quote["valid"] else None,
    )


def _v17(s0: ShopState, sf: ShopState) -> bool:
    answer = last_answer(s0, sf)
    rule, price = s0.coupons["SAVE15"], s0.products["MN-2710"].price_cents
    expected = totals(
        price, check_coupon(rule, price, s0.today, s0.customers["C-1008"]).discount_cents
    )
    return answer is not None and no_writes(s0, sf) and answer.amount_cents == expected.total_cents


@add(
    "quote-total",
    17,
    "Hana Sato (C-1008) asks what she would pay in total, shipping included, for one Samsung "
    "Odyssey G5 27-inch monitor with coupon SAVE15. Do not place the order; submit the total in "
    "USD as your answer.",
    _v17,
    3,
    "medium",
    ["coupon", "answer"],
)
async def _e17(client: ToolClient) -> None:
    found = await client.call("search_products", query="Samsung Odyssey G5 27-inch")
    product = found["products"][0]
    quote = await client.call(
        "apply_coupon", code="SAVE15", order_subtotal=float(product["price"]["amount"])
    )
    await client.call(
        "submit_answer", sku=product["sku"], amount=float(quote["estimated_total"]["amount"])
    )
