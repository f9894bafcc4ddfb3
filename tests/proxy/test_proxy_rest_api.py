"""Any REST API behind `--upstream`: every route is a tool call with faults and a log line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from chaosproxy.profiles import load_profile
from proxy_helpers import read_log
from proxy_shop import OPENAPI, ShopState, serve_shop

from chaosproxy.faults import FaultEngine, Profile
from chaosproxy.proxy.apimap import OpenApiError
from chaosproxy.proxy.server import ProxyServer


def forced(fault: str, **extra: Any) -> Profile:
    params = extra.pop("params", {})
    return Profile.model_validate(
        {
            "name": f"force-{fault}",
            "failure_rate": 1.0,
            "weights": {fault: 1.0},
            "params": {fault: params} if params else {},
            **extra,
        }
    )


@asynccontextmanager
async def shop_proxy(
    run_dir: Path,
    profile: Profile | None = None,
    *,
    openapi: bool = False,
    document: str | None = None,
) -> AsyncIterator[tuple[str, ShopState, ProxyServer]]:
    async with serve_shop(openapi=openapi) as (url, state):
        engine = FaultEngine(default_profile=profile or load_profile("lambda0.0"), seed=3)
        proxy = ProxyServer(
            engine=engine,
            upstreams={"shop": url},
            run_seed=3,
            run_dir=run_dir,
            openapi={"shop": document} if document is not None else None,
        )
        await proxy.start()
        try:
            yield f"{proxy.url}/e/ep/shop", state, proxy
        finally:
            await proxy.stop()


async def _browse(base: str) -> list[httpx.Response]:
    async with httpx.AsyncClient() as client:
        return [
            await client.get(f"{base}/api/customers/7/orders", params={"status": "open"}),
            await client.get(f"{base}/api/orders/102"),
            await client.delete(f"{base}/api/orders/103"),
            await client.post(f"{base}/api/orders", json={"customer_id": "8", "item": "rug"}),
            await client.get(f"{base}/api/report.csv"),
            await client.get(f"{base}/openapi.json"),
        ]


async def test_routes_without_a_description_get_collapsed_ids(tmp_path: Path) -> None:
    async with shop_proxy(tmp_path) as (base, state, _):
        replies = await _browse(base)
    assert [r.status_code for r in replies] == [200, 200, 200, 201, 200, 404]
    assert replies[0].json()["count"] == 1 and replies[4].text.startswith("order_id")
    log = read_log(tmp_path)
    assert [(r.kind, r.tool, r.step) for r in log] == [
        ("tool_call", "GET /api/customers/{id}/orders", 1),
        ("tool_call", "GET /api/orders/{id}", 2),
        ("tool_call", "DELETE /api/orders/{id}", 3),
        ("tool_call", "POST /api/orders", 4),
        ("tool_call", "GET /api/report.csv", 5),
        ("protocol", None, None),
    ]
    assert log[0].arguments == {"id": "7", "status": "open"}
    assert log[0].route == "GET /api/customers/{id}/orders"
    assert log[3].arguments == {"customer_id": "8", "item": "rug"}
    assert [s["path"] for s in state.seen][:3] == [
        "/api/customers/7/orders",
        "/api/orders/102",
        "/api/orders/103",
    ]


async def test_openapi_operation_ids_name_the_tools(tmp_path: Path) -> None:
    async with shop_proxy(tmp_path, openapi=True) as (base, _, proxy):
        replies = await _browse(base)
    assert replies[5].json()["servers"] == [{"url": "/e/ep/shop"}]
    tools = [(r.kind, r.tool) for r in read_log(tmp_path)]
    assert tools == [
        ("tool_call", "listCustomerOrders"),
        ("tool_call", "getOrder"),
        ("tool_call", "deleteOrder"),
        ("tool_call", "createOrder"),
        ("tool_call", "GET /api/report.csv"),
        ("protocol", None),
    ]
    critical = proxy.core.engine._domain_hints("shop", proxy.core.engine.profile)["critical_args"]
    assert critical["listCustomerOrders"]["status"]["values"] == ["open", "shipped", "cancelled"]
    assert critical["createOrder"] == {
        "customer_id": {"kind": "id_bump"},
        "deliver_on": {"kind": "date_shift"},
    }


async def test_a_yaml_openapi_file_names_the_tools(tmp_path: Path) -> None:
    """`--openapi shop=shop.yaml`: YAML is read like JSON (the shop serves no document)."""
    document = tmp_path / "shop-openapi.yaml"
    document.write_text(yaml.safe_dump(OPENAPI, sort_keys=False), encoding="utf-8")
    run_dir = tmp_path / "run"
    async with shop_proxy(run_dir, document=str(document)) as (base, _, proxy):
        await _browse(base)
    assert [r.tool for r in read_log(run_dir)][:4] == [
        "listCustomerOrders",
        "getOrder",
        "deleteOrder",
        "createOrder",
    ]
    critical = proxy.core.engine._domain_hints("shop", proxy.core.engine.profile)["critical_args"]
    assert critical["createOrder"]["deliver_on"] == {"kind": "date_shift"}


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("missing.yaml", None, "no such file"),
        ("broken.yaml", "openapi: 3.1.0\npaths: {/a: [\n", "neither JSON nor YAML (line"),
        ("swagger.yaml", "swagger: '2.0'\npaths: {}\n", "not an OpenAPI 3.x document"),
        ("list.json", "[1, 2]", "a list, not a mapping"),
        ("nopaths.json", '{"openapi": "3.0.3"}', "without a 'paths' mapping"),
    ],
)
async def test_an_unusable_openapi_file_stops_the_start(
    tmp_path: Path, name: str, content: str | None, reason: str
) -> None:
    document = tmp_path / name
    if content is not None:
        document.write_text(content, encoding="utf-8")
    with pytest.raises(OpenApiError) as caught:
        async with shop_proxy(tmp_path / "run", document=str(document)):
            pass
    message = str(caught.value)
    assert "upstream 'shop'" in message and str(document) in message and reason in message


async def test_an_openapi_url_is_fetched_and_a_404_stops_the_start(tmp_path: Path) -> None:
    async with serve_shop(openapi=True) as (url, _):
        async with shop_proxy(tmp_path / "a", document=f"{url}/openapi.json") as (base, _, _p):
            await _browse(base)
        assert read_log(tmp_path / "a")[1].tool == "getOrder"
        with pytest.raises(OpenApiError, match=r"upstream 'shop' \(http://.*/nosuch.yaml\): .*404"):
            async with shop_proxy(tmp_path / "b", document=f"{url}/nosuch.yaml"):
                pass


async def test_a_probed_openapi_json_that_is_not_a_document_is_skipped(tmp_path: Path) -> None:
    """No --openapi: the shop's /openapi.json is 404 and the start goes on without it."""
    async with shop_proxy(tmp_path) as (base, _, proxy):
        await _browse(base)
    assert proxy.apis == {}
    assert read_log(tmp_path)[1].tool == "GET /api/orders/{id}"


