"""Inventory, orders, rail freight and answers."""

from __future__ import annotations

from typing import Annotated, Literal

from chaosproxy.domains.kit import CriticalArg, ToolError
from chaosproxy.domains.logistics.domain import domain
from chaosproxy.domains.logistics.models import (
    AnswerReceipt,
    InventoryResult,
    Money,
    OrderDetail,
    RailBookingResult,
    RailSchedule,
    RailServiceInfo,
    StockLine,
    TransferResult,
    WarehouseInfo,
    WarehouseList,
)
from chaosproxy.domains.logistics.state import (
    LogisticsAnswer,
    LogisticsState,
    Order,
    RailBooking,
    Transfer,
    Warehouse,
)
from chaosproxy.domains.logistics.tools_routing import require_node
from pydantic import Field

WAREHOUSE_IDS = ["WH-CAI-1", "WH-ALX-1", "WH-TNT-1", "WH-ISM-1", "WH-SUZ-1"]
ORDER_IDS = ["ORD-5001", "ORD-5002", "ORD-5003", "ORD-5004", "ORD-5005", "ORD-5006", "ORD-5007"]

WarehouseId = Annotated[str, Field(description="Warehouse id, e.g. 'WH-CAI-1'")]


def require_warehouse(state: LogisticsState, warehouse_id: str, field: str) -> Warehouse:
    warehouse = state.warehouse(warehouse_id)
    if warehouse is None:
        raise ToolError(f"warehouse {warehouse_id!r} does not exist", status=404, field=field)
    return warehouse


def require_order(state: LogisticsState, order_id: str) -> Order:
    order = state.order(order_id)
    if order is None:
        raise ToolError(f"order {order_id!r} does not exist", status=404, field="order_id")
    return order


def require_sku(state: LogisticsState, sku: str, field: str = "sku") -> None:
    if state.sku(sku) is None:
        raise ToolError(f"unknown SKU {sku!r}", status=404, field=field)


@domain.tool()
def list_warehouses(state: LogisticsState) -> WarehouseList:
    """Warehouses with the node (city) they sit at."""
    names = {n.node_id: n.name for n in state.nodes}
    found = [
        WarehouseInfo(
            warehouse_id=w.warehouse_id,
            name=w.name,
            node=w.node,
            city=names.get(w.node, w.node),
            sku_count=len(w.stock),
        )
        for w in state.warehouses
    ]
    return WarehouseList(warehouses=found, total=len(found))


@domain.tool(critical={"warehouse_id": CriticalArg.choice(WAREHOUSE_IDS)})
def get_inventory(
    state: LogisticsState,
    warehouse_id: Annotated[str | None, Field(description="One warehouse; omit for all")] = None,
    sku: Annotated[str | None, Field(description="One SKU, e.g. 'CEM-50'; omit for all")] = None,
) -> InventoryResult:
    """Stock on hand per warehouse and SKU, with the safety stock that must not be shipped."""
    if warehouse_id is not None:
        require_warehouse(state, warehouse_id, "warehouse_id")
    if sku is not None:
        require_sku(state, sku)
    names = {s.sku: s.name for s in state.skus}
    lines = []
    for warehouse in state.warehouses:
        if warehouse_id is not None and warehouse.warehouse_id != warehouse_id:
            continue
        for code, on_hand in sorted(warehouse.stock.items()):
            if sku is not None and code != sku:
                continue
            safety = warehouse.safety_stock.get(code, 0)
            lines.append(
                StockLine(
                    warehouse_id=warehouse.warehouse_id,
                    warehouse_name=warehouse.name,
                    node=warehouse.node,
                    sku=code,
                    sku_name=names.get(code, code),
                    on_hand=on_hand,
                    safety_stock=safety,
                    available_above_safety=max(on_hand - safety, 0),
                )
            )
    return InventoryResult(lines=lines, total=len(lines))


