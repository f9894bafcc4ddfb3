"""A small flight-booking agent, written as an agent builder would write one: it reaches its
tools over plain HTTP (httpx) or over MCP (fastmcp) and knows nothing about chaosproxy.

It retries what looks transient (a timeout, a dropped connection, 429 and 5xx, honouring
Retry-After) a few times, and gives up on anything else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import fastmcp
import httpx

RETRYABLE = {429, 500, 502, 503, 504}
TRIES = 4


class ToolFailed(Exception):
    pass


def _wait(attempt: int, retry_after: str | None) -> float:
    if retry_after:
        try:
            return min(float(retry_after), 2.0)
        except ValueError:
            pass
    return 0.05 * 2**attempt


def rest_tools(base_url: str) -> Callable[..., dict[str, Any]]:
    """call(tool, **arguments) over REST: POST {base_url}/tools/{tool}."""

    def call(tool: str, **arguments: Any) -> dict[str, Any]:
        for attempt in range(TRIES):
            try:
                reply = httpx.post(f"{base_url}/tools/{tool}", json=arguments, timeout=10)
            except httpx.HTTPError:
                time.sleep(_wait(attempt, None))
                continue
            if reply.status_code in RETRYABLE:
                time.sleep(_wait(attempt, reply.headers.get("retry-after")))
                continue
            if reply.is_error:
                raise ToolFailed(f"{tool}: HTTP {reply.status_code}: {reply.text[:200]}")
            try:
                body: dict[str, Any] = reply.json()
            except ValueError:
                time.sleep(_wait(attempt, None))  # a truncated body: ask again
                continue
            return body
        raise ToolFailed(f"{tool}: still failing after {TRIES} tries")

    return call


def book_cheapest(
    call: Callable[..., dict[str, Any]],
    origin: str,
    dest: str,
    date: str,
    passenger: str,
    payment: str,
) -> dict[str, Any]:
    """Search, pick the cheapest flight with a free seat, hold it, confirm it."""
    found = call("search_flights", origin=origin, dest=dest, date=date)
    bookable = [f for f in found.get("flights", []) if f.get("seats_left", 0) > 0]
    if not bookable:
        raise ToolFailed("no bookable flight")
    best = min(bookable, key=lambda f: f["price"]["amount"])
    hold = call("hold_flight", flight_id=best["flight_id"])
    return call(
        "confirm_booking",
        flight_id=best["flight_id"],
        passenger=passenger,
        payment_info=payment,
        hold_id=hold["hold"]["hold_id"],
    )


async def mcp_book_cheapest(
    mcp_url: str, origin: str, dest: str, date: str, passenger: str, payment: str
) -> dict[str, Any]:
    """The same agent over MCP (streamable HTTP), with a fastmcp client."""
    async with fastmcp.Client(mcp_url, timeout=10) as client:

        async def call(tool: str, **arguments: Any) -> dict[str, Any]:
            for attempt in range(TRIES):
                try:
                    result = await client.call_tool(tool, arguments, raise_on_error=False)
                except Exception:
                    await asyncio.sleep(_wait(attempt, None))
                    continue
                if result.is_error or not isinstance(result.structured_content, dict):
                    await asyncio.sleep(_wait(attempt, None))
                    continue
                return result.structured_content
            raise ToolFailed(f"{tool}: still failing after {TRIES} tries")

        return await _book(call, origin, dest, date, passenger, payment)


async def _book(
    call: Callable[..., Awaitable[dict[str, Any]]],
    origin: str,
    dest: str,
    date: str,
    passenger: str,
    payment: str,
) -> dict[str, Any]:
    found = await call("search_flights", origin=origin, dest=dest, date=date)
    bookable = [f for f in found.get("flights", []) if f.get("seats_left", 0) > 0]
    if not bookable:
        raise ToolFailed("no bookable flight")
    best = min(bookable, key=lambda f: f["price"]["amount"])
    hold = await call("hold_flight", flight_id=best["flight_id"])
    return await call(
        "confirm_booking",
        flight_id=best["flight_id"],
        passenger=passenger,
        payment_info=payment,
        hold_id=hold["hold"]["hold_id"],
    )
