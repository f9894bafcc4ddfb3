"""Routing tools: the network, live routing, live traffic, cached routes and fuel.

routing_api is the convenient path; cached_routes + traffic_api + fuel_calculator is the
fallback that reaches the same plan when routing_api is down (HB-Eval Log-02's recovery).
"""

from __future__ import annotations

from datetime import date, timedelta
from itertools import pairwise
from typing import Annotated, Literal

from chaosproxy.domains.kit import CriticalArg, ToolError
from chaosproxy.domains.logistics.domain import domain
from chaosproxy.domains.logistics.models import (
    CachedRoute,
    CachedRoutesResult,
    EdgeFuel,
    EdgeInfo,
    FuelEstimate,
    Money,
    NetworkResult,
    RouteLeg,
    RouteOption,
    RoutingResult,
    Segment,
    TrafficResult,
)
from chaosproxy.domains.logistics.network import ROAD_FUEL_FACTOR, Network, RouteMetrics
from chaosproxy.domains.logistics.state import Edge, LogisticsState, Vehicle, add_minutes
from pydantic import Field

NODE_IDS = [
    "CAI",
    "GIZ",
    "ALX",
    "BNH",
    "TNT",
    "DMH",
    "OCT",
    "WNT",
    "SDT",
    "ZGZ",
    "ISM",
    "SUZ",
    "PSD",
    "FYM",
]
VEHICLE_IDS = [
    "TRK-101",
    "TRK-102",
    "TRK-103",
    "TRK-104",
    "VAN-201",
    "VAN-202",
    "VAN-203",
    "REF-301",
]
CO2_KG_PER_LITRE_DIESEL = 2.68
CACHED_ROUTES_PER_PAIR = 5

NodeId = Annotated[str, Field(description="Node id, e.g. 'CAI' (Cairo); see get_network")]


def require_node(state: LogisticsState, node_id: str, field: str) -> None:
    if state.node(node_id) is None:
        known = ", ".join(n.node_id for n in state.nodes)
        raise ToolError(f"unknown node {node_id!r} (known: {known})", status=404, field=field)


def require_vehicle(state: LogisticsState, vehicle_id: str, field: str = "vehicle_id") -> Vehicle:
    vehicle = state.vehicle(vehicle_id)
    if vehicle is None:
        raise ToolError(f"vehicle {vehicle_id!r} does not exist", status=404, field=field)
    return vehicle


def measure_route(state: LogisticsState, route: list[str], field: str = "route") -> RouteMetrics:
    """Validate a node path (known nodes, adjacent pairs) and measure it with live traffic."""
    if len(route) < 2:
        raise ToolError("a route needs at least two nodes", status=422, field=field)
    for index, node_id in enumerate(route):
        require_node(state, node_id, f"{field}[{index}]")
    try:
        return state.network().metrics(route)
    except KeyError as error:
        pair = str(error.args[0])
        raise ToolError(
            f"no road between {pair.replace('-', ' and ')}: consecutive route nodes must be "
            "joined by an edge (see get_network)",
            status=422,
            field=field,
        ) from None


def fuel_litres(state: LogisticsState, vehicle: Vehicle, route: list[str]) -> float:
    return state.network().metrics(route).fuel_litres(vehicle.fuel_l_per_100km)


def _edge_info(edge: Edge) -> EdgeInfo:
    return EdgeInfo(
        edge_id=edge.edge_id,
        from_node=edge.a,
        to_node=edge.b,
        name=edge.name,
        distance_km=edge.distance_km,
        free_flow_min=edge.base_time_min,
        toll=Money(amount=edge.toll_egp),
        road_type=edge.road_type,
    )


@domain.tool()
def get_network(state: LogisticsState) -> NetworkResult:
    """The road network: nodes (cities, rail terminals) and two-way road edges with
    distance, free-flow driving time, toll and road type."""
    return NetworkResult(
        nodes=state.nodes,
        edges=[_edge_info(e) for e in state.edges],
        total_nodes=len(state.nodes),
        total_edges=len(state.edges),
    )