@domain.tool(critical={"order_id": CriticalArg.choice(ORDER_IDS)})
def get_order(
    state: LogisticsState,
    order_id: Annotated[str, Field(description="Order id, e.g. 'ORD-5001'")],
) -> OrderDetail:
    """A customer order: destination node, SKU, quantity, weight, due time and allocation."""
    order = require_order(state, order_id)
    sku = state.sku(order.sku)
    weight = order.quantity * (sku.unit_weight_kg if sku else 0.0)
    node = state.node(order.destination)
    return OrderDetail(
        order=order,
        destination_name=node.name if node else order.destination,
        weight_kg=weight,
        tonnes=round(weight / 1000, 3),
    )


@domain.tool(
    idempotent=False,
    critical={
        "order_id": CriticalArg.choice(ORDER_IDS),
        "warehouse_id": CriticalArg.choice(WAREHOUSE_IDS),
    },
)
def allocate_order(
    state: LogisticsState,
    order_id: Annotated[str, Field(description="Open order to allocate")],
    warehouse_id: WarehouseId,
) -> OrderDetail:
    """Reserve an open order's stock at a warehouse (on-hand stock drops by the quantity)."""
    order = require_order(state, order_id)
    warehouse = require_warehouse(state, warehouse_id, "warehouse_id")
    if order.status != "open":
        raise ToolError(f"order {order_id} is already {order.status}", status=409, field="order_id")
    on_hand = warehouse.stock.get(order.sku, 0)
    if on_hand < order.quantity:
        raise ToolError(
            f"{warehouse_id} has {on_hand} x {order.sku}; the order needs {order.quantity}",
            status=409,
            field="warehouse_id",
        )
    warehouse.stock[order.sku] = on_hand - order.quantity
    order.status = "allocated"
    order.warehouse_id = warehouse_id
    return get_order(state, order_id)


@domain.tool(
    idempotent=False,
    critical={
        "from_warehouse": CriticalArg.choice(WAREHOUSE_IDS),
        "to_warehouse": CriticalArg.choice(WAREHOUSE_IDS),
        "quantity": CriticalArg.number(),
    },
)
def transfer_stock(
    state: LogisticsState,
    from_warehouse: WarehouseId,
    to_warehouse: WarehouseId,
    sku: Annotated[str, Field(description="SKU to move, e.g. 'PAL-STD'")],
    quantity: Annotated[int, Field(gt=0, description="Units to move")],
    mode: Annotated[Literal["truck", "rail"], Field(description="Transport mode")] = "truck",
) -> TransferResult:
    """Move stock between warehouses (booked immediately). Not idempotent: each call moves
    the quantity again."""
    source = require_warehouse(state, from_warehouse, "from_warehouse")
    target = require_warehouse(state, to_warehouse, "to_warehouse")
    require_sku(state, sku)
    if source.warehouse_id == target.warehouse_id:
        raise ToolError(
            "from_warehouse and to_warehouse are the same", status=422, field="to_warehouse"
        )
    on_hand = source.stock.get(sku, 0)
    if on_hand < quantity:
        raise ToolError(
            f"{from_warehouse} has only {on_hand} x {sku}", status=409, field="quantity"
        )
    source.stock[sku] = on_hand - quantity
    target.stock[sku] = target.stock.get(sku, 0) + quantity
    transfer = Transfer(
        transfer_id=state.issue_id("TRF"),
        from_warehouse=from_warehouse,
        to_warehouse=to_warehouse,
        sku=sku,
        quantity=quantity,
        mode=mode,
        created_at=state.now,
    )
    state.transfers.append(transfer)
    return TransferResult(
        transfer=transfer, from_on_hand=source.stock[sku], to_on_hand=target.stock[sku]
    )


