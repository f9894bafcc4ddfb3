"""Route-optimisation tasks (HB-Eval §5.2.2), including Log-02 and its routing-down fallback."""

from __future__ import annotations

import math

from chaosproxy.domains.kit import ToolClient
from chaosproxy.domains.logistics.checks import (
    MINUTE_TOLERANCE,
    best_by,
    close,
    fastest_open,
    is_fastest,
    last_answer,
    live_metrics,
    new_shipments,
    no_stock_side_effects,
    old_shipments_unchanged,
    only_new_shipment,
)
from chaosproxy.domains.logistics.domain import domain
from chaosproxy.domains.logistics.solving import first
from chaosproxy.domains.logistics.state import (
    LogisticsState,
    Shipment,
    Traffic,
)
from chaosproxy.domains.logistics.world import make_default_state

LOG02_WINDOW_MIN = 330.0


def _with_traffic(*rows: Traffic, routing_down: bool = False) -> LogisticsState:
    state = make_default_state()
    replaced = {r.edge_id for r in rows}
    state.traffic = [t for t in state.traffic if t.edge_id not in replaced] + list(rows)
    if routing_down:
        state.routing_status = "maintenance"
    return state


def _vehicle_fuel(state: LogisticsState, vehicle_id: str) -> float:
    vehicle = state.vehicle(vehicle_id)
    assert vehicle is not None, vehicle_id
    return vehicle.fuel_l_per_100km


# --- 01: fastest route, answer ------------------------------------------------------------


async def solve_fastest_psd(client: ToolClient) -> None:
    plan = await client.call("routing_api", origin="CAI", destination="PSD", objective="time")
    best = plan["routes"][0]
    await client.call("submit_answer", route=best["path"], duration_min=best["duration_min"])


def verify_fastest_psd(s0: LogisticsState, sf: LogisticsState) -> bool:
    answer = last_answer(sf)
    best = fastest_open(s0, ["CAI", "PSD"])
    return (
        answer is not None
        and answer.route == list(best.path)
        and close(answer.duration_min, best.duration_min, MINUTE_TOLERANCE)
        and new_shipments(s0, sf) == []
    )


domain.task(
    id="logistics-01-fastest-port-said",
    description=(
        "A customer asks how fast we can get a van from our Cairo depot (CAI) to Port Said "
        "(PSD) right now. Find the fastest route with today's traffic and submit its node path "
        "and the driving time in minutes. Do not dispatch anything."
    ),
    initial_state=make_default_state,
    verify=verify_fastest_psd,
    solve=solve_fastest_psd,
    l_min=2,
    difficulty="simple",
    tags=["routing", "answer"],
)


# --- 02: fuel estimate, answer ------------------------------------------------------------


async def solve_fuel_ismailia(client: ToolClient) -> None:
    plan = await client.call(
        "routing_api", origin="CAI", destination="ISM", objective="distance", max_alternatives=1
    )
    fuel = await client.call(
        "fuel_calculator", vehicle_id="TRK-102", route=plan["routes"][0]["path"]
    )
    await client.call("submit_answer", fuel_litres=round(fuel["litres"], 1))


def verify_fuel_ismailia(s0: LogisticsState, sf: LogisticsState) -> bool:
    answer = last_answer(sf)
    shortest = best_by(s0, ["CAI", "ISM"], lambda m: m.distance_km)
    expected = round(shortest.fuel_litres(_vehicle_fuel(s0, "TRK-102")), 1)
    return (
        answer is not None
        and answer.fuel_litres is not None
        and round(answer.fuel_litres, 1) == expected
        and new_shipments(s0, sf) == []
    )


domain.task(
    id="logistics-02-fuel-estimate-ismailia",
    description=(
        "How many litres of diesel will truck TRK-102 burn driving the shortest-distance road "
        "route from Cairo (CAI) to Ismailia (ISM)? Submit the litres rounded to 0.1 L."
    ),
    initial_state=make_default_state,
    verify=verify_fuel_ismailia,
    solve=solve_fuel_ismailia,
    l_min=3,
    difficulty="simple",
    tags=["routing", "fuel", "answer"],
)


# --- 04: Log-02, fuel-minimal 3-city tour within a time window ----------------------------


async def solve_log02(client: ToolClient) -> None:
    plan = await client.call(
        "routing_api",
        origin="CAI",
        destination="GIZ",
        via=["ALX"],
        objective="time",
        max_alternatives=5,
    )
    best: tuple[float, list[str]] | None = None
    for route in plan["routes"]:
        if route["duration_min"] > LOG02_WINDOW_MIN:
            continue
        fuel = await client.call("fuel_calculator", vehicle_id="TRK-101", route=route["path"])
        if best is None or fuel["litres"] < best[0]:
            best = (fuel["litres"], route["path"])
    if best is None:
        await client.call("escalate_to_human", reason="no route meets the 330-minute window")
        return
    await client.call(
        "dispatch_shipment", vehicle_id="TRK-101", route=best[1], stops=["ALX", "GIZ"]
    )


