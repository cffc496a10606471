"""`deadline.Deadline`: `asyncio.timeout` with one timer per event loop (a tool call's timeout in dispatch, an MCP
call's own in sources/mcp/calls.py). Each case runs the same block under both and expects the same outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tooldeck.deadline import _DEADLINES, Deadline

Timeout = Callable[[float | None], Any]
BOTH = pytest.mark.parametrize("timeout", [asyncio.timeout, Deadline], ids=["asyncio", "deadline"])


@BOTH
async def test_a_block_past_its_deadline_is_cancelled_and_raises_timeout_error(timeout: Timeout) -> None:
    reached = []
    with pytest.raises(TimeoutError) as caught:
        async with timeout(0.02):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                reached.append("cancelled")
                raise
    assert reached == ["cancelled"] and isinstance(caught.value.__cause__, asyncio.CancelledError)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


@BOTH
async def test_a_block_done_in_time_returns_and_none_means_no_deadline(timeout: Timeout) -> None:
    async with timeout(30):
        await asyncio.sleep(0)
    async with timeout(None):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.01)  # nothing fires later


@BOTH
async def test_nested_deadlines_each_raise_where_they_were_set(timeout: Timeout) -> None:
    events = []
    async with timeout(30):
        try:
            async with timeout(0.02):
                await asyncio.sleep(30)
        except TimeoutError:
            events.append("inner")
        await asyncio.sleep(0.01)
    events.append("outer in time")
    with pytest.raises(TimeoutError):
        async with timeout(0.02), timeout(30):
            await asyncio.sleep(30)
    assert events == ["inner", "outer in time"]


@BOTH
async def test_a_cancellation_from_outside_stays_a_cancellation(timeout: Timeout) -> None:
    async def victim() -> None:
        async with timeout(30):
            await asyncio.sleep(30)

    task = asyncio.create_task(victim())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@BOTH
async def test_a_shorter_deadline_entered_later_fires_first(timeout: Timeout) -> None:
    order: list[str] = []

    async def wait(name: str, seconds: float) -> None:
        try:
            async with timeout(seconds):
                await asyncio.sleep(30)
        except TimeoutError:
            order.append(name)

    await asyncio.gather(wait("long", 0.3), wait("short", 0.02), wait("middle", 0.1))
    assert order == ["short", "middle", "long"]


async def test_one_timer_serves_every_deadline_of_a_loop() -> None:
    async def quick() -> None:
        async with Deadline(60):
            await asyncio.sleep(0)

    await asyncio.gather(*(quick() for _ in range(50)))
    deadlines = _DEADLINES[asyncio.get_running_loop()]
    assert deadlines.waiting == {}  # each left its entry when it finished
    timers = [h for h in asyncio.get_running_loop()._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
    assert timers == [deadlines.timer]  # armed once, for the first deadline; it moves on when it fires
