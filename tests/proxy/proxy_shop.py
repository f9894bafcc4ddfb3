"""A user-style REST API (aiohttp, no chaosproxy conventions) to put behind `--upstream`.

Nested routes with path parameters, a query string, a JSON POST, a DELETE and a CSV
report; it records every request it gets, so tests see what the proxy forwarded.
With `openapi=True` it also serves an OpenAPI 3.1 document naming its operations.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ORDERS = {
    "101": {"order_id": "101", "customer_id": "7", "item": "lamp", "status": "open", "qty": 2},
    "102": {"order_id": "102", "customer_id": "7", "item": "desk", "status": "shipped", "qty": 1},
    "103": {"order_id": "103", "customer_id": "8", "item": "sofa", "status": "open", "qty": 1},
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "shop", "version": "1"},
    "paths": {
        "/api/customers/{customer_id}/orders": {
            "get": {
                "operationId": "listCustomerOrders",
                "parameters": [
                    {"name": "customer_id", "in": "path", "schema": {"type": "string"}},
                    {
                        "name": "status",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["open", "shipped", "cancelled"]},
                    },
                ],
            }
        },
        "/api/orders/{order_id}": {
            "get": {"operationId": "getOrder"},
            "delete": {"operationId": "deleteOrder"},
            "parameters": [{"name": "order_id", "in": "path", "schema": {"type": "string"}}],
        },
        "/api/orders": {
            "post": {
                "operationId": "createOrder",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/New"}}
                    }
                },
            }
        },
        "/api/report.csv": {"get": {}},
    },
    "components": {
        "schemas": {
            "New": {
                "type": "object",
                "properties": {
                    "customer_id": {"type": "string"},
                    "item": {"type": "string"},
                    "deliver_on": {"type": "string", "format": "date"},
                },
            }
        }
    },
}


@dataclass
class ShopState:
    seen: list[dict[str, Any]] = field(default_factory=list)


def build_app(state: ShopState, openapi: bool) -> web.Application:
    async def record(request: web.Request) -> None:
        body = await request.read()
        state.seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "body": body.decode() if body else None,
            }
        )

    async def customer_orders(request: web.Request) -> web.Response:
        await record(request)
        customer = request.match_info["customer_id"]
        status = request.query.get("status")
        found = [
            o
            for o in ORDERS.values()
            if o["customer_id"] == customer and (status is None or o["status"] == status)
        ]
        return web.json_response({"orders": found, "count": len(found)})

    async def get_order(request: web.Request) -> web.Response:
        await record(request)
        order = ORDERS.get(request.match_info["order_id"])
        if order is None:
            return web.json_response({"error": "no such order"}, status=404)
        return web.json_response(order)

    async def delete_order(request: web.Request) -> web.Response:
        await record(request)
        return web.json_response({"deleted": request.match_info["order_id"]})

    async def create_order(request: web.Request) -> web.Response:
        await record(request)
        data = await request.json()
        return web.json_response({"order_id": "104", **data}, status=201)

    async def report(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(text="order_id,item\n101,lamp\n", content_type="text/csv")

    async def document(request: web.Request) -> web.Response:
        return web.json_response(OPENAPI)

    app = web.Application()
    app.router.add_get("/api/customers/{customer_id}/orders", customer_orders)
    app.router.add_get("/api/orders/{order_id}", get_order)
    app.router.add_delete("/api/orders/{order_id}", delete_order)
    app.router.add_post("/api/orders", create_order)
    app.router.add_get("/api/report.csv", report)
    if openapi:
        app.router.add_get("/openapi.json", document)
    return app


@asynccontextmanager
async def serve_shop(openapi: bool = False) -> AsyncIterator[tuple[str, ShopState]]:
    state = ShopState()
    runner = web.AppRunner(build_app(state, openapi), access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", state
    finally:
        await runner.cleanup()
