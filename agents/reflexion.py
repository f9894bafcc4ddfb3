"""Reflexion (Shinn et al., 2023; ReliabilityBench §4.4): ReAct that reflects and retries.

Each trial is a ReAct attempt. Afterwards the agent judges, from what it observed alone
(never the oracle), whether the attempt failed:
- a tool whose last call returned an error (an error it never got past),
- the step budget ran out,
- the model's own last words say it could not finish.
An escalation is a decision, not a failure: it ends the episode. After a failed trial
the model writes a short verbal reflection on the trajectory and the errors it saw, and
the next trial starts afresh with every reflection so far in its system prompt. Trials
are bounded (`max_trials`), share one tool-call budget (`max_total_steps`) and stop
early when the episode's time budget would not fit another trial.
"""

from __future__ import annotations

import re
import time

from chaosproxy.agents.base import AgentContext, AgentResult
from chaosproxy.agents.llm import ModelClient, ModelEndpoint, UsageLedger
from chaosproxy.agents.loop import Attempt, Step, as_openai_tool, opening, run_loop
from chaosproxy.agents.react import result_of
from chaosproxy.agents.transport import open_transport

SELF_REPORTED_FAILURE = re.compile(
    r"\b(could not|couldn't|cannot|can't|unable|failed|not possible|sorry)\b", re.IGNORECASE
)
REFLECT_PROMPT = (
    "The attempt above did not succeed: {verdict}. In at most five sentences, reflect on "
    "what went wrong and say concretely what to do differently next time. Actions that "
    "succeeded have already taken effect. Answer in words only; do not call tools."
)
REFLECTIONS_HEADER = (
    "Reflections on your earlier attempts at this task. Their successful actions have "
    "already taken effect: check the current state before repeating a write."
)
NOTE_LIMIT = 400


def judge(attempt: Attempt) -> str | None:
    """Why the attempt looks failed from the agent's own observations; None if it does not."""
    if attempt.escalated:
        return None
    if attempt.hit_step_limit:
        return "the step budget ran out before the task was done"
    last: dict[str, Step] = {}
    for step in attempt.steps:
        last[step.tool] = step
    unresolved = [step for step in last.values() if step.failed]
    if unresolved:
        step = unresolved[-1]
        return f"{step.tool} failed and was never got past: {step.content[:200]}"
    if SELF_REPORTED_FAILURE.search(attempt.final_text):
        return f"the final answer reports a failure: {attempt.final_text[:200]}"
    return None


class ReflexionAgent:
    def __init__(
        self,
        endpoint: ModelEndpoint,
        ledger: UsageLedger | None = None,
        max_trials: int = 3,
        max_steps: int = 15,
        max_total_steps: int = 30,
        name: str = "reflexion",
    ) -> None:
        self.name = name
        self.endpoint = endpoint
        self.ledger = ledger or UsageLedger()
        self.max_trials = max_trials
        self.max_steps = max_steps
        self.max_total_steps = max_total_steps

    async def run(self, context: AgentContext) -> AgentResult:
        started = time.monotonic()
        model = ModelClient(self.endpoint, self.ledger.for_episode(context.episode))
        reflections: list[str] = []
        notes: list[str] = []
        steps = 0
        attempt = Attempt()
        try:
            async with open_transport(context) as transport:
                tools = [as_openai_tool(tool) for tool in await transport.list_tools()]
                for trial in range(1, self.max_trials + 1):
                    budget = min(self.max_steps, self.max_total_steps - steps)
                    messages = opening(context.task_text, _reflections(reflections))
                    attempt = await run_loop(
                        model, transport, messages, tools, max_steps=budget, seed=context.seed
                    )
                    steps += len(attempt.steps)
                    verdict = judge(attempt)
                    if verdict is None:
                        break
                    notes.append(f"trial {trial} judged failed: {verdict}"[:NOTE_LIMIT])
                    elapsed = time.monotonic() - started
                    if (
                        trial == self.max_trials
                        or steps >= self.max_total_steps
                        or elapsed / trial * (trial + 1) > 0.9 * context.timeout_s
                    ):
                        break
                    messages.append(
                        {"role": "user", "content": REFLECT_PROMPT.format(verdict=verdict)}
                    )
                    answer = await model.chat(
                        messages, tools=tools, seed=context.seed, words_only=True
                    )
                    reflection = answer.content or ""
                    reflections.append(reflection.strip())
                    notes.append(f"reflection {trial}: {reflection.strip()}"[:NOTE_LIMIT])
        finally:
            await model.close()
        result = result_of(attempt, self.max_steps, notes)
        result.tool_calls = steps
        return result


def _reflections(reflections: list[str]) -> str:
    if not reflections:
        return ""
    lines = "\n".join(f"{n}. {text}" for n, text in enumerate(reflections, start=1))
    return f"{REFLECTIONS_HEADER}\n{lines}"