def _option(
    state: LogisticsState, rank: int, metrics: RouteMetrics, stops: list[str]
) -> RouteOption:
    network = state.network()
    names = {n.node_id: n.name for n in state.nodes}
    legs: list[RouteLeg] = []
    start = 0
    for target in stops[1:]:
        end = metrics.path.index(target, start + 1)
        leg = network.metrics(metrics.path[start : end + 1])
        legs.append(
            RouteLeg(
                origin=metrics.path[start],
                destination=target,
                path=list(leg.path),
                distance_km=leg.distance_km,
                duration_min=leg.duration_min,
            )
        )
        start = end
    return RouteOption(
        rank=rank,
        path=list(metrics.path),
        path_names=[names[n] for n in metrics.path],
        edges=list(metrics.edges),
        legs=legs,
        distance_km=metrics.distance_km,
        duration_min=metrics.duration_min,
        toll=Money(amount=metrics.toll_egp),
        arrival_estimate=add_minutes(state.now, metrics.duration_min),
    )


@domain.tool(
    critical={
        "origin": CriticalArg.choice(NODE_IDS),
        "destination": CriticalArg.choice(NODE_IDS),
    }
)
def routing_api(
    state: LogisticsState,
    origin: NodeId,
    destination: NodeId,
    via: Annotated[
        list[str] | None,
        Field(max_length=3, description="Up to 3 intermediate stops, visited in this order"),
    ] = None,
    objective: Annotated[
        Literal["time", "distance"],
        Field(description="Rank routes by live driving time or by distance"),
    ] = "time",
    max_alternatives: Annotated[int, Field(ge=1, le=10, description="How many routes")] = 5,
) -> RoutingResult:
    """Plan routes from origin to destination (optionally via stops, in order) over open roads
    with live traffic. Returns up to max_alternatives routes ranked by the objective; fuel is
    not included (use fuel_calculator)."""
    if state.routing_status != "ok":
        raise ToolError(
            "routing service unavailable (scheduled maintenance); use cached_routes and "
            "traffic_api",
            status=503,
        )
    require_node(state, origin, "origin")
    require_node(state, destination, "destination")
    stops = [origin, *(via or []), destination]
    for index, stop in enumerate(via or []):
        require_node(state, stop, f"via[{index}]")
    for index, (here, there) in enumerate(pairwise(stops)):
        if here == there:
            field = "destination" if index == len(stops) - 2 else f"via[{index}]"
            raise ToolError(f"consecutive stops are both {here}", status=422, field=field)
    network: Network = state.network()
    ranked = network.best_tours(stops, objective, max_alternatives)
    return RoutingResult(
        origin=origin,
        destination=destination,
        via=list(via or []),
        objective=objective,
        computed_at=state.now,
        routes=[_option(state, i + 1, m, stops) for i, m in enumerate(ranked)],
        total=len(ranked),
    )


def _congestion(
    delay: float, base: float, closed: bool
) -> Literal["free", "moderate", "heavy", "closed"]:
    if closed:
        return "closed"
    if delay >= 0.3 * base:
        return "heavy"
    return "moderate" if delay > 0 else "free"


@domain.tool()
def traffic_api(
    state: LogisticsState,
    edge_ids: Annotated[
        list[str] | None, Field(description="Edge ids to report; omit for the whole network")
    ] = None,
    node: Annotated[str | None, Field(description="Only edges touching this node id")] = None,
) -> TrafficResult:
    """Live traffic per road segment: delay, current driving time, closures and incidents.
    With cached_routes this is enough to compose a route when routing_api is down."""
    known = {e.edge_id: e for e in state.edges}
    for index, edge_id in enumerate(edge_ids or []):
        if edge_id not in known:
            raise ToolError(f"unknown edge {edge_id!r}", status=404, field=f"edge_ids[{index}]")
    if node is not None:
        require_node(state, node, "node")
    chosen = [known[e] for e in edge_ids] if edge_ids else list(state.edges)
    if node is not None:
        chosen = [e for e in chosen if node in (e.a, e.b)]
    segments = []
    for edge in chosen:
        traffic = state.traffic_for(edge.edge_id)
        segments.append(
            Segment(
                edge_id=edge.edge_id,
                from_node=edge.a,
                to_node=edge.b,
                name=edge.name,
                road_type=edge.road_type,
                distance_km=edge.distance_km,
                free_flow_min=edge.base_time_min,
                delay_min=traffic.delay_min,
                current_time_min=edge.base_time_min + traffic.delay_min,
                congestion=_congestion(traffic.delay_min, edge.base_time_min, traffic.closed),
                closed=traffic.closed,
                incident=traffic.incident,
            )
        )
    return TrafficResult(observed_at=state.now, segments=segments, total=len(segments))


