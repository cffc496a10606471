"""A relayed call's progress and log messages reach the downstream client in the order the server sent them, and
before the call's result (sources/mcp/call_notifications.py): the SDK runs each notification's callback in a task
of its own, as these tests do, so without the relay a notification whose send has to wait is overtaken by the next
one or by the result (seen under load: the last `notifications/progress` of a call dropped after its result ended
the client's event stream)."""

from __future__ import annotations

import asyncio
import contextlib

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.sources.mcp import call_notifications
from tooldeck.sources.mcp.call_notifications import CallNotifications


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

    async def log_message(self, params: types.LoggingMessageNotificationParams) -> None:
        self.seen.append(f"log {params.data}")

    async def sampling(self, params: types.CreateMessageRequestParams) -> str:
        return f"sampled {params.max_tokens}"

    upstream_log_level = "info"


async def _relay_call(relay: CallNotifications, client: Client, count: int) -> None:
    """What the SDK's read loop does with `count` progress notifications and then the call's answer: a task per
    notification, then the caller resumes, drains, and the result goes out."""
    tasks = [asyncio.get_running_loop().create_task(relay.progress(float(i), float(count), f"step {i}"))
             for i in range(1, count + 1)]
    await asyncio.sleep(0)  # the answer arrives after the notifications (the read loop's order)
    await relay.drain()
    client.seen.append("result")
    await asyncio.gather(*tasks)


async def test_a_slow_first_progress_is_neither_overtaken_by_the_next_nor_by_the_result() -> None:
    client = Client([0.05])
    await _relay_call(CallNotifications(client), client, 3)
    assert client.seen == ["progress 1", "progress 2", "progress 3", "result"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0005, 0.002, 0.004]), min_size=1, max_size=8))
def test_any_send_times_keep_the_servers_order_and_the_result_last(delays: list[float]) -> None:
    client = Client(delays)
    asyncio.run(_relay_call(CallNotifications(client), client, len(delays)))
    assert client.seen == [f"progress {i}" for i in range(1, len(delays) + 1)] + ["result"]


async def test_a_client_that_never_takes_progress_holds_the_result_back_only_so_long(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call_notifications, "NOTIFY_SEND_S", 0.1)
    client = Client([3600.0])
    relay = CallNotifications(client)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _relay_call(relay, client, 4)
    assert loop.time() - started < 2.0
    # The stuck send was stopped (not left running), and the call's later progress was dropped, not sent after
    # the result.
    assert client.cancelled == 1
    assert client.seen == ["result"]
    await relay.progress(5.0, 5.0, "late")  # the relay stays quiet for this call
    assert client.seen == ["result"]


async def test_a_slow_client_holds_the_result_back_only_so_long_however_much_progress_is_queued(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Each send is under the per-send bound, but 200 of them would hold the result for 200 × 0.05 s = 10 s.
    monkeypatch.setattr(call_notifications, "NOTIFY_SEND_S", 0.2)
    client = Client([0.05] * 200)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _relay_call(CallNotifications(client), client, 200)
    assert loop.time() - started < 1.5
    sent = [int(s.split()[1]) for s in client.seen[:-1]]
    assert client.seen[-1] == "result" and sent == sorted(sent) and 0 < len(sent) < 200  # in order, the rest dropped


async def test_a_flood_of_progress_queues_a_bounded_number_and_keeps_the_latest() -> None:
    client = Client([0.05] + [0.0] * 10_000)
    relay = CallNotifications(client)
    tasks = [asyncio.get_running_loop().create_task(relay.progress(float(i), 10_000.0, None)) for i in range(1, 10_001)]
    for _ in range(5):
        await asyncio.sleep(0)
    # the notifications that arrived while the first was being sent do not each wait in a task of their own
    assert sum(not task.done() for task in tasks) <= 1
    await relay.drain()
    await asyncio.gather(*tasks)
    sent = [int(s.split()[1]) for s in client.seen]
    assert sent[0] == 1 and sent[-1] == 10_000 and sent == sorted(sent)
    assert len(sent) <= 1 + call_notifications.MAX_QUEUED


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0005, 0.002]), min_size=1, max_size=60), st.integers(1, 6))
def test_past_the_queue_bound_the_client_gets_the_latest_in_order(delays: list[float], bound: int) -> None:
    client = Client(delays)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(call_notifications, "MAX_QUEUED", bound)
        relay = CallNotifications(client)
        asyncio.run(_relay_call(relay, client, len(delays)))
    sent = [int(s.split()[1]) for s in client.seen[:-1]]
    assert client.seen[-1] == "result"
    assert sent == sorted(set(sent)) and sent[0] == 1 and sent[-1] == len(delays)
    assert len(sent) + relay.dropped == len(delays) and len(sent) <= 1 + bound


