"""Prometheus metrics of one proxy: requests, faults by type, a latency histogram.

prometheus_client does the counting and the exposition (escaping, histogram buckets);
each proxy keeps its own registry, so two proxies in one process never share counters.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The text format every Prometheus scraper reads, with its version, as the spec asks."""


class Metrics:
    """Counters of one proxy, rendered on demand as Prometheus text.

    Label children are looked up once per label set and kept (prometheus_client checks
    and locks on every `labels()` call, which the per-request path does not need).
    """

    content_type = CONTENT_TYPE

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = Counter(
            "chaosproxy_requests",
            "Proxied requests by domain, transport, kind, status.",
            ("domain", "transport", "kind", "status"),
            registry=self.registry,
        )
        self._faults = Counter(
            "chaosproxy_faults",
            "Faults injected, by type and whether clients saw them.",
            ("domain", "fault", "delivered"),
            registry=self.registry,
        )
        self._latency = Histogram(
            "chaosproxy_request_duration_seconds",
            "Time from request to last byte sent.",
            buckets=BUCKETS_S,
            registry=self.registry,
        )
        self._request_children: dict[tuple[str, str, str, int], Any] = {}
        self._fault_children: dict[tuple[str, str, bool], Any] = {}

    def observe(
        self,
        *,
        domain: str,
        transport: str,
        kind: str,
        status: int,
        fault: str | None,
        delivered: bool,
        latency_s: float,
    ) -> None:
        """Count one logged request (the values of its `CallRecord` line)."""
        key = (domain, transport, kind, status)
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self._requests.labels(
                domain, transport, kind, str(status)
            )
        child.inc()
        if fault is not None:
            fault_key = (domain, fault, delivered)
            counter = self._fault_children.get(fault_key)
            if counter is None:
                counter = self._fault_children[fault_key] = self._faults.labels(
                    domain, fault, "true" if delivered else "false"
                )
            counter.inc()
        self._latency.observe(latency_s)

    def render(self) -> str:
        exposition: bytes = generate_latest(self.registry)
        return exposition.decode("utf-8")
