"""The AP-EDM agent (HB-Eval Algorithm 2, on the memory of Algorithm 1).

1. Plan (line 1): embed the task text and query the memory for successful trajectories
   of the same domain. At cosine ≥ 0.87 the best one (highest PEI among the nearest)
   guides the plan: its tool calls go into the system prompt. Below that, the model plans
   alone, as a ReAct agent does. With no memory, or none of this domain, likewise.
2. Act (lines 2–19) in the shared tool loop, watching each step:
   - confidence = the retrieval similarity (1.0 with no memory of the domain), minus 0.1
     for each consecutive failed tool call; below HALT_BELOW the agent halts safely
     (escalate_to_human, line 18): too unfamiliar a task, or too many failures in a row;
   - PEI_i = L_ref / i, with L_ref the retrieved trajectory's length; when it drops below
     τ = 0.7 on a failed call, the model is asked once to re-plan (lines 12–15).
HALT_BELOW is 0.5, not the paper's 0.7: with the offline lexical embedding, ε-perturbed
rewordings of a stored task score 0.5–0.9 against it (distractor sentences cost most).
The agent never writes the memory during a run: memories grow between runs with
`chaosproxy memory build`, which keeps only trajectories the scorer gave PEI ≥ 0.8.
"""

from __future__ import annotations

import json

from chaosproxy.agents.apedm.embedder import Embedder
from chaosproxy.agents.apedm.memory import RETRIEVE_AT, EpisodicMemory, Hit
from chaosproxy.agents.base import AgentContext, AgentResult
from chaosproxy.agents.llm import ModelClient, ModelEndpoint, UsageLedger
from chaosproxy.agents.loop import (
    Attempt,
    Halt,
    Step,
    StepDecision,
    as_openai_tool,
    opening,
    run_loop,
    safe_halt,
)
from chaosproxy.agents.react import result_of
from chaosproxy.agents.transport import open_transport

HALT_BELOW = 0.5
FAILURE_PENALTY = 0.1
PEI_TAU = 0.7
GUIDE_STEPS = 20


class ApEdmAgent:
    def __init__(
        self,
        endpoint: ModelEndpoint,
        ledger: UsageLedger | None = None,
        memory: EpisodicMemory | None = None,
        embedder: Embedder | None = None,
        max_steps: int = 15,
        name: str = "ap-edm",
    ) -> None:
        self.name = name
        self.endpoint = endpoint
        self.ledger = ledger or UsageLedger()
        self.memory = memory
        self.embedder = embedder or Embedder()
        self.max_steps = max_steps

    async def recall(self, context: AgentContext) -> Hit | None:
        """The nearest successful trajectory of this domain, or None without such memory."""
        if self.memory is None or context.domain not in self.memory.domains():
            return None
        usage = self.ledger.for_episode(context.episode)
        vector = (await self.embedder.embed([context.task_text], usage))[0]
        hits = self.memory.search(vector, context.domain)
        return hits[0] if hits else None

    async def run(self, context: AgentContext) -> AgentResult:
        hit = await self.recall(context)
        notes: list[str] = []
        guide = ""
        if hit is not None:
            notes.append(
                f"memory: nearest {hit.entry.task_id} (cosine {hit.score:.2f}, "
                f"PEI {hit.entry.pei:.2f})"
            )
            if hit.score >= RETRIEVE_AT:
                guide = _guidance(hit)
                notes.append("memory guides the plan")
        control = _Control(hit.score if hit is not None else 1.0, hit)
        model = ModelClient(self.endpoint, self.ledger.for_episode(context.episode))
        try:
            async with open_transport(context) as transport:
                if control.confidence < HALT_BELOW:
                    attempt = Attempt()
                    await safe_halt(transport, attempt, control.halt_reason())
                    return result_of(attempt, self.max_steps, notes)
                tools = [as_openai_tool(tool) for tool in await transport.list_tools()]
                attempt = await run_loop(
                    model,
                    transport,
                    opening(context.task_text, guide),
                    tools,
                    max_steps=self.max_steps,
                    seed=context.seed,
                    on_step=control.observe,
                )
        finally:
            await model.close()
        return result_of(attempt, self.max_steps, notes)


class _Control:
    """Alg. 2's per-step checks: confidence for Safe Halt, PEI for re-planning."""

    def __init__(self, base: float, hit: Hit | None) -> None:
        self.base = base
        self.reference_steps = len(hit.entry.steps) if hit is not None else None
        self.failures_in_a_row = 0
        self.steps = 0
        self.replanned = False

    @property
    def confidence(self) -> float:
        return self.base - FAILURE_PENALTY * self.failures_in_a_row

    def halt_reason(self) -> str:
        return f"confidence {self.confidence:.2f} < {HALT_BELOW}: " + (
            f"{self.failures_in_a_row} tool failures in a row"
            if self.failures_in_a_row
            else "no similar successful experience in memory"
        )

    def observe(self, step: Step) -> StepDecision:
        self.steps += 1
        self.failures_in_a_row = self.failures_in_a_row + 1 if step.failed else 0
        if self.confidence < HALT_BELOW:
            return Halt(self.halt_reason())
        if (
            step.failed
            and not self.replanned
            and self.reference_steps
            and self.reference_steps / self.steps < PEI_TAU
        ):
            self.replanned = True
            return (
                f"You have made {self.steps} tool calls; the plan that worked before took "
                f"{self.reference_steps}. Step back and re-plan the remaining steps."
            )
        return None


def _guidance(hit: Hit) -> str:
    lines = [
        f"{n}. {step.tool} {json.dumps(step.arguments, ensure_ascii=False)}"
        for n, step in enumerate(hit.entry.steps[:GUIDE_STEPS], start=1)
    ]
    return (
        f"A similar request (cosine {hit.score:.2f}) was completed before "
        f"(PEI {hit.entry.pei:.2f}) with these tool calls, in order:\n"
        + "\n".join(lines)
        + "\nUse them as a plan; adapt the arguments to this request and check each result."
    )
