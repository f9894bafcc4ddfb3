"""Prometheus metrics of one proxy: requests, faults by type, a latency histogram.

prometheus_client does the counting and the exposition (escaping, histogram buckets);
each proxy keeps its own registry, so two proxies in one process never share counters.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from chaosproxy.records import CallRecord

BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The text format every Prometheus scraper reads, with its version, as the spec asks."""


class Metrics:
    """Counters of one proxy, rendered on demand as Prometheus text."""

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

    def observe(self, record: CallRecord) -> None:
        self._requests.labels(
            record.domain, record.transport, record.kind, str(record.status)
        ).inc()
        if record.fault is not None:
            delivered = "true" if record.fault_delivered else "false"
            self._faults.labels(record.domain, record.fault.name, delivered).inc()
        self._latency.observe(record.latency_ms / 1000.0)

    def render(self) -> str:
        exposition: bytes = generate_latest(self.registry)
        return exposition.decode("utf-8")
