"""A relayed call's progress reaches the downstream client in the order the server sent it, and before the call's
result (sources/mcp/progress_relay.py): the SDK runs each progress callback in a task of its own, as these
tests do, so without the relay a notification whose send has to wait is overtaken by the next one or by the
result (seen under load: the last `notifications/progress` of a call dropped after its result ended the
client's event stream)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.sources.mcp import progress_relay
from tooldeck.sources.mcp.progress_relay import ProgressRelay


class Client:
    """The downstream end: what it received, in order; sending the n-th progress takes `delays[n]` seconds."""

    def __init__(self, delays: list[float] | None = None) -> None:
        self.delays = delays or []
        self.seen: list[str] = []
        self.cancelled = 0

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        n = int(progress)
        if n - 1 < len(self.delays):
            try:
                await asyncio.sleep(self.delays[n - 1])
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        self.seen.append(f"progress {n}")


async def _relay_call(relay: ProgressRelay, client: Client, count: int) -> None:
    """What the SDK's read loop does with `count` progress notifications and then the call's answer: a task per
    notification, then the caller resumes, drains, and the result goes out."""
    tasks = [asyncio.get_running_loop().create_task(relay(float(i), float(count), f"step {i}"))
             for i in range(1, count + 1)]
    await asyncio.sleep(0)  # the answer arrives after the notifications (the read loop's order)
    await relay.drain()
    client.seen.append("result")
    await asyncio.gather(*tasks)


async def test_a_slow_first_progress_is_neither_overtaken_by_the_next_nor_by_the_result() -> None:
    client = Client([0.05])
    await _relay_call(ProgressRelay(client), client, 3)
    assert client.seen == ["progress 1", "progress 2", "progress 3", "result"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0005, 0.002, 0.004]), min_size=1, max_size=8))
def test_any_send_times_keep_the_servers_order_and_the_result_last(delays: list[float]) -> None:
    client = Client(delays)
    asyncio.run(_relay_call(ProgressRelay(client), client, len(delays)))
    assert client.seen == [f"progress {i}" for i in range(1, len(delays) + 1)] + ["result"]


async def test_a_client_that_never_takes_progress_holds_the_result_back_only_so_long(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_relay, "PROGRESS_SEND_S", 0.1)
    client = Client([3600.0])
    relay = ProgressRelay(client)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _relay_call(relay, client, 4)
    assert loop.time() - started < 2.0
    # The stuck send was stopped (not left running), and the call's later progress was dropped, not sent after
    # the result.
    assert client.cancelled == 1
    assert client.seen == ["result"]
    await relay(5.0, 5.0, "late")  # the relay stays quiet for this call
    assert client.seen == ["result"]


async def test_a_slow_client_holds_the_result_back_only_so_long_however_much_progress_is_queued(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Each send is under the per-send bound, but 200 of them would hold the result for 200 × 0.05 s = 10 s.
    monkeypatch.setattr(progress_relay, "PROGRESS_SEND_S", 0.2)
    client = Client([0.05] * 200)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _relay_call(ProgressRelay(client), client, 200)
    assert loop.time() - started < 1.5
    sent = [int(s.split()[1]) for s in client.seen[:-1]]
    assert client.seen[-1] == "result" and sent == sorted(sent) and 0 < len(sent) < 200  # in order, the rest dropped


async def test_a_flood_of_progress_queues_a_bounded_number_and_keeps_the_latest() -> None:
    client = Client([0.05] + [0.0] * 10_000)
    relay = ProgressRelay(client)
    tasks = [asyncio.get_running_loop().create_task(relay(float(i), 10_000.0, None)) for i in range(1, 10_001)]
    for _ in range(5):
        await asyncio.sleep(0)
    # the notifications that arrived while the first was being sent do not each wait in a task of their own
    assert sum(not task.done() for task in tasks) <= 1
    await relay.drain()
    await asyncio.gather(*tasks)
    sent = [int(s.split()[1]) for s in client.seen]
    assert sent[0] == 1 and sent[-1] == 10_000 and sent == sorted(sent)
    assert len(sent) <= 1 + progress_relay.MAX_QUEUED


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0005, 0.002]), min_size=1, max_size=60), st.integers(1, 6))
def test_past_the_queue_bound_the_client_gets_the_latest_in_order(delays: list[float], bound: int) -> None:
    client = Client(delays)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(progress_relay, "MAX_QUEUED", bound)
        relay = ProgressRelay(client)
        asyncio.run(_relay_call(relay, client, len(delays)))
    sent = [int(s.split()[1]) for s in client.seen[:-1]]
    assert client.seen[-1] == "result"
    assert sent == sorted(set(sent)) and sent[0] == 1 and sent[-1] == len(delays)
    assert len(sent) + relay.dropped == len(delays) and len(sent) <= 1 + bound
