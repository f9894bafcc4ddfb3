"""Result records of the logistics tools (what agents see on the wire)."""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.logistics.state import (
    LogisticsAnswer,
    Node,
    Order,
    RailBooking,
    Shipment,
    Transfer,
    Vehicle,
)
from pydantic import BaseModel


class Money(BaseModel):
    amount: float
    currency: Literal["EGP"] = "EGP"


class EdgeInfo(BaseModel):
    edge_id: str
    from_node: str
    to_node: str
    name: str
    distance_km: float
    free_flow_min: float
    toll: Money
    road_type: str


class NetworkResult(BaseModel):
    nodes: list[Node]
    edges: list[EdgeInfo]
    total_nodes: int
    total_edges: int


class RouteLeg(BaseModel):
    origin: str
    destination: str
    path: list[str]
    distance_km: float
    duration_min: float


class RouteOption(BaseModel):
    rank: int
    path: list[str]
    path_names: list[str]
    edges: list[str]
    legs: list[RouteLeg]
    distance_km: float
    duration_min: float
    toll: Money
    arrival_estimate: str


class RoutingResult(BaseModel):
    origin: str
    destination: str
    via: list[str]
    objective: Literal["time", "distance"]
    computed_at: str
    traffic_model: Literal["live"] = "live"
    routes: list[RouteOption]
    total: int


class Segment(BaseModel):
    edge_id: str
    from_node: str
    to_node: str
    name: str
    road_type: str
    distance_km: float
    free_flow_min: float
    delay_min: float
    current_time_min: float
    congestion: Literal["free", "moderate", "heavy", "closed"]
    closed: bool
    incident: str | None


class TrafficResult(BaseModel):
    observed_at: str
    segments: list[Segment]
    total: int


class CachedRoute(BaseModel):
    route_id: str
    path: list[str]
    edges: list[str]
    distance_km: float
    typical_duration_min: float
    last_used: str


class CachedRoutesResult(BaseModel):
    origin: str
    destination: str
    source: Literal["historical-dispatch-log"] = "historical-dispatch-log"
    note: str
    routes: list[CachedRoute]
    total: int


class EdgeFuel(BaseModel):
    edge_id: str
    road_type: str
    distance_km: float
    litres: float


class FuelEstimate(BaseModel):
    vehicle_id: str
    route: list[str]
    distance_km: float
    litres: float
    price_per_litre: Money
    cost: Money
    co2_kg: float
    by_edge: list[EdgeFuel]


class VehicleList(BaseModel):
    vehicles: list[Vehicle]
    total: int


class StockLine(BaseModel):
    warehouse_id: str
    warehouse_name: str
    node: str
    sku: str
    sku_name: str
    on_hand: int
    safety_stock: int
    available_above_safety: int


class InventoryResult(BaseModel):
    lines: list[StockLine]
    total: int


class WarehouseInfo(BaseModel):
    warehouse_id: str
    name: str
    node: str
    city: str
    sku_count: int


class WarehouseList(BaseModel):
    warehouses: list[WarehouseInfo]
    total: int


class OrderDetail(BaseModel):
    order: Order
    destination_name: str
    weight_kg: float
    tonnes: float


class RailServiceInfo(BaseModel):
    service_id: str
    origin: str
    destination: str
    departs_at: str
    arrives_at: str
    available_t: float
    price_per_tonne: Money


class RailSchedule(BaseModel):
    origin: str
    destination: str
    services: list[RailServiceInfo]
    total: int


class RailBookingResult(BaseModel):
    booking: RailBooking
    total_price: Money


class ShipmentResult(BaseModel):
    shipment: Shipment
    fuel_cost: Money
    toll: Money
    warnings: list[str]


class ShipmentList(BaseModel):
    shipments: list[Shipment]
    total: int


class TransferResult(BaseModel):
    transfer: Transfer
    from_on_hand: int
    to_on_hand: int


class AnswerReceipt(BaseModel):
    answer_id: int
    answer: LogisticsAnswer
    status: Literal["recorded"] = "recorded"
