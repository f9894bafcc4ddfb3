"""Verifier building blocks: typed judgements of a final state against the initial one."""

from __future__ import annotations

from collections.abc import Callable

from chaosproxy.domains.logistics.network import RouteMetrics
from chaosproxy.domains.logistics.state import LogisticsAnswer, LogisticsState, Shipment

FUEL_EPSILON = 1e-6
MINUTE_TOLERANCE = 0.5


def new_shipments(s0: LogisticsState, sf: LogisticsState) -> list[Shipment]:
    known = {s.shipment_id for s in s0.shipments}
    return [s for s in sf.shipments if s.shipment_id not in known]


def old_shipments_unchanged(
    s0: LogisticsState, sf: LogisticsState, except_ids: frozenset[str] = frozenset()
) -> bool:
    after = {s.shipment_id: s for s in sf.shipments}
    return all(
        after.get(s.shipment_id) == s for s in s0.shipments if s.shipment_id not in except_ids
    )


def only_new_shipment(s0: LogisticsState, sf: LogisticsState) -> Shipment | None:
    """The single shipment the task should create, if exactly one was created and nothing
    else was recalled or altered."""
    created = new_shipments(s0, sf)
    if len(created) != 1 or not old_shipments_unchanged(s0, sf):
        return None
    return created[0] if created[0].status == "dispatched" else None


def no_stock_side_effects(s0: LogisticsState, sf: LogisticsState) -> bool:
    return (
        [w.stock for w in s0.warehouses] == [w.stock for w in sf.warehouses]
        and s0.transfers == sf.transfers
        and s0.rail_bookings == sf.rail_bookings
    )


def last_answer(sf: LogisticsState) -> LogisticsAnswer | None:
    return sf.answers[-1] if sf.answers else None


def fastest_open(state: LogisticsState, stops: list[str]) -> RouteMetrics:
    network = state.network()
    return network.ranked(network.tour_paths(stops), "time")[0]


def live_metrics(state: LogisticsState, route: list[str]) -> RouteMetrics | None:
    try:
        return state.network().metrics(route)
    except KeyError:
        return None


def uses_closed_edge(state: LogisticsState, route: list[str]) -> bool:
    metrics = live_metrics(state, route)
    network = state.network()
    return metrics is None or any(not network.is_open(e) for e in metrics.edges)


def is_fastest(state: LogisticsState, route: list[str], stops: list[str]) -> bool:
    """Open roads only, and no slower than the best open route through the same stops."""
    metrics = live_metrics(state, route)
    if metrics is None or uses_closed_edge(state, route):
        return False
    return metrics.duration_min <= fastest_open(state, stops).duration_min + 1e-9


def best_by(
    state: LogisticsState,
    stops: list[str],
    key: Callable[[RouteMetrics], float],
    *,
    max_duration: float | None = None,
) -> RouteMetrics:
    network = state.network()
    candidates = [network.metrics(p) for p in network.tour_paths(stops)]
    if max_duration is not None:
        candidates = [m for m in candidates if m.duration_min <= max_duration]
    return min(candidates, key=key)


def close(a: float | None, b: float, tolerance: float) -> bool:
    return a is not None and abs(a - b) <= tolerance