async def test_profile_routes_name_the_tools(tmp_path: Path) -> None:
    profile = Profile.model_validate(
        {
            "name": "routes",
            "routes": {
                "shop": {
                    "GET /api/orders/{order_id}": "get_order",
                    "GET /api/customers/{customer}/orders": "orders_of",
                }
            },
        }
    )
    async with shop_proxy(tmp_path, profile) as (base, _, _proxy):
        await _browse(base)
    log = read_log(tmp_path)
    assert [r.tool for r in log][:3] == ["orders_of", "get_order", "DELETE /api/orders/{id}"]
    assert log[1].arguments == {"order_id": "102"}


async def test_before_call_faults_hit_every_method(tmp_path: Path) -> None:
    async with shop_proxy(tmp_path, forced("ServerError")) as (base, state, _):
        replies = await _browse(base)
    assert [r.status_code >= 500 for r in replies] == [True] * 5 + [False]
    assert state.seen == []
    assert all(
        r.fault is not None and r.fault.name == "ServerError" for r in read_log(tmp_path)[:5]
    )


async def test_body_faults_act_on_json_and_leave_other_bodies_alone(tmp_path: Path) -> None:
    async with shop_proxy(tmp_path, forced("EmptyResponse")) as (base, _, _proxy):
        replies = await _browse(base)
    assert replies[0].json() == {"orders": [], "count": 0}
    assert replies[4].text == "order_id,item\n101,lamp\n"
    log = read_log(tmp_path)
    assert log[0].fault_delivered is True and log[0].note is None
    assert log[4].fault_delivered is False
    assert log[4].note is not None and "not JSON (text/csv)" in log[4].note


async def test_parameter_corruption_rewrites_path_query_and_body(tmp_path: Path) -> None:
    hints = {
        "shop": {
            "critical_args": {
                "GET /api/customers/{id}/orders": {
                    "status": {"kind": "choice", "values": ["open", "shipped"]}
                },
                "GET /api/orders/{id}": {"id": {"kind": "choice", "values": ["101", "102"]}},
                "POST /api/orders": {"item": {"kind": "choice", "values": ["rug", "bed"]}},
            }
        }
    }
    profile = forced("ParameterCorruption", hints=hints)
    async with shop_proxy(tmp_path, profile) as (base, state, _), httpx.AsyncClient() as client:
        listed = await client.get(f"{base}/api/customers/7/orders?status=open")
        got = await client.get(f"{base}/api/orders/102")
        await client.post(f"{base}/api/orders", json={"customer_id": "8", "item": "rug"})
    assert state.seen[0]["query"] == {"status": "shipped"}
    assert listed.json()["orders"][0]["status"] == "shipped"
    assert state.seen[1]["path"] == "/api/orders/101" and got.json()["order_id"] == "101"
    assert '"item":"bed"' in state.seen[2]["body"].replace(" ", "")
    log = read_log(tmp_path)
    assert log[1].arguments == {"id": "102"} and log[1].forwarded_arguments == {"id": "101"}
    assert all(r.fault is not None and r.fault.params["applied"] for r in log)


async def test_parameter_corruption_lands_only_where_it_changes_an_argument(
    tmp_path: Path,
) -> None:
    """`GET /api/report.csv` has no argument: the fault is not drawn there (re-picked; alone
    in the profile, none), so no line says delivered with `applied: false`. A query's
    `page=2` is a number (x0.5 or x2), as docs/faults.md says, not an id to bump."""
    profile = forced("ParameterCorruption", params={"arguments": ["page"]})
    async with shop_proxy(tmp_path, profile) as (base, state, _), httpx.AsyncClient() as client:
        report = await client.get(f"{base}/api/report.csv")
        await client.get(f"{base}/api/customers/7/orders", params={"status": "open", "page": "2"})
    assert report.status_code == 200 and report.text.startswith("order_id")
    log = read_log(tmp_path)
    assert (log[0].tool, log[0].fault, log[0].fault_delivered) == (
        "GET /api/report.csv",
        None,
        False,
    )
    fault = log[1].fault
    assert fault is not None and fault.params["applied"] is True and log[1].fault_delivered
    assert (fault.params["argument"], fault.params["spec"]["kind"]) == ("page", "number")
    assert state.seen[-1]["query"] == {"status": "open", "page": fault.params["corrupted"]}
    assert fault.params["corrupted"] in ("1", "4")
