"""Prometheus metrics of one proxy: requests, faults by type, a latency histogram.

Counting is plain dict and list arithmetic on the event loop's thread (every request
passes here, and prometheus_client's metric objects take a lock per increment);
prometheus_client builds the families and the exposition (escaping, histogram buckets,
`_created`) only when someone scrapes. Each proxy keeps its own registry, so two proxies
in one process never share counters.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The text format every Prometheus scraper reads, with its version, as the spec asks."""


class Metrics(Collector):
    """Counters of one proxy, rendered on demand as Prometheus text."""

    content_type = CONTENT_TYPE

    def __init__(self) -> None:
        self.created = time.time()
        self._requests: dict[tuple[str, str, str, int], int] = {}
        self._faults: dict[tuple[str, str, bool], int] = {}
        self._buckets = [0] * (len(BUCKETS_S) + 1)
        """Observations per bucket (not cumulative); the last one is +Inf."""
        self._latency_sum = 0.0
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(self)

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
        self._requests[key] = self._requests.get(key, 0) + 1
        if fault is not None:
            fault_key = (domain, fault, delivered)
            self._faults[fault_key] = self._faults.get(fault_key, 0) + 1
        self._buckets[bisect_left(BUCKETS_S, latency_s)] += 1
        self._latency_sum += latency_s

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "chaosproxy_requests",
            "Proxied requests by domain, transport, kind, status.",
            labels=("domain", "transport", "kind", "status"),
        )
        for (domain, transport, kind, status), count in sorted(self._requests.items()):
            requests.add_metric((domain, transport, kind, str(status)), count, self.created)
        yield requests
        faults = CounterMetricFamily(
            "chaosproxy_faults",
            "Faults injected, by type and whether clients saw them.",
            labels=("domain", "fault", "delivered"),
        )
        for (domain, fault, delivered), count in sorted(self._faults.items()):
            seen = "true" if delivered else "false"
            faults.add_metric((domain, fault, seen), count, self.created)
        yield faults
        cumulative, buckets = 0, []
        for bound, count in zip((*BUCKETS_S, float("inf")), self._buckets, strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        latency = HistogramMetricFamily(
            "chaosproxy_request_duration_seconds", "Time from request to last byte sent."
        )
        latency.add_metric((), buckets, self._latency_sum)
        yield latency

    def render(self) -> str:
        exposition: bytes = generate_latest(self.registry)
        return exposition.decode("utf-8")
