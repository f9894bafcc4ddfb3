"""Inventory, order-fulfilment and multi-modal tasks (HB-Eval §5.2.2)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from chaosproxy.domains.kit import ToolClient
from chaosproxy.domains.logistics.checks import (
    best_by,
    is_fastest,
    last_answer,
    live_metrics,
    new_shipments,
    no_stock_side_effects,
    old_shipments_unchanged,
    only_new_shipment,
)
from chaosproxy.domains.logistics.domain import domain
from chaosproxy.domains.logistics.state import LogisticsState, Order
from chaosproxy.domains.logistics.world import make_default_state

TRANSSHIP_MIN = 60


def _stock(state: LogisticsState, warehouse_id: str, sku: str) -> int:
    warehouse = state.warehouse(warehouse_id)
    return warehouse.stock.get(sku, 0) if warehouse else 0


def _most_above_safety(state: LogisticsState, sku: str) -> tuple[str, int]:
    best = max(
        state.warehouses,
        key=lambda w: (w.stock.get(sku, 0) - w.safety_stock.get(sku, 0), w.warehouse_id),
    )
    return best.warehouse_id, best.stock.get(sku, 0) - best.safety_stock.get(sku, 0)


def _order_weight(state: LogisticsState, order: Order) -> float:
    sku = state.sku(order.sku)
    return order.quantity * (sku.unit_weight_kg if sku else 0.0)


# --- 03: most stock above safety, answer ---------------------------------------------------


async def solve_most_pallets(client: ToolClient) -> None:
    stock = await client.call("get_inventory", sku="PAL-STD")
    best = max(stock["lines"], key=lambda line: line["available_above_safety"])
    await client.call(
        "submit_answer", warehouse_id=best["warehouse_id"], quantity=best["available_above_safety"]
    )


def verify_most_pallets(s0: LogisticsState, sf: LogisticsState) -> bool:
    answer = last_answer(sf)
    warehouse_id, quantity = _most_above_safety(s0, "PAL-STD")
    return (
        answer is not None
        and answer.warehouse_id == warehouse_id
        and answer.quantity == quantity
        and no_stock_side_effects(s0, sf)
    )


domain.task(
    id="logistics-03-most-pallets",
    description=(
        "Which warehouse has the most standard wooden pallets (SKU PAL-STD) available above its "
        "safety stock, and how many units is that? Submit the warehouse id and the quantity."
    ),
    initial_state=make_default_state,
    verify=verify_most_pallets,
    solve=solve_most_pallets,
    l_min=2,
    difficulty="simple",
    tags=["inventory", "answer"],
)


# --- 06: transfer the shortfall -------------------------------------------------------------

ALX_PALLET_TARGET = 300


async def solve_pallet_transfer(client: ToolClient) -> None:
    stock = await client.call("get_inventory", sku="PAL-STD")
    lines = {line["warehouse_id"]: line for line in stock["lines"]}
    shortfall = ALX_PALLET_TARGET - lines["WH-ALX-1"]["on_hand"]
    donors = [line for line in stock["lines"] if line["warehouse_id"] != "WH-ALX-1"]
    donor = max(donors, key=lambda line: line["available_above_safety"])
    await client.call(
        "transfer_stock",
        from_warehouse=donor["warehouse_id"],
        to_warehouse="WH-ALX-1",
        sku="PAL-STD",
        quantity=shortfall,
        mode="truck",
    )


def verify_pallet_transfer(s0: LogisticsState, sf: LogisticsState) -> bool:
    created = sf.transfers[len(s0.transfers) :]
    donor, _ = _most_above_safety(s0, "PAL-STD")
    shortfall = ALX_PALLET_TARGET - _stock(s0, "WH-ALX-1", "PAL-STD")
    if len(created) != 1 or shortfall <= 0:
        return False
    transfer = created[0]
    expected = {(w.warehouse_id, sku): qty for w in s0.warehouses for sku, qty in w.stock.items()}
    expected[(donor, "PAL-STD")] -= shortfall
    expected[("WH-ALX-1", "PAL-STD")] += shortfall
    actual = {(w.warehouse_id, sku): qty for w in sf.warehouses for sku, qty in w.stock.items()}
    return (
        (transfer.from_warehouse, transfer.to_warehouse) == (donor, "WH-ALX-1")
        and (transfer.sku, transfer.quantity) == ("PAL-STD", shortfall)
        and actual == expected
    )


domain.task(
    id="logistics-06-pallet-shortfall-transfer",
    description=(
        "Alexandria Port DC (WH-ALX-1) needs at least 300 standard pallets (PAL-STD) on hand for "
        "tomorrow's loading. Transfer exactly the shortfall, by truck, from the warehouse that "
        "has the most pallets available above its safety stock."
    ),
    initial_state=make_default_state,
    verify=verify_pallet_transfer,
    solve=solve_pallet_transfer,
    l_min=2,
    difficulty="simple",
    tags=["inventory", "transfer"],
)


# --- 07: allocate at the nearest warehouse with stock, then dispatch ------------------------


def _water_scarce() -> LogisticsState:
    state = make_default_state()
    for warehouse_id, on_hand in (("WH-CAI-1", 350), ("WH-SUZ-1", 120)):
        warehouse = state.warehouse(warehouse_id)
        assert warehouse is not None
        warehouse.stock["H2O-12"] = on_hand
    return state


async def solve_nearest_fulfilment(client: ToolClient) -> None:
    order = await client.call("get_order", order_id="ORD-5001")
    wanted, quantity = order["order"]["destination"], order["order"]["quantity"]
    stock = await client.call("get_inventory", sku=order["order"]["sku"])
    options: list[tuple[float, str, str, list[str]]] = []
    for line in stock["lines"]:
        if line["available_above_safety"] < quantity:
            continue
        plan = await client.call(
            "routing_api",
            origin=line["node"],
            destination=wanted,
            objective="distance",
            max_alternatives=1,
        )
        route = plan["routes"][0]
        options.append((route["distance_km"], line["warehouse_id"], line["node"], route["path"]))
    _, warehouse_id, node, path = min(options)
    await client.call("allocate_order", order_id="ORD-5001", warehouse_id=warehouse_id)
    vans = await client.call(
        "list_vehicles",
        depot=node,
        status="available",
        min_capacity_kg=math.ceil(order["weight_kg"]),
    )
    await client.call(
        "dispatch_shipment",
        vehicle_id=vans["vehicles"][0]["vehicle_id"],
        route=path,
        stops=[wanted],
        order_id="ORD-5001",
    )


def verify_nearest_fulfilment(s0: LogisticsState, sf: LogisticsState) -> bool:
    order0, order = s0.order("ORD-5001"), sf.order("ORD-5001")
    shipment = only_new_shipment(s0, sf)
    if order0 is None or order is None or shipment is None:
        return False
    eligible = [
        w
        for w in s0.warehouses
        if w.stock.get(order0.sku, 0) - w.safety_stock.get(order0.sku, 0) >= order0.quantity
    ]
    nearest = min(
        eligible,
        key=lambda w: (
            best_by(s0, [w.node, order0.destination], lambda m: m.distance_km).distance_km
        ),
    )
    shortest = best_by(s0, [nearest.node, order0.destination], lambda m: m.distance_km)
    metrics = live_metrics(s0, shipment.route)
    expected_stock = _stock(s0, nearest.warehouse_id, order0.sku) - order0.quantity
    vehicle = s0.vehicle(shipment.vehicle_id)
    return (
        order.warehouse_id == nearest.warehouse_id
        and order.status == "dispatched"
        and shipment.order_id == "ORD-5001"
        and vehicle is not None
        and vehicle.depot == nearest.node
        and shipment.stops == [order0.destination]
        and metrics is not None
        and metrics.distance_km <= shortest.distance_km
        and _stock(sf, nearest.warehouse_id, order0.sku) == expected_stock
        and sum(w.stock.get(order0.sku, 0) for w in sf.warehouses)
        == sum(w.stock.get(order0.sku, 0) for w in s0.warehouses) - order0.quantity
        and sf.transfers == s0.transfers
    )


domain.task(
    id="logistics-07-nearest-warehouse-fulfilment",
    description=(
        "Fulfil order ORD-5001 (bottled water for Delta Agro Co.). Allocate it at the warehouse "
        "that can ship it without going below safety stock and is the shortest road distance "
        "from the customer; then dispatch an available van from that warehouse's own depot on "
        "the shortest-distance route to the customer."
    ),
    initial_state=_water_scarce,
    verify=verify_nearest_fulfilment,
    solve=solve_nearest_fulfilment,
    l_min=8,
    difficulty="complex",
    tags=["inventory", "routing", "dispatch"],
)


# --- 08: rail + truck ---------------------------------------------------------------------


def _plus(iso: str, minutes: float) -> datetime:
    return datetime.fromisoformat(iso) + timedelta(minutes=minutes)


async def solve_multimodal(client: ToolClient) -> None:
    order = await client.call("get_order", order_id="ORD-5007")
    due = datetime.fromisoformat(order["order"]["due_by"])
    schedule = await client.call("rail_schedule", origin="ALX", destination="CAI")
    plan = await client.call("routing_api", origin="CAI", destination="ISM", max_alternatives=1)
    drive = plan["routes"][0]["duration_min"]
    feasible = [
        s
        for s in schedule["services"]
        if s["available_t"] >= order["tonnes"]
        and _plus(s["arrives_at"], TRANSSHIP_MIN + drive) <= due
    ]
    if not feasible:
        await client.call("escalate_to_human", reason="no rail service reaches Cairo in time")
        return
    service = min(feasible, key=lambda s: s["price_per_tonne"]["amount"])
    await client.call(
        "book_rail_freight",
        service_id=service["service_id"],
        order_id="ORD-5007",
        tonnes=order["tonnes"],
    )
    trucks = await client.call(
        "list_vehicles", depot="CAI", status="available", min_capacity_kg=int(order["weight_kg"])
    )
    await client.call(
        "dispatch_shipment",
        vehicle_id=trucks["vehicles"][0]["vehicle_id"],
        route=plan["routes"][0]["path"],
        stops=["ISM"],
        order_id="ORD-5007",
        departs_at=_plus(service["arrives_at"], TRANSSHIP_MIN).isoformat(),
    )


def verify_multimodal(s0: LogisticsState, sf: LogisticsState) -> bool:
    order0 = s0.order("ORD-5007")
    bookings = sf.rail_bookings[len(s0.rail_bookings) :]
    shipment = only_new_shipment(s0, sf)
    if order0 is None or shipment is None or len(bookings) != 1:
        return False
    tonnes = _order_weight(s0, order0) / 1000
    drive = best_by(s0, ["CAI", "ISM"], lambda m: m.duration_min).duration_min
    due = datetime.fromisoformat(order0.due_by)
    feasible = [
        s
        for s in s0.rail_services
        if (s.origin, s.destination) == ("ALX", "CAI")
        and s.capacity_t >= tonnes
        and _plus(s.arrives_at, TRANSSHIP_MIN + drive) <= due
    ]
    cheapest = min(feasible, key=lambda s: s.price_per_tonne_egp)
    booking = bookings[0]
    vehicle = s0.vehicle(shipment.vehicle_id)
    return (
        (booking.service_id, booking.order_id) == (cheapest.service_id, "ORD-5007")
        and abs(booking.tonnes - tonnes) < 1e-6
        and shipment.order_id == "ORD-5007"
        and shipment.route[0] == "CAI"
        and shipment.stops == ["ISM"]
        and vehicle is not None
        and vehicle.capacity_kg >= _order_weight(s0, order0)
        and datetime.fromisoformat(shipment.departs_at) == _plus(cheapest.arrives_at, TRANSSHIP_MIN)
        and datetime.fromisoformat(shipment.eta) <= due
    )


domain.task(
    id="logistics-08-rail-truck-cement",
    description=(
        "Order ORD-5007: 400 bags of cement (20 t) from Alexandria Port DC to Suez Canal Works "
        "in Ismailia, due today at 17:30. Send it by rail from Alexandria to the Cairo terminal, "
        "then by a Cairo truck that can carry the full load to Ismailia on the fastest road "
        "route. Book the cheapest rail service that still lets the cement arrive on time with "
        "60 minutes of transshipment in Cairo, book the whole 20 t, and dispatch the truck to "
        "leave exactly 60 minutes after the train arrives."
    ),
    initial_state=make_default_state,
    verify=verify_multimodal,
    solve=solve_multimodal,
    l_min=6,
    difficulty="complex",
    tags=["multimodal", "rail", "dispatch", "time-window"],
    escalation_acceptable=True,
)


# --- 10: two orders, the most frugal capable vehicle each -----------------------------------

TWO_ORDERS = ("ORD-5004", "ORD-5005")


def _frugal_vehicle(state: LogisticsState, weight: float) -> str:
    capable = [
        v
        for v in state.vehicles
        if v.depot == "CAI" and v.status == "available" and v.capacity_kg >= weight
    ]
    return min(capable, key=lambda v: (v.fuel_l_per_100km, v.vehicle_id)).vehicle_id


async def solve_two_orders(client: ToolClient) -> None:
    orders = [await client.call("get_order", order_id=order_id) for order_id in TWO_ORDERS]
    fleet = await client.call("list_vehicles", depot="CAI", status="available")
    taken: set[str] = set()
    for order in orders:
        capable = [
            v
            for v in fleet["vehicles"]
            if v["capacity_kg"] >= order["weight_kg"] and v["vehicle_id"] not in taken
        ]
        vehicle = min(capable, key=lambda v: v["fuel_l_per_100km"])
        taken.add(vehicle["vehicle_id"])
        destination = order["order"]["destination"]
        plan = await client.call("routing_api", origin="CAI", destination=destination)
        await client.call(
            "dispatch_shipment",
            vehicle_id=vehicle["vehicle_id"],
            route=plan["routes"][0]["path"],
            stops=[destination],
            order_id=order["order"]["order_id"],
        )


def verify_two_orders(s0: LogisticsState, sf: LogisticsState) -> bool:
    created = new_shipments(s0, sf)
    if len(created) != 2 or not old_shipments_unchanged(s0, sf):
        return False
    by_order = {s.order_id: s for s in created if s.status == "dispatched"}
    for order_id in TWO_ORDERS:
        order = s0.order(order_id)
        shipment = by_order.get(order_id)
        if order is None or shipment is None:
            return False
        if shipment.vehicle_id != _frugal_vehicle(s0, _order_weight(s0, order)):
            return False
        if not is_fastest(s0, shipment.route, ["CAI", order.destination]):
            return False
    return no_stock_side_effects(s0, sf)


domain.task(
    id="logistics-10-two-orders-frugal-fleet",
    description=(
        "Two orders allocated at the Cairo warehouse must leave now: ORD-5004 (truck tyres for "
        "Fayoum) and ORD-5005 (bottled water for Zagazig). For each, use the available "
        "Cairo-based vehicle with the lowest fuel consumption (L/100 km) that can carry the "
        "order's weight, and send it on the fastest route."
    ),
    initial_state=make_default_state,
    verify=verify_two_orders,
    solve=solve_two_orders,
    l_min=7,
    difficulty="complex",
    tags=["fleet", "routing", "dispatch"],
)