@domain.tool(
    critical={
        "origin": CriticalArg.choice(NODE_IDS),
        "destination": CriticalArg.choice(NODE_IDS),
    }
)
def cached_routes(state: LogisticsState, origin: NodeId, destination: NodeId) -> CachedRoutesResult:
    """Routes this fleet has driven before between two nodes (shortest first), with their
    typical free-flow duration. Historical: they ignore today's traffic and closures."""
    require_node(state, origin, "origin")
    require_node(state, destination, "destination")
    if origin == destination:
        raise ToolError("origin and destination are the same node", status=422, field="destination")
    network = state.network()
    paths = network.simple_paths(origin, destination, open_only=False)
    ranked = sorted(
        (network.metrics(p, with_traffic=False) for p in paths),
        key=lambda m: (m.distance_km, m.duration_min, m.path),
    )[:CACHED_ROUTES_PER_PAIR]
    today = date.fromisoformat(state.now[:10])
    routes = [
        CachedRoute(
            route_id=f"CR-{origin}-{destination}-{i + 1}",
            path=list(m.path),
            edges=list(m.edges),
            distance_km=m.distance_km,
            typical_duration_min=m.duration_min,
            last_used=(today - timedelta(days=3 * (i + 1))).isoformat(),
        )
        for i, m in enumerate(ranked)
    ]
    return CachedRoutesResult(
        origin=origin,
        destination=destination,
        note="Historical routes: check traffic_api for current delays and closures.",
        routes=routes,
        total=len(routes),
    )


@domain.tool(critical={"vehicle_id": CriticalArg.choice(VEHICLE_IDS)})
def fuel_calculator(
    state: LogisticsState,
    vehicle_id: Annotated[str, Field(description="Vehicle id, e.g. 'TRK-101'")],
    route: Annotated[list[str], Field(description="Full node path, e.g. ['CAI', 'GIZ', 'OCT']")],
) -> FuelEstimate:
    """Diesel use and cost of one vehicle driving a node path. Litres per edge = km x the
    vehicle's L/100 km / 100 x a road-type factor (rural 0.95, highway 1.0, desert 1.1,
    expressway 1.2, urban 1.3); the total is rounded to 0.01 L."""
    vehicle = require_vehicle(state, vehicle_id)
    metrics = measure_route(state, route)
    by_edge = []
    for edge_id in metrics.edges:
        edge = next(e for e in state.edges if e.edge_id == edge_id)
        by_edge.append(
            EdgeFuel(
                edge_id=edge_id,
                road_type=edge.road_type,
                distance_km=edge.distance_km,
                litres=round(
                    edge.distance_km
                    * vehicle.fuel_l_per_100km
                    / 100
                    * ROAD_FUEL_FACTOR[edge.road_type],
                    2,
                ),
            )
        )
    litres = metrics.fuel_litres(vehicle.fuel_l_per_100km)
    return FuelEstimate(
        vehicle_id=vehicle_id,
        route=list(route),
        distance_km=metrics.distance_km,
        litres=litres,
        price_per_litre=Money(amount=state.fuel_price_egp_per_l),
        cost=Money(amount=round(litres * state.fuel_price_egp_per_l, 2)),
        co2_kg=round(litres * CO2_KG_PER_LITRE_DIESEL, 1),
        by_edge=by_edge,
    )
