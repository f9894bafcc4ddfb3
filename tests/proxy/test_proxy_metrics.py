"""The proxy's Prometheus counters, against values worked out by hand."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from chaosproxy.proxy.metrics import Metrics


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(metrics.render()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_counts_and_histogram_buckets() -> None:
    metrics = Metrics()
    calls = [
        ("shop", "rest", "tool_call", 200, None, False, 0.001),  # on a bound: le="0.001"
        ("shop", "rest", "tool_call", 200, "Timeout", True, 0.3),
        ("shop", "mcp", "tool_call", 503, "Timeout", True, 0.0011),
        ("llm", "rest", "model_call", 429, "RateLimit", False, 45.0),  # beyond 30 s: +Inf only
    ]
    for domain, transport, kind, status, fault, delivered, latency in calls:
        metrics.observe(
            domain=domain,
            transport=transport,
            kind=kind,
            status=status,
            fault=fault,
            delivered=delivered,
            latency_s=latency,
        )
    got = _samples(metrics)
    requests = "chaosproxy_requests_total"
    ok = (("domain", "shop"), ("kind", "tool_call"), ("status", "200"), ("transport", "rest"))
    assert got[(requests, ok)] == 2
    limited = (("domain", "llm"), ("kind", "model_call"), ("status", "429"), ("transport", "rest"))
    assert got[(requests, limited)] == 1
    faults = "chaosproxy_faults_total"
    assert got[(faults, (("delivered", "true"), ("domain", "shop"), ("fault", "Timeout")))] == 2
    assert got[(faults, (("delivered", "false"), ("domain", "llm"), ("fault", "RateLimit")))] == 1
    bucket = "chaosproxy_request_duration_seconds_bucket"
    expected = {"0.001": 1, "0.0025": 2, "0.25": 2, "0.5": 3, "30.0": 3, "+Inf": 4}
    for le, count in expected.items():
        assert got[(bucket, (("le", le),))] == count, le
    assert got[("chaosproxy_request_duration_seconds_count", ())] == 4
    assert abs(got[("chaosproxy_request_duration_seconds_sum", ())] - 45.3021) < 1e-9


def test_two_proxies_do_not_share_counters() -> None:
    first, second = Metrics(), Metrics()
    first.observe(
        domain="a",
        transport="rest",
        kind="tool_call",
        status=200,
        fault=None,
        delivered=False,
        latency_s=0.01,
    )
    assert "chaosproxy_requests_total{" in first.render()
    assert "chaosproxy_requests_total{" not in second.render()
