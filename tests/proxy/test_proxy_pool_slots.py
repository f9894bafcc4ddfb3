"""The upstream pool's bound (`upstream._Slots`): slots go to waiters in turn, a wait that
times out leaves the queue, and a slot handed over as its wait ends is passed on."""

from __future__ import annotations

import asyncio

import pytest

from chaosproxy.proxy.upstream import _Slots


async def test_waiters_get_freed_slots_in_turn_and_newcomers_queue_behind() -> None:
    slots = _Slots(1)
    assert slots.take() and not slots.take()
    order: list[str] = []

    async def wait(name: str) -> None:
        await slots.wait(5)
        order.append(name)

    first = asyncio.create_task(wait("first"))
    await asyncio.sleep(0)
    second = asyncio.create_task(wait("second"))
    await asyncio.sleep(0)
    slots.release()
    assert not slots.take()  # the freed slot is the first waiter's, not a newcomer's
    await first
    slots.release()
    await second
    slots.release()
    assert order == ["first", "second"] and slots._value == 1 and not slots.waiters


async def test_a_wait_that_times_out_leaves_the_queue() -> None:
    slots = _Slots(1)
    assert slots.take()
    with pytest.raises(TimeoutError):
        await slots.wait(0.05)
    assert not slots.waiters
    slots.release()
    assert slots._value == 1 and slots.take()


async def test_a_slot_handed_over_as_the_wait_is_cancelled_is_passed_on() -> None:
    slots = _Slots(1)
    assert slots.take()
    gone = asyncio.create_task(slots.wait(5))
    await asyncio.sleep(0)
    slots.release()  # the slot is the waiter's now ...
    gone.cancel()  # ... but it is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert slots._value == 1 and not slots.waiters  # the slot was not lost
