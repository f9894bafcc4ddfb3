"""A hand-built in-process agent with one known weakness, for the shrink tests.

It follows the task's reference solution and retries every failed call (up to 8 times,
no waiting, under one idempotency key), except one: a 429 on a tool whose previous
failure was a PartialResponse (a 2xx body that is not valid JSON) makes it give up. With
`patience_s`, a 429 asking to wait longer than that makes it give up too.
"""

from __future__ import annotations

from typing import Any

from chaosproxy.agents.base import AgentContext, AgentResult
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import RestToolClient


class GiveUp(Exception):
    pass


class WeakClient:
    def __init__(self, transport: RestToolClient, patience_s: float | None = None) -> None:
        self._transport = transport
        self._patience_s = patience_s
        self.last_failure: dict[str, str] = {}
        self.calls = 0

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        key = f"weak-{self.calls}"  # one key per intended call: a retry cannot write twice
        for _ in range(8):
            self.calls += 1
            try:
                return await self._transport.call_with(tool, arguments, idempotency_key=key)
            except ToolCallFailed as failure:
                kind = (
                    "partial"
                    if failure.status == 200 and "not valid JSON" in str(failure)
                    else str(failure.status)
                )
                if kind == "429" and self.last_failure.get(tool) == "partial":
                    raise GiveUp(f"{tool}: a 429 after a partial reply") from failure
                wait = failure.retry_after or 0.0
                if kind == "429" and self._patience_s is not None and wait > self._patience_s:
                    raise GiveUp(f"{tool}: asked to wait {wait:g} s") from failure
                self.last_failure[tool] = kind
        raise GiveUp(f"{tool}: 8 failures")


class WeakAgent:
    name = "weak"

    def __init__(self, patience_s: float | None = None) -> None:
        self.patience_s = patience_s

    async def run(self, context: AgentContext) -> AgentResult:
        assert context.reference_solution is not None
        base = context.endpoints[context.domain].rest
        async with RestToolClient(base, timeout_s=context.timeout_s) as transport:
            client = WeakClient(transport, self.patience_s)
            try:
                await context.reference_solution(client)
            except GiveUp as stop:
                return AgentResult("gave_up", [str(stop)], client.calls)
        return AgentResult("finished", [], client.calls)
