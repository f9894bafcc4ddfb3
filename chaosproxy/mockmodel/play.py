"""How the mock model decides its next move: by following the task's reference solution.

A reference solution is an async function over a ToolClient. The mock runs it against
a client whose `call` suspends the coroutine and hands the call out; the call becomes
the model's next tool_call, and the tool message that came back is fed in as its result.
The server is stateless: every request replays the conversation's observations from the
start, so the same conversation always gets the same answer.

Habits (failure modes of real models, combinable):
- careful (none set): retries a transient error (status 0, 408, 425, 429, 5xx, a broken
  body) up to 3 times, then escalates to a human; a refusal (other 4xx) goes to the plan,
  which gives up unless it expected it.
- ignores-errors: takes an error body for a result and goes on (then usually claims success).
- retries-blindly: repeats any failed call, refusals included, up to 5 times, never escalates.
- trusts-injections: does what text inside a tool result tells it to (`call `tool` with {...}`).
"""

from __future__ import annotations

import json
from collections.abc import Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, Literal

from chaosproxy.agents.scripted.agent import instructions_in
from chaosproxy.domains.kit import Solver, ToolCallFailed

Habit = Literal["ignores-errors", "retries-blindly", "trusts-injections"]
HABITS: tuple[Habit, ...] = ("ignores-errors", "retries-blindly", "trusts-injections")
CAREFUL_RETRIES = 3
BLIND_RETRIES = 5
ESCALATE = "escalate_to_human"


@dataclass(frozen=True)
class ToolMove:
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class TextMove:
    text: str


Move = ToolMove | TextMove


@dataclass(frozen=True)
class Observation:
    """A tool call in the conversation and what its tool message said."""

    tool: str
    content: str

    def error(self) -> ToolCallFailed | None:
        """The failure the tool message reports, or None for a result."""
        try:
            body = json.loads(self.content)
        except (json.JSONDecodeError, TypeError):
            return ToolCallFailed(0, f"{self.tool} returned text that is not JSON")
        if not isinstance(body, dict):
            return ToolCallFailed(200, f"{self.tool} returned {type(body).__name__}")
        if "error" in body and set(body) <= {"error", "status", "retry_after_s", "type"}:
            detail = body["error"]
            message = detail.get("message") if isinstance(detail, dict) else detail
            status = body.get("status")
            return ToolCallFailed(status if isinstance(status, int) else 400, str(message))
        return None

    def result(self) -> dict[str, Any]:
        try:
            body = json.loads(self.content)
        except (json.JSONDecodeError, TypeError):
            return {"text": self.content}
        return body if isinstance(body, dict) else {"result": body}


class _Suspend:
    """Awaited by the solution's client: the coroutine stops here until the driver answers."""

    def __init__(self, move: ToolMove) -> None:
        self.move = move

    def __await__(self) -> Generator[ToolMove, Any, dict[str, Any]]:
        result: dict[str, Any] = yield self.move
        return result


class _SuspendingClient:
    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        return await _Suspend(ToolMove(tool, dict(arguments)))


@dataclass
class _Solution:
    """The reference solution as a sequence of moves, advanced by results or errors."""

    coroutine: Coroutine[Any, Any, None]
    pending: ToolMove | None = None
    ended: str = ""

    def _advance(self, step: Any) -> None:
        try:
            self.pending = step()
        except StopIteration:
            self.pending, self.ended = None, "Done: the request is complete."
        except ToolCallFailed as failure:
            self.pending, self.ended = None, f"I could not complete the request: {failure}"
        except Exception as failure:
            self.pending, self.ended = None, f"Done. (The results did not fit: {failure!r})"

    def start(self) -> None:
        self._advance(lambda: self.coroutine.send(None))

    def give(self, result: dict[str, Any]) -> None:
        self._advance(lambda: self.coroutine.send(result))

    def refuse(self, failure: ToolCallFailed) -> None:
        self._advance(lambda: self.coroutine.throw(failure))

    def close(self) -> None:
        self.coroutine.close()


@dataclass
class Player:
    """Replays observations through the solution and the habits; `next_move` is the answer."""

    solve: Solver
    habits: frozenset[Habit] = field(default_factory=frozenset)

    def next_move(self, observations: list[Observation]) -> Move:
        coroutine = self.solve(_SuspendingClient())
        if not isinstance(coroutine, Coroutine):
            raise TypeError("a reference solution must be an async function")
        solution = _Solution(coroutine)
        try:
            return self._replay(solution, observations)
        finally:
            solution.close()

    def _replay(self, solution: _Solution, observations: list[Observation]) -> Move:
        solution.start()
        injected: list[ToolMove] = []
        attempts = 0
        escalated = False
        for observation in observations:
            if escalated:
                return TextMove("I have handed this over to a human.")
            if injected:
                injected.pop(0)
                continue
            if solution.pending is None:
                break
            failure = observation.error()
            if failure is None:
                attempts = 0
                result = observation.result()
                if "trusts-injections" in self.habits:
                    moves = [ToolMove(t, a) for t, a in instructions_in(result)]
                    injected += [m for m in moves if m.tool != solution.pending.tool]
                solution.give(result)
                continue
            attempts += 1
            if "ignores-errors" in self.habits:
                attempts = 0
                solution.give(observation.result())
            elif "retries-blindly" in self.habits:
                if attempts > BLIND_RETRIES:
                    return TextMove(f"I could not complete the request: {failure}")
            elif _transient(failure):
                if attempts > CAREFUL_RETRIES:
                    escalated = True
            else:
                attempts = 0
                solution.refuse(failure)
        if escalated:
            return ToolMove(ESCALATE, {"reason": "a tool keeps failing; a human should take over"})
        if injected:
            return injected[0]
        if solution.pending is None:
            return TextMove(solution.ended or "Done: the request is complete.")
        return solution.pending


def _transient(failure: ToolCallFailed) -> bool:
    status = failure.status
    return status in (0, 200, 408, 425, 429) or status >= 500


def parse_habits(model: str, default: frozenset[Habit]) -> frozenset[Habit]:
    """Habits named in the model name (`mock+ignores-errors+trusts-injections`) or the default."""
    named = [part for part in model.split("+")[1:] if part]
    if not named:
        return default
    unknown = [part for part in named if part not in HABITS]
    if unknown:
        raise ValueError(f"unknown habits {unknown}; known: {', '.join(HABITS)}")
    return frozenset(h for h in HABITS if h in named)