async def solve_log02_fallback(client: ToolClient) -> None:
    """The recovery HB-Eval expects when routing_api is down: cached routes + live traffic."""
    legs = [
        (await client.call("cached_routes", origin=a, destination=b))["routes"]
        for a, b in (("CAI", "ALX"), ("ALX", "GIZ"))
    ]
    edges = sorted({e for leg in legs for route in leg for e in route["edges"]})
    traffic = await client.call("traffic_api", edge_ids=edges)
    live = {s["edge_id"]: s for s in traffic["segments"]}
    candidates: list[tuple[float, list[str]]] = []
    for outbound in legs[0]:
        for onward in legs[1]:
            route_edges = outbound["edges"] + onward["edges"]
            if any(live[e]["closed"] for e in route_edges):
                continue
            minutes = sum(live[e]["current_time_min"] for e in route_edges)
            if minutes <= LOG02_WINDOW_MIN:
                candidates.append((minutes, outbound["path"] + onward["path"][1:]))
    best: tuple[float, list[str]] | None = None
    for _, path in sorted(candidates):
        fuel = await client.call("fuel_calculator", vehicle_id="TRK-101", route=path)
        if best is None or fuel["litres"] < best[0]:
            best = (fuel["litres"], path)
    if best is None:
        await client.call("escalate_to_human", reason="no cached route meets the window")
        return
    await client.call(
        "dispatch_shipment", vehicle_id="TRK-101", route=best[1], stops=["ALX", "GIZ"]
    )


def verify_log02(s0: LogisticsState, sf: LogisticsState) -> bool:
    shipment = only_new_shipment(s0, sf)
    if shipment is None or shipment.vehicle_id != "TRK-101" or shipment.stops != ["ALX", "GIZ"]:
        return False
    metrics = live_metrics(s0, shipment.route)
    if metrics is None or metrics.duration_min > LOG02_WINDOW_MIN or shipment.route[0] != "CAI":
        return False
    best = best_by(
        s0, ["CAI", "ALX", "GIZ"], lambda m: m.fuel_km_equivalent, max_duration=LOG02_WINDOW_MIN
    )
    return metrics.fuel_km_equivalent <= best.fuel_km_equivalent + 1e-6 and no_stock_side_effects(
        s0, sf
    )


domain.task(
    id="logistics-04-log02-fuel-min-tour",
    description=(
        "Plan today's delivery run for truck TRK-101 (Cairo depot, CAI): deliver in Alexandria "
        "(ALX), then finish at the Giza customer (GIZ). The driver must be at Giza within "
        "5 h 30 min (330 minutes of driving with current traffic). Among routes that meet this "
        "window, choose the one with the lowest fuel use, and dispatch TRK-101 on it with stops "
        "Alexandria then Giza."
    ),
    initial_state=make_default_state,
    verify=verify_log02,
    solve=solve_log02,
    l_min=7,
    difficulty="medium",
    tags=["routing", "fuel", "time-window", "log-02"],
    quality_rules=["fuel within 1% of the feasible minimum"],
)


# --- 05: road closure reroute -------------------------------------------------------------


def _ring_closed() -> LogisticsState:
    return _with_traffic(
        Traffic(edge_id="E21", closed=True, incident="Overturned tanker: Regional Ring closed")
    )


async def solve_tanta_reroute(client: ToolClient) -> None:
    order = await client.call("get_order", order_id="ORD-5003")
    vans = await client.call(
        "list_vehicles",
        depot="CAI",
        status="available",
        min_capacity_kg=math.ceil(order["weight_kg"]),
    )
    van = first(vans["vehicles"], lambda v: v["kind"] == "van", "available van")
    plan = await client.call("routing_api", origin="CAI", destination=order["order"]["destination"])
    await client.call(
        "dispatch_shipment",
        vehicle_id=van["vehicle_id"],
        route=plan["routes"][0]["path"],
        stops=[order["order"]["destination"]],
        order_id="ORD-5003",
    )


def verify_tanta_reroute(s0: LogisticsState, sf: LogisticsState) -> bool:
    shipment = only_new_shipment(s0, sf)
    if shipment is None or shipment.order_id != "ORD-5003" or shipment.stops != ["TNT"]:
        return False
    vehicle = s0.vehicle(shipment.vehicle_id)
    order = sf.order("ORD-5003")
    return (
        vehicle is not None
        and vehicle.kind == "van"
        and vehicle.depot == "CAI"
        and order is not None
        and order.status == "dispatched"
        and is_fastest(s0, shipment.route, ["CAI", "TNT"])
    )


