"""Pure road-network arithmetic shared by the tools and the verifiers.

Keeping path enumeration, timing and fuel in one place means a verifier judges a plan
with exactly the numbers the agent could have obtained from the tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise, product
from typing import Literal, Protocol

RoadType = Literal["expressway", "highway", "rural", "desert", "urban"]

# Fleet telematics: steady 60–80 km/h on rural roads is the most frugal; expressway speeds,
# desert grades and stop-and-go city traffic all burn more per kilometre.
ROAD_FUEL_FACTOR: dict[str, float] = {
    "rural": 0.95,
    "highway": 1.0,
    "desert": 1.1,
    "expressway": 1.2,
    "urban": 1.3,
}
MAX_HOPS = 7


class EdgeLike(Protocol):
    edge_id: str
    a: str
    b: str
    distance_km: float
    base_time_min: float
    toll_egp: float
    road_type: RoadType


@dataclass(frozen=True)
class Conditions:
    """Current traffic on one edge."""

    delay_min: float = 0.0
    closed: bool = False


@dataclass(frozen=True)
class RouteMetrics:
    path: tuple[str, ...]
    edges: tuple[str, ...]
    distance_km: float
    duration_min: float
    toll_egp: float
    fuel_km_equivalent: float

    def fuel_litres(self, l_per_100km: float) -> float:
        return round(self.fuel_km_equivalent * l_per_100km / 100.0, 2)


class Network:
    """An undirected road graph with the current traffic conditions applied."""

    def __init__(self, edges: Iterable[EdgeLike], conditions: dict[str, Conditions]) -> None:
        self.edges = {edge.edge_id: edge for edge in edges}
        self.conditions = conditions
        self.adjacent: dict[str, dict[str, str]] = {}
        for edge in self.edges.values():
            self.adjacent.setdefault(edge.a, {})[edge.b] = edge.edge_id
            self.adjacent.setdefault(edge.b, {})[edge.a] = edge.edge_id

    def edge_between(self, a: str, b: str) -> str | None:
        return self.adjacent.get(a, {}).get(b)

    def is_open(self, edge_id: str) -> bool:
        return not self.conditions.get(edge_id, Conditions()).closed

    def edge_time(self, edge_id: str, *, with_traffic: bool = True) -> float:
        base = self.edges[edge_id].base_time_min
        return base + (self.conditions.get(edge_id, Conditions()).delay_min if with_traffic else 0)

    def simple_paths(
        self, origin: str, destination: str, *, open_only: bool = True
    ) -> list[tuple[str, ...]]:
        """Every loop-free path of at most MAX_HOPS edges, in a stable order."""
        found: list[tuple[str, ...]] = []

        def walk(path: list[str]) -> None:
            here = path[-1]
            if here == destination:
                found.append(tuple(path))
                return
            if len(path) > MAX_HOPS:
                return
            for nxt, edge_id in sorted(self.adjacent.get(here, {}).items()):
                if nxt in path or (open_only and not self.is_open(edge_id)):
                    continue
                walk([*path, nxt])

        if origin == destination:
            return [(origin,)]
        walk([origin])
        return found

    def metrics(self, path: Sequence[str], *, with_traffic: bool = True) -> RouteMetrics:
        """Totals for a node path; raises KeyError naming the first non-adjacent pair."""
        edges: list[str] = []
        for a, b in pairwise(path):
            edge_id = self.edge_between(a, b)
            if edge_id is None:
                raise KeyError(f"{a}-{b}")
            edges.append(edge_id)
        records = [self.edges[e] for e in edges]
        return RouteMetrics(
            path=tuple(path),
            edges=tuple(edges),
            distance_km=round(sum(r.distance_km for r in records), 1),
            duration_min=round(sum(self.edge_time(e, with_traffic=with_traffic) for e in edges), 1),
            toll_egp=round(sum(r.toll_egp for r in records), 2),
            fuel_km_equivalent=sum(r.distance_km * ROAD_FUEL_FACTOR[r.road_type] for r in records),
        )

    def tour_paths(self, stops: Sequence[str], *, open_only: bool = True) -> list[tuple[str, ...]]:
        """Every route visiting `stops` in order, built from loop-free legs."""
        legs = [self.simple_paths(a, b, open_only=open_only) for a, b in pairwise(stops)]
        tours: list[tuple[str, ...]] = []
        for combo in product(*legs):
            path: list[str] = [stops[0]]
            for leg in combo:
                path.extend(leg[1:])
            tours.append(tuple(path))
        return tours

    def best_tours(
        self, stops: Sequence[str], objective: Literal["time", "distance"], limit: int
    ) -> list[RouteMetrics]:
        """The `limit` best tours; exact because the objectives add up leg by leg."""
        legs = [
            [m.path for m in self.ranked(self.simple_paths(a, b), objective)[:limit]]
            for a, b in pairwise(stops)
        ]
        tours = []
        for combo in product(*legs):
            path: list[str] = [stops[0]]
            for leg in combo:
                path.extend(leg[1:])
            tours.append(tuple(path))
        return self.ranked(tours, objective)[:limit]

    def ranked(
        self, paths: Iterable[tuple[str, ...]], objective: Literal["time", "distance"]
    ) -> list[RouteMetrics]:
        measured = [self.metrics(p) for p in paths]
        if objective == "time":
            return sorted(measured, key=lambda m: (m.duration_min, m.distance_km, m.path))
        return sorted(measured, key=lambda m: (m.distance_km, m.duration_min, m.path))


def visits_in_order(path: Sequence[str], stops: Sequence[str]) -> bool:
    """True when `stops` occur in `path` in this order (route may pass other nodes)."""
    position = 0
    for node in path:
        if position < len(stops) and node == stops[position]:
            position += 1
    return position == len(stops)