def _log(data: str) -> types.LoggingMessageNotificationParams:
    return types.LoggingMessageNotificationParams(level="info", data=data)


async def test_log_messages_and_progress_keep_the_servers_order_between_them() -> None:
    client = Client([0.05, 0.0, 0.01])  # the first progress is slow to send: everything after it waits its turn
    relay = CallNotifications(client)
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(relay.progress(1.0, None, None)), loop.create_task(relay.log_message(_log("a"))),
             loop.create_task(relay.progress(2.0, None, None)), loop.create_task(relay.log_message(_log("b"))),
             loop.create_task(relay.progress(3.0, None, None))]
    await asyncio.sleep(0)
    await relay.drain()
    client.seen.append("result")
    await asyncio.gather(*tasks)
    assert client.seen == ["progress 1", "log a", "progress 2", "log b", "progress 3", "result"]


async def test_past_the_bound_progress_is_dropped_before_any_log_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call_notifications, "MAX_QUEUED", 4)
    client = Client([0.05])
    relay = CallNotifications(client)
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(relay.progress(1.0, None, None)), loop.create_task(relay.log_message(_log("first")))]
    tasks += [loop.create_task(relay.progress(float(i), None, None)) for i in range(2, 100)]
    tasks.append(loop.create_task(relay.log_message(_log("last"))))
    await asyncio.sleep(0)
    await relay.drain()
    await asyncio.gather(*tasks)
    assert client.seen == ["progress 1", "log first", "progress 98", "progress 99", "log last"]
    assert relay.dropped == 96
    # only log messages queued: the oldest one goes
    tasks = [loop.create_task(relay.progress(1.0, None, None))]
    tasks += [loop.create_task(relay.log_message(_log(str(i)))) for i in range(6)]
    await asyncio.sleep(0)
    await relay.drain()
    await asyncio.gather(*tasks)
    assert client.seen[5:] == ["progress 1", "log 2", "log 3", "log 4", "log 5"]


async def test_requests_and_the_log_level_go_straight_to_the_peer() -> None:
    relay = CallNotifications(Client())
    params = types.CreateMessageRequestParams(messages=[], max_tokens=7)
    assert await relay.sampling(params) == "sampled 7"
    assert relay.upstream_log_level == "info"


async def test_a_send_that_ends_as_the_drain_gives_up_still_goes_before_the_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen under the parallel suite: the send in flight at the drain's deadline finished in the same turn of the
    loop and went out after the result. Here the peer finishes that send despite its cancel, deterministically."""
    monkeypatch.setattr(call_notifications, "NOTIFY_SEND_S", 0.1)

    class Stubborn:
        def __init__(self) -> None:
            self.seen: list[str] = []

        async def progress(self, progress: float, total: float | None, message: str | None) -> None:
            if progress == 1.0:
                await asyncio.sleep(0.01)  # the second send starts after the drain: the drain's deadline comes first
            else:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(3600)
            self.seen.append(f"progress {int(progress)}")

    peer = Stubborn()
    relay = CallNotifications(peer)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(relay.progress(float(i), None, None)) for i in (1, 2, 3)]
    await asyncio.sleep(0)
    await relay.drain()
    peer.seen.append("result")
    await asyncio.gather(*tasks)
    assert peer.seen == ["progress 1", "progress 2", "result"]
    assert relay.dropped == 1  # the one never sent (the peer finished the stopped send anyway)