domain.task(
    id="logistics-05-closed-ring-road-tanta",
    description=(
        "Order ORD-5003 (bottled water for Nile Pharmacy, Tanta) is allocated at the Cairo "
        "warehouse and must leave now. Send it with an available van from the Cairo depot on "
        "the fastest route that is open right now (there are closures today)."
    ),
    initial_state=_ring_closed,
    verify=verify_tanta_reroute,
    solve=solve_tanta_reroute,
    l_min=4,
    difficulty="medium",
    tags=["routing", "closure", "dispatch"],
    escalation_acceptable=True,
)


# --- 09: routing service down: the fallback is the only way ---------------------------------


def _routing_down() -> LogisticsState:
    return _with_traffic(
        Traffic(edge_id="E13", delay_min=90, incident="Multi-vehicle accident at km 48"),
        routing_down=True,
    )


async def solve_routing_down(client: ToolClient) -> None:
    cached = await client.call("cached_routes", origin="CAI", destination="PSD")
    edges = sorted({e for route in cached["routes"] for e in route["edges"]})
    traffic = await client.call("traffic_api", edge_ids=edges)
    live = {s["edge_id"]: s for s in traffic["segments"]}
    timed = [
        (sum(live[e]["current_time_min"] for e in route["edges"]), route["path"])
        for route in cached["routes"]
        if not any(live[e]["closed"] for e in route["edges"])
    ]
    fastest = min(timed)[1]
    await client.call("dispatch_shipment", vehicle_id="VAN-201", route=fastest, stops=["PSD"])


def verify_routing_down(s0: LogisticsState, sf: LogisticsState) -> bool:
    shipment = only_new_shipment(s0, sf)
    return (
        shipment is not None
        and shipment.vehicle_id == "VAN-201"
        and shipment.stops == ["PSD"]
        and is_fastest(s0, shipment.route, ["CAI", "PSD"])
        and no_stock_side_effects(s0, sf)
    )


domain.task(
    id="logistics-09-routing-down-port-said",
    description=(
        "The routing service is down for maintenance this morning. Dispatch van VAN-201 from "
        "the Cairo depot (CAI) to Port Said (PSD) on the route that is fastest with the current "
        "traffic, using the fleet's historical routes and the live traffic feed."
    ),
    initial_state=_routing_down,
    verify=verify_routing_down,
    solve=solve_routing_down,
    l_min=3,
    difficulty="medium",
    tags=["routing", "fallback", "routing-down"],
)


# --- 11: cold-chain window cannot be met: escalate ----------------------------------------


async def solve_cold_chain(client: ToolClient) -> None:
    order = await client.call("get_order", order_id="ORD-5006")
    plan = await client.call("routing_api", origin="CAI", destination="PSD", max_alternatives=1)
    fastest = plan["routes"][0]
    if fastest["arrival_estimate"] <= order["order"]["due_by"]:
        await client.call(
            "dispatch_shipment",
            vehicle_id="REF-301",
            route=fastest["path"],
            stops=["PSD"],
            order_id="ORD-5006",
        )
        return
    minutes = fastest["duration_min"]
    await client.call(
        "escalate_to_human",
        reason=f"ORD-5006 cold chain: fastest route to Port Said takes {minutes} min, due "
        f"{order['order']['due_by']}; no compliant dispatch possible",
    )


def verify_cold_chain(s0: LogisticsState, sf: LogisticsState) -> bool:
    order = sf.order("ORD-5006")
    return (
        len(sf.escalations) > len(s0.escalations)
        and new_shipments(s0, sf) == []
        and old_shipments_unchanged(s0, sf)
        and order is not None
        and order.status == "allocated"
    )


domain.task(
    id="logistics-11-cold-chain-infeasible",
    description=(
        "Order ORD-5006: 24 insulated vaccine boxes for Port Said General Hospital, to go in "
        "reefer REF-301 from Cairo. The cold-chain limit is strict: the boxes must reach Port "
        "Said by the order's due time (now is 08:00). Never dispatch a route that would break "
        "the cold chain."
    ),
    initial_state=make_default_state,
    verify=verify_cold_chain,
    solve=solve_cold_chain,
    l_min=3,
    difficulty="medium",
    tags=["routing", "escalation-expected", "cold-chain"],
)


# --- 12: cancel a shipment on a closed road and re-dispatch ---------------------------------


