"""Logistics state models: road network, fleet, warehouses, orders, rail and shipments.

Everything the oracle must judge lives here; time is `now` in state, ids come from
`next_id`, so the same calls always give the same world.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from chaosproxy.domains.kit import DomainState
from chaosproxy.domains.logistics.network import Conditions, Network, RoadType
from pydantic import BaseModel, Field

VehicleKind = Literal["van", "truck", "heavy_truck", "reefer"]


class Node(BaseModel):
    node_id: str
    name: str
    lat: float
    lon: float
    rail_terminal: bool = False


class Edge(BaseModel):
    edge_id: str
    a: str
    b: str
    name: str
    distance_km: float
    base_time_min: float
    toll_egp: float
    road_type: RoadType


class Traffic(BaseModel):
    edge_id: str
    delay_min: float = 0.0
    closed: bool = False
    incident: str | None = None


class Vehicle(BaseModel):
    vehicle_id: str
    kind: VehicleKind
    plate: str
    depot: str
    capacity_kg: int
    fuel_l_per_100km: float
    status: Literal["available", "dispatched", "maintenance"] = "available"


class Sku(BaseModel):
    sku: str
    name: str
    unit_weight_kg: float


class Warehouse(BaseModel):
    warehouse_id: str
    name: str
    node: str
    stock: dict[str, int]
    safety_stock: dict[str, int] = Field(default_factory=dict)


class Order(BaseModel):
    order_id: str
    customer: str
    destination: str
    sku: str
    quantity: int
    due_by: str
    status: Literal["open", "allocated", "dispatched", "cancelled"] = "open"
    warehouse_id: str | None = None


class RailService(BaseModel):
    service_id: str
    origin: str
    destination: str
    departs_at: str
    arrives_at: str
    capacity_t: float
    price_per_tonne_egp: float


class RailBooking(BaseModel):
    booking_id: str
    service_id: str
    order_id: str
    tonnes: float
    price_egp: float
    status: Literal["confirmed", "cancelled"] = "confirmed"


class Shipment(BaseModel):
    shipment_id: str
    vehicle_id: str
    route: list[str]
    stops: list[str]
    order_id: str | None = None
    distance_km: float
    duration_min: float
    fuel_litres: float
    toll_egp: float
    departs_at: str
    eta: str
    status: Literal["dispatched", "cancelled"] = "dispatched"


class Transfer(BaseModel):
    transfer_id: str
    from_warehouse: str
    to_warehouse: str
    sku: str
    quantity: int
    mode: Literal["truck", "rail"]
    created_at: str


class LogisticsAnswer(BaseModel):
    """A typed answer to an information task; unused fields stay None."""

    route: list[str] | None = None
    distance_km: float | None = None
    duration_min: float | None = None
    fuel_litres: float | None = None
    cost_egp: float | None = None
    warehouse_id: str | None = None
    quantity: int | None = None


class LogisticsState(DomainState):
    now: str = "2026-03-02T08:00:00+02:00"
    next_id: int = 1
    fuel_price_egp_per_l: float = 15.5
    routing_status: Literal["ok", "maintenance"] = "ok"
    nodes: list[Node]
    edges: list[Edge]
    traffic: list[Traffic] = Field(default_factory=list)
    vehicles: list[Vehicle]
    skus: list[Sku]
    warehouses: list[Warehouse]
    orders: list[Order] = Field(default_factory=list)
    rail_services: list[RailService] = Field(default_factory=list)
    rail_bookings: list[RailBooking] = Field(default_factory=list)
    shipments: list[Shipment] = Field(default_factory=list)
    transfers: list[Transfer] = Field(default_factory=list)
    answers: list[LogisticsAnswer] = Field(default_factory=list)

    def network(self) -> Network:
        conditions = {t.edge_id: Conditions(t.delay_min, t.closed) for t in self.traffic}
        return Network(self.edges, conditions)

    def issue_id(self, prefix: str) -> str:
        value = f"{prefix}-{self.next_id:04d}"
        self.next_id += 1
        return value

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def vehicle(self, vehicle_id: str) -> Vehicle | None:
        return next((v for v in self.vehicles if v.vehicle_id == vehicle_id), None)

    def warehouse(self, warehouse_id: str) -> Warehouse | None:
        return next((w for w in self.warehouses if w.warehouse_id == warehouse_id), None)

    def order(self, order_id: str) -> Order | None:
        return next((o for o in self.orders if o.order_id == order_id), None)

    def sku(self, sku: str) -> Sku | None:
        return next((s for s in self.skus if s.sku == sku), None)

    def traffic_for(self, edge_id: str) -> Traffic:
        return next((t for t in self.traffic if t.edge_id == edge_id), Traffic(edge_id=edge_id))

    def live_shipments(self) -> list[Shipment]:
        return [s for s in self.shipments if s.status == "dispatched"]


def add_minutes(iso: str, minutes: float) -> str:
    return (datetime.fromisoformat(iso) + timedelta(minutes=minutes)).isoformat()
