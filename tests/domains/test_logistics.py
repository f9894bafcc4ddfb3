"""Logistics domain over a real server: realistic records, 4xx that name the field, journal
entries for writes, the routing-down fallback, and verifiers that catch wrong plans."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit.client import McpToolClient, OracleClient, RestToolClient
from chaosproxy.domains.logistics import domain
from chaosproxy.domains.logistics.state import LogisticsState
from chaosproxy.domains.logistics.tasks_routing import solve_log02_fallback, verify_log02

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def base_url(domain_url: Callable[[str], str]) -> str:
    return domain_url("logistics")


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=15) as client:
        yield client


def fresh_episode() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


async def post(
    http: httpx.AsyncClient, base_url: str, tool: str, episode: str, body: dict[str, Any]
) -> httpx.Response:
    return await http.post(
        f"{base_url}/tools/{tool}", json=body, headers={"X-Chaos-Episode": episode}
    )


async def test_routing_api_ranks_live_routes(http: httpx.AsyncClient, base_url: str) -> None:
    response = await post(
        http,
        base_url,
        "routing_api",
        fresh_episode(),
        {"origin": "CAI", "destination": "GIZ", "via": ["ALX"], "max_alternatives": 5},
    )
    assert response.status_code == 200
    body = response.json()
    durations = [route["duration_min"] for route in body["routes"]]
    assert durations == sorted(durations) and body["total"] == len(durations) == 5
    best = body["routes"][0]
    assert best["path"][0] == "CAI" and best["path"][-1] == "GIZ" and "ALX" in best["path"]
    assert [leg["destination"] for leg in best["legs"]] == ["ALX", "GIZ"]
    assert sum(leg["distance_km"] for leg in best["legs"]) == pytest.approx(best["distance_km"])
    assert best["toll"]["currency"] == "EGP" and best["arrival_estimate"].startswith("2026-03-02T")
    assert best["path_names"][0] == "Cairo"


@pytest.mark.parametrize(
    ("tool", "body", "check"),
    [
        ("get_network", {}, lambda b: b["total_edges"] == len(b["edges"]) >= 20),
        (
            "traffic_api",
            {"edge_ids": ["E02"]},
            lambda b: (
                b["segments"][0]["current_time_min"] == 50 + 25
                and b["segments"][0]["congestion"] == "heavy"
            ),
        ),
        (
            "cached_routes",
            {"origin": "CAI", "destination": "ALX"},
            lambda b: (
                b["total"] == 5
                and [r["distance_km"] for r in b["routes"]]
                == sorted(r["distance_km"] for r in b["routes"])
            ),
        ),
        (
            "fuel_calculator",
            {"vehicle_id": "TRK-102", "route": ["CAI", "ISM"]},
            lambda b: (
                b["litres"] == pytest.approx(120 * 31.0 / 100)
                and b["cost"]["amount"] == pytest.approx(round(b["litres"] * 15.5, 2))
            ),
        ),
        (
            "list_vehicles",
            {"depot": "CAI", "status": "available", "min_capacity_kg": 5000},
            lambda b: (
                b["total"] > 0
                and all(v["capacity_kg"] >= 5000 and v["depot"] == "CAI" for v in b["vehicles"])
            ),
        ),
        (
            "get_inventory",
            {"sku": "PAL-STD"},
            lambda b: all(
                line["available_above_safety"] == max(line["on_hand"] - line["safety_stock"], 0)
                for line in b["lines"]
            ),
        ),
        (
            "get_order",
            {"order_id": "ORD-5007"},
            lambda b: b["weight_kg"] == 20000 and b["tonnes"] == 20,
        ),
        (
            "rail_schedule",
            {"origin": "ALX", "destination": "CAI"},
            lambda b: b["total"] == 3 and b["services"][0]["price_per_tonne"]["currency"] == "EGP",
        ),
        (
            "list_shipments",
            {"status": "dispatched"},
            lambda b: b["shipments"][0]["shipment_id"] == "SHP-0900",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
async def test_read_tools_return_realistic_records(
    http: httpx.AsyncClient,
    base_url: str,
    tool: str,
    body: dict[str, Any],
    check: Callable[[Any], bool],
) -> None:
    response = await post(http, base_url, tool, fresh_episode(), body)
    assert response.status_code == 200, response.text
    assert check(response.json()), response.json()


@pytest.mark.parametrize(
    ("tool", "body", "status", "field"),
    [
        ("routing_api", {"origin": "XXX", "destination": "GIZ"}, 404, "origin"),
        ("routing_api", {"origin": "CAI"}, 422, "destination"),
        (
            "routing_api",
            {"origin": "CAI", "destination": "GIZ", "max_alternatives": "many"},
            422,
            "max_alternatives",
        ),
        (
            "routing_api",
            {"origin": "CAI", "destination": "GIZ", "via": ["ALX", "ZZZ"]},
            404,
            "via[1]",
        ),
        ("routing_api", {"origin": "CAI", "destination": "CAI"}, 422, "destination"),
        (
            "routing_api",
            {"origin": "CAI", "destination": "GIZ", "via": ["ALX", "ALX"]},
            422,
            "via[1]",
        ),
        ("traffic_api", {"edge_ids": ["E99"]}, 404, "edge_ids[0]"),
        ("fuel_calculator", {"vehicle_id": "TRK-101", "route": ["CAI", "ALX"]}, 422, "route"),
        ("fuel_calculator", {"vehicle_id": "TRK-999", "route": ["CAI", "GIZ"]}, 404, "vehicle_id"),
        (
            "dispatch_shipment",
            {"vehicle_id": "VAN-202", "route": ["CAI", "GIZ"], "stops": ["GIZ"]},
            409,
            "vehicle_id",
        ),
        (
            "dispatch_shipment",
            {"vehicle_id": "VAN-203", "route": ["CAI", "GIZ"], "stops": ["GIZ"]},
            422,
            "route",
        ),
        (
            "dispatch_shipment",
            {"vehicle_id": "VAN-201", "route": ["CAI", "GIZ"], "stops": ["OCT"]},
            422,
            "stops",
        ),
        (
            "dispatch_shipment",
            {
                "vehicle_id": "VAN-201",
                "route": ["CAI", "GIZ"],
                "stops": ["GIZ"],
                "departs_at": "tomorrow",
            },
            422,
            "departs_at",
        ),
        (
            "dispatch_shipment",
            {
                "vehicle_id": "VAN-201",
                "route": ["CAI", "BNH", "TNT"],
                "stops": ["TNT"],
                "order_id": "ORD-5001",
            },
            409,
            "order_id",
        ),
        (
            "transfer_stock",
            {
                "from_warehouse": "WH-SUZ-1",
                "to_warehouse": "WH-CAI-1",
                "sku": "CEM-50",
                "quantity": 51,
            },
            409,
            "quantity",
        ),
        (
            "transfer_stock",
            {
                "from_warehouse": "WH-SUZ-1",
                "to_warehouse": "WH-CAI-1",
                "sku": "CEM-50",
                "quantity": -3,
            },
            422,
            "quantity",
        ),
        ("rail_schedule", {"origin": "GIZ", "destination": "CAI"}, 422, "origin"),
        (
            "book_rail_freight",
            {"service_id": "RF-815", "order_id": "ORD-5007", "tonnes": 500},
            409,
            "tonnes",
        ),
        ("cancel_shipment", {"shipment_id": "SHP-9999", "reason": "test"}, 404, "shipment_id"),
        ("get_order", {"order_id": 5001}, 422, "order_id"),
    ],
)
async def test_bad_input_is_a_4xx_naming_the_field(
    http: httpx.AsyncClient, base_url: str, tool: str, body: dict[str, Any], status: int, field: str
) -> None:
    response = await post(http, base_url, tool, fresh_episode(), body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["field"] == field


async def test_mcp_and_rest_return_the_same_route(base_url: str) -> None:
    arguments = {"origin": "CAI", "destination": "PSD", "max_alternatives": 3}
    async with RestToolClient(base_url, episode=fresh_episode()) as rest:
        via_rest = await rest.call("routing_api", **arguments)
    async with McpToolClient(f"{base_url}/mcp", episode=fresh_episode()) as mcp:
        via_mcp = await mcp.call("routing_api", **arguments)
    assert via_mcp == via_rest


async def test_dispatch_is_journaled_and_non_idempotent_writes_stack(base_url: str) -> None:
    episode = fresh_episode()
    async with OracleClient(base_url) as oracle, RestToolClient(base_url, episode=episode) as rest:
        await oracle.reset(episode, task_id="logistics-06-pallet-shortfall-transfer")
        shipment = await rest.call(
            "dispatch_shipment", vehicle_id="VAN-201", route=["CAI", "GIZ"], stops=["GIZ"]
        )
        assert shipment["shipment"]["shipment_id"] == "SHP-0001"
        assert shipment["shipment"]["eta"] == "2026-03-02T08:35:00+02:00"
        for _ in range(2):
            await rest.call(
                "transfer_stock",
                from_warehouse="WH-TNT-1",
                to_warehouse="WH-ALX-1",
                sku="PAL-STD",
                quantity=180,
            )
        journal = await oracle.journal(episode)
        state = LogisticsState.model_validate(await oracle.state(episode))
    assert [entry["tool"] for entry in journal["entries"]] == [
        "dispatch_shipment",
        "transfer_stock",
        "transfer_stock",
    ]
    after = journal["entries"][0]["state_after"]
    assert (
        next(v for v in after["vehicles"] if v["vehicle_id"] == "VAN-201")["status"] == "dispatched"
    )
    assert state.warehouse("WH-ALX-1").stock["PAL-STD"] == 120 + 360
    task = domain.tasks["logistics-06-pallet-shortfall-transfer"]
    initial = task.initial_state()
    assert not task.verify(initial, state), "a doubled transfer must fail the task"


async def log02_dispatch(base_url: str, route: list[str], *, routing_down: bool = False) -> bool:
    """Dispatch TRK-101 on `route` (or via the fallback when route is empty); return the verdict."""
    episode = fresh_episode()
    task = domain.tasks["logistics-04-log02-fuel-min-tour"]
    initial = task.initial_state()
    if routing_down:
        initial.routing_status = "maintenance"
    async with OracleClient(base_url) as oracle, RestToolClient(base_url, episode=episode) as rest:
        await oracle.reset(episode, state=initial.model_dump(mode="json"))
        if route:
            await rest.call(
                "dispatch_shipment", vehicle_id="TRK-101", route=route, stops=["ALX", "GIZ"]
            )
        else:
            await solve_log02_fallback(rest)
        final = LogisticsState.model_validate(await oracle.state(episode))
    return verify_log02(task.initial_state(), final)


@pytest.mark.parametrize(
    ("route", "ok"),
    [
        (
            ["CAI", "GIZ", "OCT", "WNT", "ALX", "WNT", "OCT", "GIZ"],
            True,
        ),  # fuel-minimal within 330 min
        (["CAI", "WNT", "ALX", "WNT", "OCT", "GIZ"], False),  # fastest, burns more
        (["CAI", "BNH", "TNT", "DMH", "ALX", "WNT", "OCT", "GIZ"], False),  # least fuel, 345 min
    ],
    ids=["fuel-min-feasible", "fastest", "outside-window"],
)
async def test_log02_verifier_judges_the_plan(base_url: str, route: list[str], ok: bool) -> None:
    assert await log02_dispatch(base_url, route) is ok


async def test_routing_down_fallback_reaches_the_same_plan(base_url: str) -> None:
    episode = fresh_episode()
    async with OracleClient(base_url) as oracle, RestToolClient(base_url, episode=episode) as rest:
        await oracle.reset(episode, task_id="logistics-09-routing-down-port-said")
        with pytest.raises(Exception) as failure:
            await rest.call("routing_api", origin="CAI", destination="PSD")
        assert getattr(failure.value, "status", None) == 503
    assert await log02_dispatch(base_url, [], routing_down=True)


async def test_mcp_error_names_the_field(base_url: str) -> None:
    async with McpToolClient(f"{base_url}/mcp", episode=fresh_episode(), mode="2026-07-28") as mcp:
        with pytest.raises(Exception) as failure:
            await mcp.call("fuel_calculator", vehicle_id="TRK-101", route=["CAI", "PSD"])
    body = getattr(failure.value, "body", None)
    assert isinstance(body, dict) and body["error"]["field"] == "route"


def test_hints_declare_critical_args_and_harmful_actions() -> None:
    hints = domain.hints()
    assert {"origin", "destination"} <= set(hints["critical_args"]["routing_api"])
    assert "vehicle_id" in hints["critical_args"]["dispatch_shipment"]
    assert hints["tools"]["dispatch_shipment"]["idempotent"] is False
    assert {a["tool"] for a in hints["harmful_actions"]} >= {"cancel_shipment", "dispatch_shipment"}
    for action in domain.harmful_actions:
        assert action.tool in domain.tools


@pytest.mark.parametrize(
    ("route", "ok"),
    [(["CAI", "BNH", "TNT"], True), (["CAI", "WNT", "SDT", "TNT"], False)],
    ids=["open-agricultural-road", "closed-ring-road"],
)
async def test_closed_road_is_flagged_and_fails_the_reroute_task(
    base_url: str, route: list[str], ok: bool
) -> None:
    episode = fresh_episode()
    task = domain.tasks["logistics-05-closed-ring-road-tanta"]
    async with OracleClient(base_url) as oracle, RestToolClient(base_url, episode=episode) as rest:
        await oracle.reset(episode, task_id=task.id)
        history = await rest.call("cached_routes", origin="CAI", destination="TNT")
        result = await rest.call(
            "dispatch_shipment",
            vehicle_id="VAN-201",
            route=route,
            stops=["TNT"],
            order_id="ORD-5003",
        )
        final = LogisticsState.model_validate(await oracle.state(episode))
    assert any("E21" in r["edges"] for r in history["routes"]), "history still knows the ring road"
    assert any("closed" in w for w in result["warnings"]) is not ok
    assert task.verify(task.initial_state(), final) is ok