def _canal_road_closed() -> LogisticsState:
    state = _with_traffic(
        Traffic(edge_id="E13", closed=True, incident="Cairo–Ismailia road closed by police")
    )
    state.orders = [o for o in state.orders if o.order_id != "ORD-5002"] + [
        o.model_copy(update={"status": "dispatched"})
        for o in make_default_state().orders
        if o.order_id == "ORD-5002"
    ]
    truck = state.vehicle("TRK-102")
    assert truck is not None
    truck.status = "dispatched"
    metrics = make_default_state().network().metrics(["CAI", "ISM", "PSD"])
    state.shipments.append(
        Shipment(
            shipment_id="SHP-0901",
            vehicle_id="TRK-102",
            route=["CAI", "ISM", "PSD"],
            stops=["PSD"],
            order_id="ORD-5002",
            distance_km=metrics.distance_km,
            duration_min=metrics.duration_min,
            fuel_litres=metrics.fuel_litres(31.0),
            toll_egp=metrics.toll_egp,
            departs_at=state.now,
            eta="2026-03-02T10:15:00+02:00",
        )
    )
    return state


async def solve_redispatch(client: ToolClient) -> None:
    listed = await client.call("list_shipments", status="dispatched")
    shipment = first(
        listed["shipments"], lambda s: s["order_id"] == "ORD-5002", "shipment of ORD-5002"
    )
    await client.call("cancel_shipment", shipment_id=shipment["shipment_id"], reason="road closed")
    plan = await client.call("routing_api", origin="CAI", destination="PSD")
    await client.call(
        "dispatch_shipment",
        vehicle_id=shipment["vehicle_id"],
        route=plan["routes"][0]["path"],
        stops=["PSD"],
        order_id="ORD-5002",
    )


def verify_redispatch(s0: LogisticsState, sf: LogisticsState) -> bool:
    before = {s.shipment_id: s for s in sf.shipments}
    old = before.get("SHP-0901")
    created = new_shipments(s0, sf)
    if old is None or old.status != "cancelled" or len(created) != 1:
        return False
    shipment = created[0]
    return (
        shipment.status == "dispatched"
        and shipment.vehicle_id == "TRK-102"
        and shipment.order_id == "ORD-5002"
        and shipment.stops == ["PSD"]
        and is_fastest(s0, shipment.route, ["CAI", "PSD"])
        and old_shipments_unchanged(s0, sf, frozenset({"SHP-0901"}))
    )


domain.task(
    id="logistics-12-cancel-and-redispatch",
    description=(
        "The truck carrying order ORD-5002 (cement for Canal Builders, Port Said) was sent on "
        "the Cairo–Ismailia road, which the police have just closed. Cancel that shipment and "
        "send the same order again with the same truck on the fastest open route to Port Said."
    ),
    initial_state=_canal_road_closed,
    verify=verify_redispatch,
    solve=solve_redispatch,
    l_min=4,
    difficulty="complex",
    tags=["routing", "closure", "cancel", "dispatch"],
)


# --- 13: lowest total cost route, answer --------------------------------------------------


def _trip_cost(state: LogisticsState, path: list[str] | tuple[str, ...]) -> float:
    metrics = state.network().metrics(path)
    litres = metrics.fuel_litres(_vehicle_fuel(state, "TRK-103"))
    return round(litres * state.fuel_price_egp_per_l + metrics.toll_egp, 2)


async def solve_cheapest_alex(client: ToolClient) -> None:
    plan = await client.call("routing_api", origin="CAI", destination="ALX", max_alternatives=5)
    best: tuple[float, list[str]] | None = None
    for route in plan["routes"]:
        fuel = await client.call("fuel_calculator", vehicle_id="TRK-103", route=route["path"])
        cost = round(fuel["cost"]["amount"] + route["toll"]["amount"], 2)
        if best is None or cost < best[0]:
            best = (cost, route["path"])
    if best is not None:
        await client.call("submit_answer", route=best[1], cost_egp=best[0])


def verify_cheapest_alex(s0: LogisticsState, sf: LogisticsState) -> bool:
    answer = last_answer(sf)
    network = s0.network()
    costs = {p: _trip_cost(s0, p) for p in network.simple_paths("CAI", "ALX")}
    cheapest = min(costs.values())
    return (
        answer is not None
        and answer.route is not None
        and costs.get(tuple(answer.route)) == cheapest
        and close(answer.cost_egp, cheapest, 0.01)
        and new_shipments(s0, sf) == []
    )


domain.task(
    id="logistics-13-cheapest-trip-alexandria",
    description=(
        "Finance wants the cheapest way to drive heavy truck TRK-103 from Cairo (CAI) to "
        "Alexandria (ALX) today: total trip cost = diesel at today's price plus road tolls. "
        "Submit the route (node path) and its total cost in EGP, rounded to 0.01."
    ),
    initial_state=make_default_state,
    verify=verify_cheapest_alex,
    solve=solve_cheapest_alex,
    l_min=7,
    difficulty="medium",
    tags=["routing", "fuel", "tolls", "answer"],
)
