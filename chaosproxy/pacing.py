"""Pacing model calls under a provider's limits: the contract and a one-process pacer.

A model endpoint is shared by every episode of a run (and, under Ray, of a cluster), and
its provider limits requests and tokens per minute. The proxy asks a `ModelPacer` before
it forwards a model call upstream (`acquire`, with an estimate of the call's tokens) and
tells it the real count afterwards (`settle`), so provider 429s stay rare and do not mix
with the 429s a fault profile injects. Any object with these two methods will do: the
`RatePacer` here paces one process (`run --rpm/--tpm`, `up --rpm/--tpm`,
`Environment(model_pacer=...)`); a cluster passes one shared object (a Ray named actor's
proxy) to every worker's `Environment`.

`RatePacer`'s semantics (a token bucket holding one request, i.e. virtual scheduling,
GCRA): calls start evenly spaced. Each call reserves `60/rpm` seconds of the request
timeline and `estimated_tokens * 60/tpm` seconds of the token timeline; it starts when
both timelines are free (`max(now, next_request, next_token)`), in the order calls asked.
So `rpm=60`: three calls asked at t=0 start at 0, 1 and 2 s, and no 60-s window ever holds
more than 60 starts; `tpm=6000`: a call estimated at 500 tokens delays the next call by
5 s. `settle` moves the token timeline by the difference (an over-estimate gives the time
back). There is no burst: a per-minute budget is spent evenly, which a provider's own
per-minute (or finer) window never rejects. Reservations are made when `acquire` is
called, so a cancelled waiter's slot stays spent (the safe side).

Hand-written (≈40 lines) rather than `aiolimiter` or `pyrate-limiter`: neither can give
back an over-estimate after the reply (`settle`), and aiolimiter reads the event loop's
clock, so it cannot be tested with a clock worked out by hand.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from chaosproxy.errors import ChaosError

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@runtime_checkable
class ModelPacer(Protocol):
    """What the proxy asks before and after each model call it forwards upstream."""

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait until a model call estimated at `estimated_tokens` may start."""
        ...

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Correct the token budget once the call's real token count is known."""
        ...


class PacingError(ChaosError, ValueError):
    """A pacer was configured with impossible limits; the message names them."""


class RatePacer:
    """Requests per minute and tokens per minute for one process (see the module docstring).

    `rpm`/`tpm` None: that limit is off. `clock` (seconds, monotonic) and `sleep` are
    injectable for tests; the defaults are `time.monotonic` and `asyncio.sleep`.
    """

    def __init__(
        self,
        rpm: int | None = None,
        tpm: int | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and value <= 0:
                raise PacingError(f"{name} must be a positive number per minute, got {value}")
        self.rpm, self.tpm = rpm, tpm
        self._clock, self._sleep = clock, sleep
        self._request_gap = 60.0 / rpm if rpm else 0.0
        self._token_cost = 60.0 / tpm if tpm else 0.0
        self._next_request = float("-inf")
        self._next_token = float("-inf")

    def reserve(self, estimated_tokens: int) -> float:
        """The start time of a call asked now (its slot is taken); what `acquire` waits for."""
        now = self._clock()
        start = max(now, self._next_request, self._next_token)
        self._next_request = start + self._request_gap
        self._next_token = start + max(0, estimated_tokens) * self._token_cost
        return start

    async def acquire(self, estimated_tokens: int) -> None:
        wait = self.reserve(estimated_tokens) - self._clock()
        if wait > 0:
            await self._sleep(wait)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        self._next_token += (actual_tokens - estimated_tokens) * self._token_cost

    def __repr__(self) -> str:
        return f"RatePacer(rpm={self.rpm}, tpm={self.tpm})"


def make_pacer(rpm: int | None, tpm: int | None) -> RatePacer | None:
    """The `--rpm/--tpm` pacer, or None when neither is given (no pacing, no cost)."""
    if rpm is None and tpm is None:
        return None
    return RatePacer(rpm, tpm)


OUTPUT_LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def estimate_tokens(body: bytes) -> int:
    """A model request's tokens before it runs: its JSON body's length / 4 (messages, tools
    and instructions all count as prompt) plus the output it allows (`max_tokens`,
    `max_completion_tokens`, `max_output_tokens`, Ollama's `options.num_predict`)."""
    estimate = len(body) // 4
    try:
        payload = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return estimate
    if not isinstance(payload, dict):
        return estimate
    options = payload.get("options")
    limits = [payload.get(key) for key in OUTPUT_LIMIT_KEYS]
    if isinstance(options, dict):
        limits.append(options.get("num_predict"))
    for value in limits:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return estimate + value
    return estimate


def usage_tokens(usage: Mapping[str, Any] | None) -> int | None:
    """The tokens a reply's `usage` says were spent, in any provider's keys (None: unknown)."""
    if not usage:
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool):
        return total
    counted = [
        value
        for key in (
            "prompt_tokens",
            "completion_tokens",
            "input_tokens",
            "output_tokens",
            "prompt_eval_count",
            "eval_count",
        )
        if isinstance(value := usage.get(key), int) and not isinstance(value, bool)
    ]
    return sum(counted) if counted else None
