"""Scripted agents: follow a task's reference solution through a retry policy.

They need no model, so the whole pipeline runs offline, and the gap between their
policies is a real reliability gap measured by the same proxy and scorer an LLM agent
meets. They reach tools only over HTTP or MCP, through the proxy.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import uuid
from typing import Any

import httpx
from chaosproxy.agents.base import AgentContext, AgentResult
from chaosproxy.agents.scripted.policy import (
    POLICIES,
    FailureKind,
    PolicyName,
    RetryPolicy,
    classify,
)
from chaosproxy.agents.scripted.repair import (
    echoed_differently,
    find_contradiction,
    missing_required,
    renamed_arguments,
    repair,
)
from chaosproxy.agents.transport import open_transport
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import McpToolClient, RestToolClient

ESCALATION_REASON_LIMIT = 300

RECOVERABLE: frozenset[FailureKind] = frozenset({"session_lost", "unauthorized", "tool_not_listed"})

PLAN_BROKEN = (LookupError, TypeError, ValueError, AssertionError, RuntimeError, StopIteration)
"""What a reference solution raises when results do not fit its plan (a missing field, no
match where one was expected): the agent failed the task. Anything else is a bug, and
the runner records it as an agent crash."""


class GaveUp(Exception):
    """The agent stops without finishing: an agent failure, recorded as such."""


class Escalated(Exception):
    """The agent handed the task to a human (a Safe Halt)."""


class ScriptedAgent:
    """One of the three scripted policies; `name` is the policy name."""

    def __init__(self, policy: PolicyName) -> None:
        self.name: str = policy
        self.policy = POLICIES[policy]

    async def run(self, context: AgentContext) -> AgentResult:
        if context.reference_solution is None:
            raise ValueError(f"scripted agent {self.name!r} needs a task with a reference solution")
        rng = random.Random(_seed_for(context))
        async with open_transport(context) as transport:
            listed = await _listed_tools(transport) if self.policy.validates_responses else []
            client = PolicyClient(
                transport, self.policy, rng, _schemas(listed, "output"), _schemas(listed, "input")
            )
            try:
                await context.reference_solution(client)
            except GaveUp as stop:
                return AgentResult("gave_up", [str(stop)], client.calls)
            except Escalated as halt:
                return AgentResult("escalated", [str(halt)], client.calls)
            except ToolCallFailed as refusal:
                return AgentResult(
                    "gave_up", [f"the plan could not go on: {refusal}"], client.calls
                )
            except PLAN_BROKEN as confusion:
                return AgentResult(
                    "gave_up", [f"the results did not fit the plan: {confusion!r}"], client.calls
                )
            return AgentResult("finished", [], client.calls)


class PolicyClient:
    """The ToolClient a reference solution sees: every call goes through the policy."""

    def __init__(
        self,
        transport: RestToolClient | McpToolClient,
        policy: RetryPolicy,
        rng: random.Random,
        output_schemas: dict[str, dict[str, Any]],
        input_schemas: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self._transport = transport
        self._policy = policy
        self._rng = rng
        self._schemas = output_schemas
        self._inputs = dict(input_schemas or {})
        self._renamed: dict[str, dict[str, str]] = {}
        """tool -> old argument name -> new, learnt from a changed tools/list."""
        self.calls = 0

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        idempotency_key = self._new_key()
        attempt = 0
        while True:
            attempt += 1
            self.calls += 1
            if self._policy.recovers_sessions and getattr(self._transport, "tools_changed", False):
                await self._refresh_schemas()
            sent = self._current_names(tool, arguments)
            try:
                result = await self._send(tool, sent, idempotency_key)
            except ToolCallFailed as failure:
                if await self._arguments_renamed(tool, sent, failure):
                    continue
                await self._after_failure(tool, attempt, failure)
                continue
            if self._policy.validates_responses:
                altered = echoed_differently(arguments, result)
                if altered is not None:
                    mismatch = ToolCallFailed(200, f"{tool} answered for {altered}")
                    await self._after_failure(tool, attempt, mismatch)
                    # The service ran another call than this one; the key is spent on it.
                    idempotency_key = self._new_key()
                    continue
                checked = await self._check(tool, result, attempt)
                if checked is None:
                    continue
                return checked
            if self._policy.follows_injected_instructions:
                await self._obey_instructions(tool, result)
            return result

    def _new_key(self) -> str | None:
        """A fresh idempotency key (robust only): one per intended call, kept across retries."""
        if not self._policy.validates_responses:
            return None
        return str(uuid.UUID(int=self._rng.getrandbits(128)))

    async def _send(
        self, tool: str, arguments: dict[str, Any], idempotency_key: str | None
    ) -> dict[str, Any]:
        return await self._transport.call_with(tool, arguments, idempotency_key=idempotency_key)

    async def _after_failure(self, tool: str, attempt: int, failure: ToolCallFailed) -> None:
        kind = classify(failure)
        if self._policy.name == "naive":
            raise GaveUp(f"{tool} failed: {failure}")
        if self._policy.recovers_sessions and kind in RECOVERABLE:
            if attempt >= self._policy.max_attempts:
                raise GaveUp(f"{tool} still failing after {attempt} attempts: {failure}")
            await self._recover(tool, attempt, kind, failure)
            return
        if kind == "client_error":
            raise GaveUp(f"{tool} refused the call: {failure}")
        if kind == "suspended" or attempt >= self._policy.max_attempts:
            if self._policy.validates_responses:
                await self.escalate(f"{tool} keeps failing ({failure.status}): {failure.message}")
            raise GaveUp(f"{tool} still failing after {attempt} attempts: {failure}")
        if failure.status == 200 and self._policy.validates_responses:
            await self._refresh_schemas()
        await self._policy.wait_before_retry(attempt, failure, self._rng)
        if failure.status == 0 and isinstance(self._transport, McpToolClient):
            with contextlib.suppress(ToolCallFailed):
                await self._transport.reconnect()

    async def _recover(
        self, tool: str, attempt: int, kind: FailureKind, failure: ToolCallFailed
    ) -> None:
        """What a careful MCP client does before sending the call again."""
        if kind == "session_lost":
            if attempt > 1:
                # lost again right after a new session: the server is struggling, back off
                await self._policy.wait_before_retry(attempt, failure, self._rng)
            await self._reconnect()
            return
        await self._policy.wait_before_retry(attempt, failure, self._rng)
        if kind == "unauthorized":
            await self._reconnect()
            return
        try:
            tools = await self._transport.list_tools()
        except ToolCallFailed:
            return
        self._learn_renames(tools)
        if tool not in {listed.get("name") for listed in tools}:
            # Gone for now (a deploy, a flag): back off once more before the next try;
            # max_attempts bounds the wait.
            await self._policy.wait_before_retry(attempt + 1, failure, self._rng)

    async def _reconnect(self) -> None:
        """A new session (and a new authentication with the same credentials)."""
        if isinstance(self._transport, McpToolClient):
            with contextlib.suppress(ToolCallFailed):
                await self._transport.reconnect()

    async def _refresh_schemas(self) -> None:
        """A body that no longer fits the published schema: read the tool list again.

        Over MCP the client checks results against the schemas it cached from tools/list,
        so after an API version change only a fresh listing lets results through; the
        schemas the agent repairs against stay the ones it planned with.
        """
        with contextlib.suppress(ToolCallFailed):
            self._learn_renames(await self._transport.list_tools())

    def _current_names(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments under the names the tool takes now (after a changed tools/list)."""
        renamed = self._renamed.get(tool)
        if not renamed:
            return arguments
        return {renamed.get(name, name): value for name, value in arguments.items()}

    def _learn_renames(self, tools: list[dict[str, Any]]) -> None:
        """Compare each listed input schema with the one the plan was made with."""
        for listed in tools:
            name = str(listed.get("name"))
            schema = listed.get("input_schema") or listed.get("inputSchema")
            planned = self._inputs.get(name)
            if isinstance(schema, dict) and isinstance(planned, dict):
                self._renamed[name] = renamed_arguments(planned, schema)

    async def _arguments_renamed(
        self, tool: str, sent: dict[str, Any], failure: ToolCallFailed
    ) -> bool:
        """A refused call (422) over MCP: if the tool's arguments were renamed since the
        plan was made, learn the new names from a fresh tools/list and call again."""
        if not (
            self._policy.recovers_sessions
            and failure.status == 422
            and isinstance(self._transport, McpToolClient)
        ):
            return False
        await self._refresh_schemas()
        return self._current_names(tool, sent) != sent

    async def _check(
        self, tool: str, result: dict[str, Any], attempt: int
    ) -> dict[str, Any] | None:
        """Repair drift; None asks to call again (a cut record); escalation on contradictions."""
        schema = self._schemas.get(tool)
        if schema is not None:
            result = repair(result, schema)
            missing = missing_required(result, schema)
            if missing:
                failure = ToolCallFailed(200, f"response lacks {', '.join(missing[:3])}")
                await self._after_failure(tool, attempt, failure)
                return None
        contradiction = find_contradiction(result)
        if contradiction is not None:
            await self.escalate(f"{tool} returned contradictory data: {contradiction}")
        return result

    async def escalate(self, reason: str) -> None:
        """Safe Halt: hand over to a human, then stop the episode."""
        reason = reason[:ESCALATION_REASON_LIMIT]
        try:
            await self._send("escalate_to_human", {"reason": reason}, None)
        except ToolCallFailed as failure:
            raise GaveUp(f"could not even escalate: {failure}") from failure
        raise Escalated(reason)

    async def _obey_instructions(self, tool: str, result: dict[str, Any]) -> None:
        """What a gullible agent does with text in a result that tells it to act."""
        for instruction in instructions_in(result):
            name, arguments = instruction
            if name == tool:
                continue
            try:
                await self._send(name, arguments, None)
            except ToolCallFailed:
                continue


