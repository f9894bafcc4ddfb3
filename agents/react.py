"""ReAct over any OpenAI-compatible chat-completions endpoint (ReliabilityBench §4.4).

The model sees the task text and the domain's tools (loaded from the service's REST
listing or MCP tools/list, through the proxy), calls tools through the same clients the
scripted agents use, and reads each result or error as a tool message. It stops when
the model answers without a tool call, or after `max_steps` calls. The agent itself
adds no retries or checks: how it copes with faults is the model's own behaviour.
"""

from __future__ import annotations

from chaosproxy.agents.base import AgentContext, AgentResult
from chaosproxy.agents.llm import ModelClient, ModelEndpoint, UsageLedger
from chaosproxy.agents.loop import Attempt, as_openai_tool, opening, run_loop
from chaosproxy.agents.transport import open_transport


class ReactAgent:
    """One model, one endpoint; `name` is what results and reports call it."""

    def __init__(
        self,
        endpoint: ModelEndpoint,
        ledger: UsageLedger | None = None,
        max_steps: int = 15,
        name: str = "react",
    ) -> None:
        self.name = name
        self.endpoint = endpoint
        self.ledger = ledger or UsageLedger()
        self.max_steps = max_steps

    async def run(self, context: AgentContext) -> AgentResult:
        model = ModelClient(self.endpoint, self.ledger.for_episode(context.episode))
        try:
            async with open_transport(context) as transport:
                tools = [as_openai_tool(tool) for tool in await transport.list_tools()]
                attempt = await run_loop(
                    model,
                    transport,
                    opening(context.task_text),
                    tools,
                    max_steps=self.max_steps,
                    seed=context.seed,
                )
        finally:
            await model.close()
        return result_of(attempt, self.max_steps)


def result_of(attempt: Attempt, max_steps: int, notes: list[str] | None = None) -> AgentResult:
    """How an attempt ended, as the runner records it."""
    notes = list(notes or [])
    if attempt.hit_step_limit:
        notes.append(f"stopped after {max_steps} tool calls")
    if attempt.halted:
        notes.append(f"safe halt: {attempt.halted}")
    if attempt.escalated:
        return AgentResult("escalated", notes, len(attempt.steps))
    return AgentResult("finished", notes, len(attempt.steps))
