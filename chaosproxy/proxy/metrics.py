"""Prometheus text metrics: requests, faults by type, latency histogram."""

from __future__ import annotations

from collections import Counter

from chaosproxy.records import CallRecord

BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _labels(**values: str) -> str:
    inner = ",".join(
        f'{key}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for key, value in values.items()
    )
    return "{" + inner + "}"


class Metrics:
    """Counters kept in memory and rendered on demand (no client library needed)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, str, str]] = Counter()
        self.faults: Counter[tuple[str, str, str]] = Counter()
        self.bucket_counts = [0] * len(BUCKETS_S)
        self.latency_sum = 0.0
        self.latency_count = 0

    def observe(self, record: CallRecord) -> None:
        self.requests[(record.domain, record.transport, record.kind, str(record.status))] += 1
        if record.fault is not None:
            delivered = "true" if record.fault_delivered else "false"
            self.faults[(record.domain, record.fault.name, delivered)] += 1
        seconds = record.latency_ms / 1000.0
        self.latency_sum += seconds
        self.latency_count += 1
        for index, bound in enumerate(BUCKETS_S):
            if seconds <= bound:
                self.bucket_counts[index] += 1

    def render(self) -> str:
        lines = [
            "# HELP chaosproxy_requests_total Proxied requests by domain, transport, kind, status.",
            "# TYPE chaosproxy_requests_total counter",
        ]
        for (domain, transport, kind, status), count in sorted(self.requests.items()):
            labels = _labels(domain=domain, transport=transport, kind=kind, status=status)
            lines.append(f"chaosproxy_requests_total{labels} {count}")
        lines += [
            "# HELP chaosproxy_faults_total Faults injected, by type and whether clients saw them.",
            "# TYPE chaosproxy_faults_total counter",
        ]
        for (domain, name, delivered), count in sorted(self.faults.items()):
            labels = _labels(domain=domain, fault=name, delivered=delivered)
            lines.append(f"chaosproxy_faults_total{labels} {count}")
        lines += [
            "# HELP chaosproxy_request_duration_seconds Time from request to last byte sent.",
            "# TYPE chaosproxy_request_duration_seconds histogram",
        ]
        for bound, count in zip(BUCKETS_S, self.bucket_counts, strict=True):
            lines.append(f'chaosproxy_request_duration_seconds_bucket{{le="{bound}"}} {count}')
        lines.append(
            f'chaosproxy_request_duration_seconds_bucket{{le="+Inf"}} {self.latency_count}'
        )
        lines.append(f"chaosproxy_request_duration_seconds_sum {self.latency_sum:.6f}")
        lines.append(f"chaosproxy_request_duration_seconds_count {self.latency_count}")
        return "\n".join(lines) + "\n"