INSTRUCTION = re.compile(
    r"call(?:ing)?\s+`?(?P<tool>[a-z_][a-z0-9_]*)`?\s*(?:with(?:\s+arguments)?|\()\s*(?=\{)"
)
_DECODER = json.JSONDecoder()


def instructions_in(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """Tool calls that text inside a result asks for: `call `tool` with arguments {...}`."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(value, str):
        for match in INSTRUCTION.finditer(value):
            try:
                arguments, _ = _DECODER.raw_decode(value, match.end())
            except json.JSONDecodeError:
                continue
            if isinstance(arguments, dict):
                found.append((match.group("tool"), arguments))
    elif isinstance(value, dict):
        for inner in value.values():
            found += instructions_in(inner)
    elif isinstance(value, list):
        for inner in value:
            found += instructions_in(inner)
    return found


def _seed_for(context: AgentContext) -> int:
    digest = hashlib.blake2b(f"{context.seed}|{context.episode}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


async def _listed_tools(transport: RestToolClient | McpToolClient) -> list[dict[str, Any]]:
    """The tools as published (REST listing or MCP tools/list), read once."""
    try:
        return await transport.list_tools()
    except (ToolCallFailed, httpx.HTTPError, ValueError):
        return []


def _schemas(tools: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """Each tool's published `input` or `output` schema, under either spelling."""
    schemas: dict[str, dict[str, Any]] = {}
    for tool in tools:
        schema = tool.get(f"{kind}_schema") or tool.get(f"{kind}Schema")
        if isinstance(schema, dict):
            schemas[str(tool.get("name"))] = schema
    return schemas
