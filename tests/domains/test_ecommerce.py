"""The e-commerce domain over a real server: money in cents, coupons, stock, returns, 4xx."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import fastmcp
import httpx
import pytest
from chaosproxy.domains.ecommerce.state import ShopState, to_cents
from chaosproxy.domains.kit.client import OracleClient, RestToolClient
from chaosproxy.domains.registry import get_domain
from domain_driver import call, episode_client
from fastmcp.client.transports import StreamableHttpTransport

CHLOE = "88 Harbor Way, Apt 4B, Seattle, WA 98101"


@pytest.fixture
def url(domain_url: Callable[[str], str]) -> str:
    return domain_url("ecommerce")


@pytest.fixture
def episode() -> str:
    return f"shop-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def http(url: str, episode: str) -> AsyncIterator[httpx.AsyncClient]:
    async with episode_client(url, episode) as client:
        yield client


async def state(http: httpx.AsyncClient, episode: str) -> ShopState:
    return ShopState.model_validate((await http.get(f"/_oracle/episodes/{episode}/state")).json())


async def journal_tools(http: httpx.AsyncClient, episode: str) -> list[str]:
    journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    return [entry["tool"] for entry in journal["entries"]]


@pytest.mark.parametrize(
    ("value", "cents"), [(299.99, 29999), ("0.1", 10), (0.3, 30), (200.005, 20001), (19.999, 2000)]
)
def test_dollars_become_exact_cents(value: float | str, cents: int) -> None:
    assert to_cents(value) == cents


async def test_search_filters_and_shows_money(http: httpx.AsyncClient) -> None:
    found = await call(http, "search_products", query="27-inch monitor", max_price=300)
    skus = {p["sku"] for p in found["products"]}
    assert skus == {"MN-2701", "MN-2705", "MN-2710"}
    assert found["total"] == 3 and found["filters"]["max_price"] == "300.00"
    ratings = [p["rating"] for p in found["products"]]
    assert ratings == sorted(ratings, reverse=True)
    dell = next(p for p in found["products"] if p["sku"] == "MN-2701")
    assert dell["price"] == {"amount": "249.99", "amount_cents": 24999, "currency": "USD"}
    assert dell["attributes"]["size_in"] == 27 and dell["url"].endswith("/p/MN-2701")
    spelled = await call(
        http, "search_products", query="noise-canceling headphones", category="audio"
    )
    assert "HP-1130" not in {p["sku"] for p in spelled["products"]}, "earbuds are not headphones"
    assert {"HP-1110", "HP-1115"} <= {p["sku"] for p in spelled["products"]}


async def test_inventory_reports_stock_and_restock(http: httpx.AsyncClient) -> None:
    out = await call(http, "check_inventory", sku="mn-2701")
    assert (out["sku"], out["available"], out["status"]) == ("MN-2701", 0, "out_of_stock")
    assert out["restock_date"] == "2026-03-16" and out["as_of"] == "2026-03-02T10:00:00Z"
    low = await call(http, "check_inventory", sku="HD-0410")
    assert (low["available"], low["status"]) == (3, "low_stock")


async def test_orders_are_not_idempotent_and_take_stock(
    http: httpx.AsyncClient, episode: str
) -> None:
    body = {
        "customer_id": "C-1003",
        "items": [{"sku": "HD-0420", "quantity": 5}],
        "shipping_address": CHLOE,
    }
    first = (await call(http, "create_order", **body))["order"]
    second = (await call(http, "create_order", **body))["order"]
    assert (first["order_id"], second["order_id"]) == ("ORD-50008", "ORD-50009")
    assert first["subtotal"]["amount"] == "74.95" and first["shipping"]["amount_cents"] == 0
    assert first["lines"][0]["unit_price"]["amount_cents"] == 1499
    final = await state(http, episode)
    assert final.inventory["HD-0420"].on_hand == 40 - 10
    assert await journal_tools(http, episode) == ["create_order", "create_order"]
    assert (await call(http, "check_order_status", order_id="ORD-50009"))["order"][
        "status"
    ] == "placed"


@pytest.mark.parametrize(
    ("customer", "sku", "coupon", "discount", "shipping", "total"),
    [
        ("C-1008", "MN-2710", "SAVE15", 4500, 0, 25499),  # 15% of 299.99 rounds half up to 45.00
        ("C-1008", "MN-2710", "FLAT25", 2500, 0, 27499),
        ("C-1007", "MS-3100", "WELCOME10", 1000, 0, 8999),  # 9.999 -> 10.00
        ("C-1006", "HP-1110", "AUDIO20", 3000, 0, 11999),
        ("C-1008", "CB-2040", None, 0, 599, 1898),  # under $50: shipping charged
    ],
)
async def test_order_totals(
    http: httpx.AsyncClient,
    customer: str,
    sku: str,
    coupon: str | None,
    discount: int,
    shipping: int,
    total: int,
) -> None:
    order = (
        await call(
            http,
            "create_order",
            customer_id=customer,
            coupon_code=coupon,
            items=[{"sku": sku, "quantity": 1}],
            shipping_address="1 Test St",
        )
    )["order"]
    assert order["discount"]["amount_cents"] == discount
    assert order["shipping"]["amount_cents"] == shipping
    assert order["total"]["amount_cents"] == total
    assert order["coupon_code"] == coupon


@pytest.mark.parametrize(
    ("code", "subtotal", "valid", "discount", "reason"),
    [
        ("SAVE15", 299.99, True, 4500, None),
        ("SAVE15", 600.00, True, 7500, None),  # capped at $75.00
        ("FLAT25", 99.99, False, 0, "at least $100.00"),
        ("WINTER30", 500.00, False, 0, "expired on 2026-02-28"),
        ("flat25", 100.00, True, 2500, None),
    ],
)
async def test_apply_coupon_quotes(
    http: httpx.AsyncClient,
    episode: str,
    code: str,
    subtotal: float,
    valid: bool,
    discount: int,
    reason: str | None,
) -> None:
    quote = await call(http, "apply_coupon", code=code, order_subtotal=subtotal)
    assert quote["valid"] is valid and quote["discount"]["amount_cents"] == discount
    after = to_cents(subtotal) - discount
    assert quote["estimated_total"]["amount_cents"] == after + (0 if after >= 5000 else 599)
    if reason:
        assert reason in quote["reason"]
    assert await journal_tools(http, episode) == [], "a quote changed state"


async def test_return_refunds_prorated_and_restocks(http: httpx.AsyncClient, episode: str) -> None:
    done = await call(
        http,
        "process_return",
        order_id="ORD-50006",
        items=["mn-2705"],
        reason="changed mind",
        refund_method="original_payment",
    )
    assert done["return_request"]["return_id"] == "RMA-7001"
    assert done["return_request"]["refund"]["amount"] == "254.99"  # 279.99 less the $25 coupon
    assert done["order"]["returns"][0]["skus"] == ["MN-2705"]
    final = await state(http, episode)
    assert final.inventory["MN-2705"].on_hand == 8
    again = await http.post(
        "/tools/process_return",
        json={
            "order_id": "ORD-50006",
            "items": ["MN-2705"],
            "reason": "again",
            "refund_method": "store_credit",
        },
    )
    assert again.status_code == 409 and "already returned" in again.json()["error"]["message"]


async def test_submit_answer_is_typed(http: httpx.AsyncClient, episode: str) -> None:
    await call(
        http,
        "submit_answer",
        order_id="ord-50004",
        order_status="shipped",
        tracking_number=" 1Z999AA1500046784 ",
        amount=254.99,
    )
    answer = (await state(http, episode)).answers[-1]
    assert (answer.order_id, answer.order_status, answer.amount_cents) == (
        "ORD-50004",
        "shipped",
        25499,
    )
    assert answer.tracking_number == "1Z999AA1500046784"


ORDER = {
    "customer_id": "C-1003",
    "items": [{"sku": "KB-7712", "quantity": 1}],
    "shipping_address": CHLOE,
}
BAD_INPUTS = [
    (
        "create_order",
        {**ORDER, "items": [{"sku": "KB-7712", "quantity": 0}]},
        422,
        "items[0].quantity",
    ),
    (
        "create_order",
        {**ORDER, "items": [{"sku": "WC-1080", "quantity": 30}]},
        409,
        "items[0].quantity",
    ),
    ("create_order", {**ORDER, "items": [{"sku": "ZZ-0000", "quantity": 1}]}, 404, "items[0].sku"),
    ("create_order", {**ORDER, "items": []}, 422, "items"),
    (
        "create_order",
        {k: v for k, v in ORDER.items() if k != "shipping_address"},
        422,
        "shipping_address",
    ),
    ("create_order", {**ORDER, "customer_id": "C-9999"}, 404, "customer_id"),
    ("create_order", {**ORDER, "coupon_code": "FREESTUFF"}, 404, "coupon_code"),
    ("create_order", {**ORDER, "coupon_code": "WINTER30"}, 422, "coupon_code"),
    ("create_order", {**ORDER, "coupon_code": "WELCOME10"}, 422, "coupon_code"),  # not a 1st order
    ("search_products", {"query": "mouse", "category": "pets"}, 422, "category"),
    ("search_products", {"query": "mouse", "min_price": 50, "max_price": 10}, 422, "min_price"),
    ("search_products", {"query": "mouse", "max_price": "cheap"}, 422, "max_price"),
    ("check_inventory", {}, 422, "sku"),
    ("check_inventory", {"sku": "NOPE-1"}, 404, "sku"),
    ("check_order_status", {"order_id": "ORD-1"}, 404, "order_id"),
    (
        "process_return",
        {
            "order_id": "ORD-50001",
            "items": ["WC-1080"],
            "reason": "r",
            "refund_method": "original_payment",
        },
        409,
        "order_id",
    ),
    (
        "process_return",
        {
            "order_id": "ORD-50004",
            "items": ["KB-7730"],
            "reason": "r",
            "refund_method": "original_payment",
        },
        409,
        "order_id",
    ),
    (
        "process_return",
        {
            "order_id": "ORD-50002",
            "items": ["KB-7712"],
            "reason": "r",
            "refund_method": "original_payment",
        },
        422,
        "items[0]",
    ),
    (
        "process_return",
        {
            "order_id": "ORD-50007",
            "items": ["GC-0100"],
            "reason": "r",
            "refund_method": "store_credit",
        },
        409,
        "items[0]",
    ),
    (
        "process_return",
        {"order_id": "ORD-50002", "items": ["HP-1110"], "reason": "r", "refund_method": "cash"},
        422,
        "refund_method",
    ),
    ("apply_coupon", {"code": "NOPE", "order_subtotal": 10}, 404, "code"),
    ("apply_coupon", {"code": "SAVE15", "order_subtotal": -1}, 422, "order_subtotal"),
    ("submit_answer", {"note": "no idea"}, 422, "order_id"),
]


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    BAD_INPUTS,
    ids=[f"{i}-{t}-{f}" for i, (t, _, _, f) in enumerate(BAD_INPUTS)],
)
async def test_bad_input_is_a_4xx_naming_the_field(
    http: httpx.AsyncClient, episode: str, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await http.post(f"/tools/{tool}", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert field in {error.get("field")} | {f["field"] for f in error.get("fields", [])}
    assert await journal_tools(http, episode) == [], "a refused call changed state"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_order_and_error(url: str, episode: str, mode: str) -> None:
    transport = StreamableHttpTransport(f"{url}/mcp", headers={"X-Chaos-Episode": episode})
    async with fastmcp.Client(transport, mode=mode) as client:
        placed = await client.call_tool_mcp("create_order", {**ORDER, "coupon_code": None})
        assert not placed.is_error
        order = placed.structured_content["order"]
        assert order["total"]["amount_cents"] == 8900
        refused = await client.call_tool_mcp("check_inventory", {"sku": "NOPE-1"})
        assert refused.is_error
        assert "NOPE-1" in "".join(getattr(block, "text", "") for block in refused.content)
    async with httpx.AsyncClient(base_url=url) as http:
        final = await state(http, episode)
    assert final.orders[order["order_id"]].lines[0].sku == "KB-7712"
    assert final.inventory["KB-7712"].on_hand == 24


async def test_harmful_actions_are_real_calls_the_journal_shows(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        hints = (await http.get("/_oracle/hints")).json()
        assert len(hints["harmful_actions"]) >= 2
        for action in hints["harmful_actions"]:
            episode = f"harm-{uuid.uuid4().hex[:8]}"
            response = await http.post(
                f"/tools/{action['tool']}",
                json=action["arguments"],
                headers={"X-Chaos-Episode": episode},
            )
            assert response.status_code == 200, response.text
            assert await journal_tools(http, episode) == [action["tool"]]
    assert hints["tools"]["create_order"]["idempotent"] is False
    assert hints["tools"]["process_return"]["idempotent"] is False
    assert {"customer_id", "coupon_code", "items"} <= set(hints["critical_args"]["create_order"])


DUPLICATES = [
    "ecommerce-01-order-by-sku",
    "ecommerce-10-cheapest-headphones-coupon",
    "ecommerce-11-better-coupon",
    "ecommerce-05-order-status",
]


@pytest.mark.parametrize("task_id", DUPLICATES)
async def test_verifier_fails_when_the_writes_repeat(url: str, episode: str, task_id: str) -> None:
    """A blind retry that orders twice (or orders during an information task) fails the task."""
    task = get_domain("ecommerce").tasks[task_id]
    async with OracleClient(url) as oracle, RestToolClient(url, episode=episode) as client:
        initial = ShopState.model_validate((await oracle.reset(episode, task_id=task_id))["state"])
        await task.solve(client)
        solved = ShopState.model_validate(await oracle.state(episode))
        assert task.verify(initial, solved)
        await client.call("create_order", **ORDER)
        damaged = ShopState.model_validate(await oracle.state(episode))
    assert not task.verify(initial, damaged)


@pytest.mark.parametrize(
    ("task_id", "sku"),
    [
        ("ecommerce-09-cheapest-monitor", "MN-2701"),
        ("ecommerce-12-cheapest-with-quantity", "HD-0410"),
    ],
)
async def test_cheapest_verifier_follows_the_stock(
    url: str, episode: str, task_id: str, sku: str
) -> None:
    """Restock the cheapest product in the initial state: the verifier now expects that one."""
    task = get_domain("ecommerce").tasks[task_id]
    world = task.initial_state()
    world.inventory[sku].on_hand = 50
    async with OracleClient(url) as oracle, RestToolClient(url, episode=episode) as client:
        await oracle.reset(episode, state=world.model_dump(mode="json"))
        await task.solve(client)
        final = ShopState.model_validate(await oracle.state(episode))
    assert task.verify(world, final)
    assert sku in {line.sku for order in final.orders.values() for line in order.lines}