@domain.tool(
    critical={
        "origin": CriticalArg.choice(["ALX", "CAI", "TNT", "ISM"]),
        "destination": CriticalArg.choice(["ALX", "CAI", "TNT", "ISM"]),
    }
)
def rail_schedule(
    state: LogisticsState,
    origin: Annotated[str, Field(description="Rail terminal node, e.g. 'ALX'")],
    destination: Annotated[str, Field(description="Rail terminal node, e.g. 'CAI'")],
) -> RailSchedule:
    """Today's rail freight services between two terminals, with free capacity and price."""
    require_node(state, origin, "origin")
    require_node(state, destination, "destination")
    for field, node_id in (("origin", origin), ("destination", destination)):
        node = state.node(node_id)
        if node is not None and not node.rail_terminal:
            raise ToolError(f"{node.name} has no rail freight terminal", status=422, field=field)
    services = [
        RailServiceInfo(
            service_id=s.service_id,
            origin=s.origin,
            destination=s.destination,
            departs_at=s.departs_at,
            arrives_at=s.arrives_at,
            available_t=s.capacity_t,
            price_per_tonne=Money(amount=s.price_per_tonne_egp),
        )
        for s in sorted(state.rail_services, key=lambda s: s.departs_at)
        if s.origin == origin and s.destination == destination
    ]
    return RailSchedule(
        origin=origin, destination=destination, services=services, total=len(services)
    )


@domain.tool(
    idempotent=False,
    critical={
        "service_id": CriticalArg.choice(["RF-811", "RF-815", "RF-819", "RF-902", "RF-733"]),
        "tonnes": CriticalArg.number(),
    },
)
def book_rail_freight(
    state: LogisticsState,
    service_id: Annotated[str, Field(description="Rail service id from rail_schedule")],
    order_id: Annotated[str, Field(description="Allocated order the freight belongs to")],
    tonnes: Annotated[float, Field(gt=0, description="Tonnes to book")],
) -> RailBookingResult:
    """Book freight capacity on a rail service for an allocated order. Not idempotent."""
    service = next((s for s in state.rail_services if s.service_id == service_id), None)
    if service is None:
        raise ToolError(
            f"rail service {service_id!r} does not exist", status=404, field="service_id"
        )
    order = require_order(state, order_id)
    if order.status != "allocated":
        raise ToolError(
            f"order {order_id} is {order.status}, not allocated", status=409, field="order_id"
        )
    warehouse = state.warehouse(order.warehouse_id or "")
    if warehouse is None or warehouse.node != service.origin:
        raise ToolError(
            f"order {order_id} is not stocked at {service.origin}", status=422, field="service_id"
        )
    if tonnes > service.capacity_t:
        raise ToolError(f"{service_id} has {service.capacity_t} t free", status=409, field="tonnes")
    service.capacity_t = round(service.capacity_t - tonnes, 3)
    booking = RailBooking(
        booking_id=state.issue_id("RB"),
        service_id=service_id,
        order_id=order_id,
        tonnes=tonnes,
        price_egp=round(tonnes * service.price_per_tonne_egp, 2),
    )
    state.rail_bookings.append(booking)
    return RailBookingResult(booking=booking, total_price=Money(amount=booking.price_egp))


@domain.tool(idempotent=False)
def submit_answer(
    state: LogisticsState,
    route: Annotated[list[str] | None, Field(description="Node path, if asked for")] = None,
    distance_km: Annotated[float | None, Field(description="Kilometres, if asked for")] = None,
    duration_min: Annotated[float | None, Field(description="Minutes, if asked for")] = None,
    fuel_litres: Annotated[float | None, Field(description="Litres, if asked for")] = None,
    cost_egp: Annotated[float | None, Field(description="Cost in EGP, if asked for")] = None,
    warehouse_id: Annotated[str | None, Field(description="Warehouse id, if asked for")] = None,
    quantity: Annotated[int | None, Field(description="Units, if asked for")] = None,
) -> AnswerReceipt:
    """Submit the answer to an information task; fill only the fields the task asks for."""
    answer = LogisticsAnswer(
        route=route,
        distance_km=distance_km,
        duration_min=duration_min,
        fuel_litres=fuel_litres,
        cost_egp=cost_egp,
        warehouse_id=warehouse_id,
        quantity=quantity,
    )
    if answer == LogisticsAnswer():
        raise ToolError(
            "the answer is empty: fill the fields the task asks for", status=422, field="route"
        )
    state.answers.append(answer)
    return AnswerReceipt(answer_id=len(state.answers), answer=answer)
