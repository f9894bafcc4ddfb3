"""Fleet tools: vehicles and shipments (dispatch, look-up, cancellation)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from chaosproxy.domains.kit import CriticalArg, ToolError
from chaosproxy.domains.logistics.domain import domain
from chaosproxy.domains.logistics.models import Money, ShipmentList, ShipmentResult, VehicleList
from chaosproxy.domains.logistics.network import visits_in_order
from chaosproxy.domains.logistics.state import LogisticsState, Order, Shipment, add_minutes
from chaosproxy.domains.logistics.tools_routing import (
    VEHICLE_IDS,
    measure_route,
    require_node,
    require_vehicle,
)
from pydantic import Field


@domain.tool()
def list_vehicles(
    state: LogisticsState,
    depot: Annotated[str | None, Field(description="Only vehicles based at this node")] = None,
    status: Annotated[
        Literal["available", "dispatched", "maintenance"] | None,
        Field(description="Only vehicles in this status"),
    ] = None,
    min_capacity_kg: Annotated[int | None, Field(ge=0, description="Minimum payload")] = None,
) -> VehicleList:
    """The fleet: vehicle kind, home depot, payload capacity, fuel use (L/100 km) and status."""
    if depot is not None:
        require_node(state, depot, "depot")
    chosen = [
        v
        for v in state.vehicles
        if (depot is None or v.depot == depot)
        and (status is None or v.status == status)
        and (min_capacity_kg is None or v.capacity_kg >= min_capacity_kg)
    ]
    return VehicleList(vehicles=chosen, total=len(chosen))


def _order_weight(state: LogisticsState, order: Order) -> float:
    sku = state.sku(order.sku)
    return order.quantity * (sku.unit_weight_kg if sku else 0.0)


def _check_departure(state: LogisticsState, departs_at: str | None) -> str:
    if departs_at is None:
        return state.now
    try:
        when = datetime.fromisoformat(departs_at)
    except ValueError:
        raise ToolError(
            f"departs_at {departs_at!r} is not an ISO 8601 date-time",
            status=422,
            field="departs_at",
        ) from None
    if when.tzinfo is None:
        raise ToolError(
            "departs_at needs a UTC offset, e.g. +02:00", status=422, field="departs_at"
        )
    if when < datetime.fromisoformat(state.now):
        raise ToolError(f"departs_at is before now ({state.now})", status=422, field="departs_at")
    return when.isoformat()


def _check_order(
    state: LogisticsState,
    order_id: str,
    route: list[str],
    stops: list[str],
    capacity_kg: int,
    departs_at: str,
) -> Order:
    order = state.order(order_id)
    if order is None:
        raise ToolError(f"order {order_id!r} does not exist", status=404, field="order_id")
    if order.status == "open":
        raise ToolError(
            f"order {order_id} is not allocated to a warehouse yet (allocate_order)",
            status=409,
            field="order_id",
        )
    if order.status != "allocated":
        raise ToolError(f"order {order_id} is {order.status}", status=409, field="order_id")
    if order.destination not in stops:
        raise ToolError(
            f"order {order_id} goes to {order.destination}, which is not a stop",
            status=422,
            field="stops",
        )
    weight = _order_weight(state, order)
    if weight > capacity_kg:
        raise ToolError(
            f"order {order_id} weighs {weight:.0f} kg; the vehicle carries {capacity_kg} kg",
            status=422,
            field="vehicle_id",
        )
    warehouse = state.warehouse(order.warehouse_id or "")
    rail = [
        (b, s)
        for b in state.rail_bookings
        if b.order_id == order_id and b.status == "confirmed"
        for s in state.rail_services
        if s.service_id == b.service_id
    ]
    if warehouse is not None and route[0] == warehouse.node:
        return order
    for _, service in rail:
        if route[0] == service.destination:
            if datetime.fromisoformat(departs_at) < datetime.fromisoformat(service.arrives_at):
                raise ToolError(
                    f"the cargo reaches {service.destination} on {service.service_id} "
                    f"at {service.arrives_at}; departs_at is earlier",
                    status=422,
                    field="departs_at",
                )
            return order
    start = warehouse.node if warehouse else "its warehouse"
    raise ToolError(
        f"order {order_id} is picked up at {start} (or its rail terminal); the route "
        f"starts at {route[0]}",
        status=422,
        field="route",
    )


@domain.tool(
    idempotent=False,
    critical={
        "vehicle_id": CriticalArg.choice(VEHICLE_IDS),
        "route": CriticalArg.choice([["CAI", "GIZ"], ["CAI", "ISM", "PSD"], ["CAI", "SUZ"]]),
        "stops": CriticalArg.choice([["GIZ"], ["PSD"], ["ALX", "GIZ"]]),
    },
)
def dispatch_shipment(
    state: LogisticsState,
    vehicle_id: Annotated[str, Field(description="Vehicle id; it leaves from its home depot")],
    route: Annotated[
        list[str], Field(description="Full node path from the depot, e.g. ['CAI', 'GIZ', 'OCT']")
    ],
    stops: Annotated[
        list[str], Field(min_length=1, description="Delivery stops in order; the last is the end")
    ],
    order_id: Annotated[str | None, Field(description="Allocated order carried, if any")] = None,
    departs_at: Annotated[
        str | None, Field(description="ISO 8601 departure with offset; default now")
    ] = None,
) -> ShipmentResult:
    """Commit a vehicle to a route. The route must start at the vehicle's depot, pass the stops
    in order and end at the last stop. Not idempotent: each call dispatches a new shipment."""
    vehicle = require_vehicle(state, vehicle_id)
    if vehicle.status != "available":
        raise ToolError(f"vehicle {vehicle_id} is {vehicle.status}", status=409, field="vehicle_id")
    metrics = measure_route(state, route)
    if route[0] != vehicle.depot:
        raise ToolError(
            f"{vehicle_id} is based at {vehicle.depot}; the route starts at {route[0]}",
            status=422,
            field="route",
        )
    for index, stop in enumerate(stops):
        require_node(state, stop, f"stops[{index}]")
    if route[-1] != stops[-1] or not visits_in_order(route[1:], stops):
        raise ToolError(
            "the route must pass every stop in order and end at the last stop",
            status=422,
            field="stops",
        )
    departure = _check_departure(state, departs_at)
    order = None
    if order_id is not None:
        order = _check_order(state, order_id, route, stops, vehicle.capacity_kg, departure)
    litres = metrics.fuel_litres(vehicle.fuel_l_per_100km)
    eta = add_minutes(departure, metrics.duration_min)
    network = state.network()
    warnings = [
        f"edge {e} is closed: {state.traffic_for(e).incident or 'closure'}"
        for e in metrics.edges
        if not network.is_open(e)
    ]
    if order is not None:
        if datetime.fromisoformat(eta) > datetime.fromisoformat(order.due_by):
            warnings.append(f"ETA {eta} is after the order's due time {order.due_by}")
        order.status = "dispatched"
    shipment = Shipment(
        shipment_id=state.issue_id("SHP"),
        vehicle_id=vehicle_id,
        route=list(route),
        stops=list(stops),
        order_id=order_id,
        distance_km=metrics.distance_km,
        duration_min=metrics.duration_min,
        fuel_litres=litres,
        toll_egp=metrics.toll_egp,
        departs_at=departure,
        eta=eta,
    )
    state.shipments.append(shipment)
    vehicle.status = "dispatched"
    return ShipmentResult(
        shipment=shipment,
        fuel_cost=Money(amount=round(litres * state.fuel_price_egp_per_l, 2)),
        toll=Money(amount=metrics.toll_egp),
        warnings=warnings,
    )


@domain.tool()
def list_shipments(
    state: LogisticsState,
    status: Annotated[
        Literal["dispatched", "cancelled"] | None, Field(description="Only this status")
    ] = None,
    vehicle_id: Annotated[str | None, Field(description="Only this vehicle")] = None,
) -> ShipmentList:
    """Shipments with their route, stops, order, fuel, departure and ETA."""
    chosen = [
        s
        for s in state.shipments
        if (status is None or s.status == status)
        and (vehicle_id is None or s.vehicle_id == vehicle_id)
    ]
    return ShipmentList(shipments=chosen, total=len(chosen))


@domain.tool(idempotent=False, critical={"shipment_id": CriticalArg.id_bump()})
def cancel_shipment(
    state: LogisticsState,
    shipment_id: Annotated[str, Field(description="Shipment id, e.g. 'SHP-0007'")],
    reason: Annotated[str, Field(min_length=1, description="Why it is cancelled")],
) -> ShipmentResult:
    """Recall a dispatched shipment: the vehicle becomes available and its order returns to
    'allocated' so it can be dispatched again."""
    shipment = next((s for s in state.shipments if s.shipment_id == shipment_id), None)
    if shipment is None:
        raise ToolError(f"shipment {shipment_id!r} does not exist", status=404, field="shipment_id")
    if shipment.status != "dispatched":
        raise ToolError(
            f"shipment {shipment_id} is already {shipment.status}", status=409, field="shipment_id"
        )
    shipment.status = "cancelled"
    vehicle = state.vehicle(shipment.vehicle_id)
    if vehicle is not None:
        vehicle.status = "available"
    order = state.order(shipment.order_id or "")
    if order is not None and order.status == "dispatched":
        order.status = "allocated"
    return ShipmentResult(
        shipment=shipment,
        fuel_cost=Money(amount=0.0),
        toll=Money(amount=0.0),
        warnings=[f"cancelled: {reason}"],
    )
