"""Routing, episodes, the control API and the limits: every refusal is a clear 4xx/5xx."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from proxy_helpers import ProxyFactory, control, forced, logged, read_log
from proxy_toy import ToyState

from chaosproxy.proxy.settings import ProxyLimits


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "words"),
    [
        ("GET", "/nowhere/tools", {}, 404, "no service named 'nowhere'"),
        ("GET", "/toy/_oracle/hints", {}, 404, "oracle endpoints"),
        ("GET", "/e/ep1/toy/_oracle/hints", {}, 404, "oracle endpoints"),
        ("GET", "/toy/a/%2e%2e/_oracle/hints", {}, 400, "'..'"),
        ("GET", "/toy/openapi.json", {"X-Chaos-Episode": "bad id!"}, 400, "X-Chaos-Episode"),
        ("GET", "/e/", {}, 404, "/e/{episode}/{domain}"),
        ("GET", "/_chaos/nothing", {}, 404, "not found"),
    ],
)
async def test_refusals(
    make_proxy: ProxyFactory,
    method: str,
    path: str,
    headers: dict[str, str],
    status: int,
    words: str,
) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        response = await client.request(method, proxy.url + path, headers=headers)
    assert response.status_code == status
    assert words in response.json()["error"]["message"]


async def test_episode_and_step_reach_the_service(make_proxy: ProxyFactory, toy: Any) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        await client.post(f"{proxy.url}/toy/tools/get_item", json={"item_id": "A1"})
        await client.post(
            f"{proxy.url}/toy/tools/get_item",
            json={"item_id": "A1"},
            headers={"X-Chaos-Episode": "h1"},
        )
        await client.post(f"{proxy.url}/e/u1/toy/tools/get_item", json={"item_id": "A1"})
        await client.post(f"{proxy.url}/toy/tools/add_note", json={"text": "x"})
    seen = [(c["episode"], c["step"]) for c in toy[1].calls]
    assert seen == [("default", "1"), ("h1", "1"), ("u1", "1"), ("default", "2")]


async def test_control_api_profile_episode_metrics(make_proxy: ProxyFactory, toy: Any) -> None:
    async with make_proxy() as proxy:
        chaos, auth = control(proxy)
        client = httpx.AsyncClient(headers=auth)
        assert (await client.get(f"{chaos}/health")).json()["profile"] == "lambda0.0"
        bad = await client.put(f"{chaos}/profile", json={"profile": "lambda7"})
        assert bad.status_code == 400 and "lambda7" in bad.json()["error"]["message"]
        bad = await client.put(
            f"{chaos}/profile", json={"profile": {"name": "x", "failure_rate": 2}}
        )
        assert bad.status_code == 400 and "failure_rate" in bad.json()["error"]["message"]
        bad = await client.put(f"{chaos}/episodes/e1", json={"seed": "many"})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "seed"
        inline = forced("SoftRateLimit").model_dump(mode="json")
        swapped = await client.put(f"{chaos}/profile", json={"profile": inline})
        assert swapped.status_code == 200
        assert (await client.get(f"{chaos}/profile")).json()["profile"][
            "name"
        ] == "force-SoftRateLimit"
        assert (
            await client.post(f"{proxy.url}/e/e1/toy/tools/get_item", json={"item_id": "A1"})
        ).status_code == 429
        unnamed = {"failure_rate": 0.5, "weights": {"ServerError": 1}}
        default = await client.put(f"{chaos}/profile", json={"profile": unnamed})
        assert default.status_code == 200, default.text
        assert default.json()["profile"]["name"] == "inline"
        episode = await client.put(f"{chaos}/episodes/e3", json={"profile": unnamed})
        assert episode.status_code == 200 and episode.json()["profile"] == "inline"
        assert (await client.put(f"{chaos}/profile", json={"profile": inline})).status_code == 200
        configured = await client.put(
            f"{chaos}/episodes/e2", json={"profile": "lambda0.0", "seed": 9, "key": "task~0~x~1"}
        )
        assert configured.status_code == 200
        for _ in range(2):
            ok = await client.post(f"{proxy.url}/e/e2/toy/tools/get_item", json={"item_id": "A1"})
            assert ok.status_code == 200
        e1 = (await client.get(f"{chaos}/episodes/e1")).json()
        e2 = (await client.get(f"{chaos}/episodes/e2")).json()
        scraped = await client.get(f"{chaos}/metrics")
        metrics = scraped.text
        await client.aclose()
    assert scraped.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert e1["steps"] == 1 and e1["faults"] == [
        {"step": 1, "fault": "SoftRateLimit", "delivered": True}
    ]
    assert e2["steps"] == 2 and e2["faults"] == [] and e2["engine"]["episode_key"] == "task~0~x~1"
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics)
        for s in family.samples
    }
    fault = {"domain": "toy", "fault": "SoftRateLimit", "delivered": "true"}
    assert samples[("chaosproxy_faults_total", tuple(sorted(fault.items())))] == 1
    ok = {"domain": "toy", "transport": "rest", "kind": "tool_call", "status": "200"}
    assert samples[("chaosproxy_requests_total", tuple(sorted(ok.items())))] == 2
    assert samples[("chaosproxy_request_duration_seconds_count", ())] == 3


CONTROL_SPELLINGS = [
    "/_chaos/health",
    "/_chaos/profile",
    "/%5Fchaos/health",
    "/%5fchaos/health",
    "/%255Fchaos/health",
    "//_chaos/health",
    "/_CHAOS/health",
    "/_Chaos/profile",
    "/e/ep1/_chaos/health",
    "/e/ep1/%5Fchaos/profile",
    "/toy/_chaos/health",
    "/toy/../_chaos/health",
    "/%2F_chaos/health",
    "/_chaos%2Fhealth",
    "/_chaos",
]


@pytest.mark.parametrize("path", CONTROL_SPELLINGS)
async def test_control_api_is_not_on_the_agent_port(make_proxy: ProxyFactory, path: str) -> None:
    """However the agent spells it, /_chaos/ on the proxy port is a 404 that reveals nothing."""
    async with make_proxy() as proxy:
        _, auth = control(proxy)
        async with httpx.AsyncClient(headers=auth) as client:
            for method in ("GET", "PUT"):
                response = await client.request(
                    method, proxy.url + path, json={"profile": "lambda0.0"}
                )
                assert response.status_code == 404, (method, path, response.text)
                assert "profile" not in response.text and "lambda" not in response.text
    assert proxy.control_port != proxy.port


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
async def test_token_required_on_every_interface(make_proxy: ProxyFactory, host: str) -> None:
    async with make_proxy(host=host) as proxy, httpx.AsyncClient() as client:
        chaos, auth = control(proxy)
        assert proxy.token and proxy.control_url.startswith("http://127.0.0.1:")
        denied = await client.get(f"{chaos}/health")
        wrong = await client.get(f"{chaos}/health", headers={"Authorization": "Bearer nope"})
        put = await client.put(f"{chaos}/profile", json={"profile": "lambda0.3"})
        allowed = await client.get(f"{chaos}/health", headers=auth)
        tool = await client.post(f"{proxy.url}/toy/tools/get_item", json={"item_id": "A1"})
    assert denied.status_code == wrong.status_code == put.status_code == 401
    assert allowed.status_code == 200 and tool.status_code == 200
    assert allowed.json()["profile"] == "lambda0.0"


@pytest.mark.parametrize(
    "profile",
    ["/etc/passwd", "../../profiles/lambda0.2.yaml", "profiles/lambda0.2.yaml", "lambda0.2.yaml"],
)
async def test_profile_change_never_reads_a_server_path(
    make_proxy: ProxyFactory, tmp_path: Path, profile: str
) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("name: leaked\npassword: hunter2\n")
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        chaos, auth = control(proxy)
        for value in (profile, str(secret)):
            response = await client.put(f"{chaos}/profile", json={"profile": value}, headers=auth)
            assert response.status_code == 400
            assert "no shipped profile" in response.json()["error"]["message"]
            assert "hunter2" not in response.text and "root:" not in response.text
            episode = await client.put(
                f"{chaos}/episodes/e1", json={"profile": value}, headers=auth
            )
            assert episode.status_code == 400
        health = (await client.get(f"{chaos}/health", headers=auth)).json()
    assert health["profile"] == "lambda0.0"


async def test_episode_plan_length_times_the_incident(make_proxy: ProxyFactory, toy: Any) -> None:
    """PUT /_chaos/episodes/{id} with the task's plan length (l_min): fit-v2's incident falls
    within it (with one planned call, every timing bucket is step 1)."""
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        chaos, auth = control(proxy)
        bad = await client.put(
            f"{chaos}/episodes/p1", json={"profile": "fit-v2", "plan_length": 0}, headers=auth
        )
        put = await client.put(
            f"{chaos}/episodes/p1", json={"profile": "fit-v2", "plan_length": 1}, headers=auth
        )
        await client.post(f"{proxy.url}/e/p1/toy/tools/get_item", json={"item_id": "A1"})
        engine = (await client.get(f"{chaos}/episodes/p1", headers=auth)).json()["engine"]
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "plan_length"
    assert put.status_code == 200 and put.json()["plan_length"] == 1
    [incident] = engine["incidents"]
    assert incident["start_step"] == 1 and incident["calls_touched"] == 1
    assert incident["params"]["plan_length"] == 1
    assert incident["params"]["timing_basis"] == "plan"
    assert incident["params"]["timing_steps"] == [1, 1]
    assert [(f["step"], f["incident"]) for f in engine["faults"]] == [(1, incident["id"])]


async def test_delete_episode_forgets_it_everywhere(make_proxy: ProxyFactory, toy: Any) -> None:
    """DELETE /_chaos/episodes/{id}: steps start again at 1, the engine and oracles forget it."""
    async with (
        make_proxy(forced("SoftRateLimit"), oracles={"toy": toy[0]}) as proxy,
        httpx.AsyncClient() as client,
    ):
        chaos, auth = control(proxy)
        for _ in range(2):
            await client.post(f"{proxy.url}/e/gone/toy/tools/get_item", json={"item_id": "A1"})
        before = (await client.get(f"{chaos}/episodes/gone", headers=auth)).json()
        deleted = await client.delete(f"{chaos}/episodes/gone", headers=auth)
        after = (await client.get(f"{chaos}/episodes/gone", headers=auth)).json()
        await client.post(f"{proxy.url}/e/gone/toy/tools/get_item", json={"item_id": "A1"})
        again = (await client.get(f"{chaos}/episodes/gone", headers=auth)).json()
        bad = await client.delete(f"{chaos}/episodes/bad%20id", headers=auth)
    assert before["steps"] == 2 and before["engine"]["known"] is True
    assert deleted.status_code == 200 and deleted.json()["services"] == {"toy": 200}
    assert toy[1].deleted == ["gone"]
    assert after["steps"] == 0 and after["engine"]["known"] is False and after["faults"] == []
    assert again["steps"] == 1 and again["engine"]["calls"] == 1
    assert bad.status_code == 400


async def test_control_port_defaults_to_the_next_port(make_proxy: ProxyFactory) -> None:
    from chaosproxy.profiles import load_profile

    from chaosproxy.faults import FaultEngine
    from chaosproxy.proxy.server import ProxyServer

    engine = FaultEngine(default_profile=load_profile("lambda0.0"))
    for _ in range(5):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proxy = ProxyServer(engine=engine, upstreams={}, run_seed=0, port=port)
        try:
            await proxy.start()
        except OSError:
            continue
        try:
            if proxy.control_port == port + 1:
                return
            # port + 1 was taken by someone else: then any free port is used
            assert proxy.control_port not in (None, port)
            return
        finally:
            await proxy.stop()
    pytest.fail("no free port to test with")


async def test_body_cap(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    async with (
        make_proxy(limits=ProxyLimits(max_body_bytes=1000)) as proxy,
        httpx.AsyncClient() as client,
    ):
        big = await client.post(f"{proxy.url}/toy/tools/add_note", json={"text": "x" * 2000})
        small = await client.post(f"{proxy.url}/toy/tools/add_note", json={"text": "x"})
    assert big.status_code == 413 and "1000" in big.json()["error"]["message"]
    assert small.status_code == 200


async def test_slow_header_sender_is_cut_off(make_proxy: ProxyFactory) -> None:
    async with make_proxy(limits=ProxyLimits(idle_timeout_s=0.5)) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        started = time.monotonic()
        pieces = [b"GET /toy/openapi.json HTTP/1.1\r\n", b"Host: x\r\n"] + [b"X-A: 1\r\n"] * 8
        try:
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0.3)
            closed = await asyncio.wait_for(reader.read(), 3) == b""
        except ConnectionError:
            closed = True
        writer.close()
    assert closed and time.monotonic() - started < 3


async def test_pool_exhaustion_is_a_503_not_a_queue(
    make_proxy: ProxyFactory, toy: tuple[str, ToyState]
) -> None:
    limits = ProxyLimits(upstream_pool_size=1, pool_wait_s=0.2)
    async with make_proxy(limits=limits) as proxy, httpx.AsyncClient() as client:
        slow = asyncio.create_task(client.get(f"{proxy.url}/toy/slow?s=1"))
        await asyncio.wait_for(toy[1].slow_arrived.wait(), 5)  # the one slot is held
        started = time.monotonic()
        refused = await client.get(f"{proxy.url}/toy/slow?s=0")
        waited = time.monotonic() - started
        assert (await slow).status_code == 200
    assert (
        refused.status_code == 503 and refused.json()["error"]["type"] == "upstream_pool_exhausted"
    )
    assert waited < 0.9


async def test_upstream_down_is_a_502(tmp_path: Path) -> None:
    from chaosproxy.profiles import load_profile

    from chaosproxy.faults import FaultEngine
    from chaosproxy.proxy.server import ProxyServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    engine = FaultEngine(default_profile=load_profile("lambda0.0"))
    proxy = ProxyServer(
        engine=engine, upstreams={"gone": f"http://127.0.0.1:{dead}"}, run_seed=0, run_dir=tmp_path
    )
    await proxy.start()
    try:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{proxy.url}/gone/tools/x", json={})
    finally:
        await proxy.stop()
    assert (
        response.status_code == 502 and response.json()["error"]["type"] == "upstream_unreachable"
    )
    (record,) = read_log(tmp_path)
    assert record.step == 1 and not record.upstream_called and record.error


async def test_client_hanging_up_during_a_delay(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    profile = forced("HighLatency", min_s=0.5, max_s=0.5)
    async with make_proxy(profile) as proxy:
        done = logged(proxy, lambda fields: fields["kind"] == "tool_call")
        async with httpx.AsyncClient(timeout=0.1) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.post(f"{proxy.url}/toy/tools/get_item", json={"item_id": "A1"})
        await asyncio.wait_for(done.wait(), 5)
    (record,) = read_log(tmp_path)
    assert record.fault is not None and record.fault_delivered is False
    assert record.status == 499 and record.upstream_called is False


async def test_batch_with_tool_calls_is_refused(make_proxy: ProxyFactory) -> None:
    batch = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_item", "arguments": {}},
        },
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        response = await client.post(f"{proxy.url}/toy/mcp", json=batch)
    assert response.status_code == 400 and "batch" in response.json()["error"]["message"]


async def test_service_errors_are_counted_apart_from_injected_faults(
    make_proxy: ProxyFactory,
) -> None:
    """An upstream 5xx the proxy did not inject is the service's own failure (infrastructure)."""
    async with make_proxy("lambda0.0") as proxy, httpx.AsyncClient() as client:
        crashed = await client.post(f"{proxy.url}/e/ep-bad/toy/tools/crash", json={})
        fine = await client.post(f"{proxy.url}/e/ep-ok/toy/tools/get_item", json={"item_id": "7"})
        chaos, auth = control(proxy)
        bad = (await client.get(f"{chaos}/episodes/ep-bad", headers=auth)).json()
        good = (await client.get(f"{chaos}/episodes/ep-ok", headers=auth)).json()
    assert crashed.status_code == 500 and fine.status_code == 200
    assert bad["service_errors"] == 1
    assert good["service_errors"] == 0
