"""RatePacer with a clock worked out by hand, the token estimate, and the re-send waits."""

from __future__ import annotations

import asyncio
import email.utils

import pytest

from chaosproxy.pacing import (
    ModelPacer,
    PacingError,
    RatePacer,
    estimate_tokens,
    make_pacer,
    usage_tokens,
)
from chaosproxy.proxy.provider import retry_wait
from chaosproxy.proxy.settings import ProxyLimits


class FakeTime:
    """A clock that moves only when told (or when the pacer sleeps)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def pacer(rpm: int | None, tpm: int | None, t: FakeTime) -> RatePacer:
    return RatePacer(rpm, tpm, clock=t.clock, sleep=t.sleep)


def test_rpm_60_spaces_three_calls_asked_at_once_one_second_apart() -> None:
    t = FakeTime()
    p = pacer(60, None, t)
    assert [p.reserve(0), p.reserve(0), p.reserve(0)] == [0.0, 1.0, 2.0]


def test_concurrent_acquires_wait_in_order() -> None:
    """Three callers at t=0: the first starts at once, the others sleep 1 s and 2 s (their
    slots are reserved when they ask, so each sleep runs from t=0 on a real clock)."""
    t = FakeTime()
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)  # the clock stands still: all three asked at t=0

    p = RatePacer(60, None, clock=t.clock, sleep=record)

    async def main() -> None:
        await asyncio.gather(p.acquire(0), p.acquire(0), p.acquire(0))

    asyncio.run(main())
    assert waits == [1.0, 2.0]


def test_tpm_spaces_by_estimated_tokens_and_settle_gives_time_back() -> None:
    t = FakeTime()
    p = pacer(None, 600, t)  # 600 tokens/min: 0.1 s per token
    assert p.reserve(100) == 0.0  # the next call may start at 10 s
    p.settle(100, 40)  # only 40 were spent: 6 s back, next at 4 s
    assert p.reserve(100) == pytest.approx(4.0)
    p.settle(100, 130)  # 30 more than estimated: 3 s later, next at 4 + 13 = 17 s
    assert p.reserve(100) == pytest.approx(17.0)


def test_the_slower_limit_decides() -> None:
    t = FakeTime()
    p = pacer(60, 6000, t)  # 1 s per request, 0.01 s per token
    assert [p.reserve(500), p.reserve(500), p.reserve(500)] == [0.0, 5.0, 10.0]
    t.now = 100.0
    assert [p.reserve(50), p.reserve(50), p.reserve(50)] == [100.0, 101.0, 102.0]


def test_idle_time_builds_no_burst() -> None:
    t = FakeTime()
    p = pacer(60, None, t)
    assert p.reserve(0) == 0.0
    t.now = 30.0  # 30 s idle: still only one call at once, the next one 1 s later
    assert [p.reserve(0), p.reserve(0)] == [30.0, 31.0]


def test_acquire_sleeps_only_when_it_must() -> None:
    t = FakeTime()
    p = pacer(120, None, t)
    asyncio.run(p.acquire(10))
    t.now = 0.2
    asyncio.run(p.acquire(10))
    assert t.sleeps == [pytest.approx(0.3)]


def test_bad_limits_and_the_flags() -> None:
    with pytest.raises(PacingError, match="rpm must be a positive"):
        RatePacer(rpm=0)
    with pytest.raises(PacingError, match="tpm"):
        RatePacer(tpm=-5)
    assert make_pacer(None, None) is None
    made = make_pacer(30, None)
    assert isinstance(made, RatePacer) and made.rpm == 30 and isinstance(made, ModelPacer)


def test_estimate_tokens() -> None:
    body = b'{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"' + b"x" * 300
    body += b'"}]}'
    assert len(body) == 372  # 68 bytes of JSON around 300 x's, and 4 closing
    assert estimate_tokens(body) == 93 + 100
    ollama = b'{"options":{"num_predict":7},"prompt":"hi"}'
    assert estimate_tokens(ollama) == len(ollama) // 4 + 7
    assert estimate_tokens(b"not json at all!") == 4
    assert estimate_tokens(b"") == 0


def test_usage_tokens_in_each_providers_keys() -> None:
    assert usage_tokens({"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}) == 19
    assert usage_tokens({"input_tokens": 11, "output_tokens": 6}) == 17
    assert usage_tokens({"prompt_eval_count": 3, "eval_count": 4}) == 7
    assert usage_tokens(None) is None and usage_tokens({"other": 1}) is None


def test_retry_wait() -> None:
    limits = ProxyLimits(provider_backoff_s=0.5, provider_retry_max_wait_s=3.0)
    assert [retry_wait(n, {}, limits) for n in range(4)] == [0.5, 1.0, 2.0, 3.0]
    assert retry_wait(0, {"Retry-After": "2"}, limits) == 2.0
    assert retry_wait(0, {"Retry-After": "100"}, limits) == 3.0
    assert retry_wait(2, {"retry-after-ms": "250", "Retry-After": "1"}, limits) == 0.25
    assert retry_wait(0, {"Retry-After": "soon"}, limits) == 0.5
    in_a_while = email.utils.formatdate(usegmt=True)  # now: nothing left to wait
    assert retry_wait(0, {"Retry-After": in_a_while}, limits) == 0.0
