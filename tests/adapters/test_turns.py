"""The turn batcher under the adapters, on a real runtime with SQLite records: which calls form one
turn, that turns never overlap, what cancellation stops, that faults reach every caller, and that a
batched turn gives exactly what a direct `arun` gives."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tooldeck
from tooldeck.adapters._turns import TurnBatcher, run_sync
from tooldeck.core.errors import HostFault

from .conftest import MakeRuntime, history, workspace


def add_probe_tools(rt: tooldeck.Runtime, log: list[str]) -> None:
    @rt.tool(extension_id="probe")
    async def slow(tag: str, seconds: float = 0.05) -> str:
        """Log its start and end around a sleep."""
        log.append(f"start {tag}")
        await asyncio.sleep(seconds)
        log.append(f"end {tag}")
        return tag

    @rt.tool(extension_id="probe")
    def slow_sync(tag: str) -> str:
        """A blocking tool: logs its start and end around a sleep."""
        log.append(f"start {tag}")
        time.sleep(0.05)
        log.append(f"end {tag}")
        return tag


def no_overlap(log: list[str]) -> bool:
    """Every start is followed by its own end before any other start."""
    return all(log[i].split()[1] == log[i + 1].split()[1] and log[i + 1].startswith("end")
               for i in range(0, len(log), 2))


async def test_calls_started_together_are_one_turn_and_an_awaited_call_the_next(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    batcher = TurnBatcher(inv)
    results = await asyncio.gather(*(batcher.call(f"c{i}", "forecast", {"city": f"c{i}"}) for i in range(3)))
    assert [r.call_id for r in results] == ["c0", "c1", "c2"]
    await batcher.call("c3", "forecast", '{"city": "x"}')
    assert [(c.call_id, c.round, c.index) for c in history(rt, inv.id).calls] == [
        ("c0", 1, 0), ("c1", 1, 1), ("c2", 1, 2), ("c3", 2, 0)]


async def test_a_late_call_is_the_next_turn_and_starts_after_the_first_ended(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    log: list[str] = []
    add_probe_tools(rt, log)
    inv = rt.invocation(run_id="r")
    batcher = TurnBatcher(inv)
    first = asyncio.create_task(batcher.call("a", "slow", {"tag": "a", "seconds": 0.2}))
    while "start a" not in log:  # the first turn is running
        await asyncio.sleep(0.005)
    second = await batcher.call("b", "slow", {"tag": "b", "seconds": 0})
    assert (await first).content == "a" and second.content == "b"
    assert log == ["start a", "end a", "start b", "end b"]
    assert [(c.call_id, c.round) for c in history(rt, inv.id).calls] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize("cancelled", [0, 1], ids=["first-call", "second-call"])
async def test_a_call_cancelled_before_its_turn_closed_never_runs_and_is_not_recorded(
        make_runtime: MakeRuntime, cancelled: int) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    batcher = TurnBatcher(inv)
    tasks = [asyncio.create_task(batcher.call(f"c{i}", "workspace_write_file",
                                              {"path": f"output/{i}.md", "content": str(i)})) for i in range(2)]
    await asyncio.sleep(0)  # both joined the batch; it closes on a later loop iteration
    tasks[cancelled].cancel()
    kept = 1 - cancelled
    assert not (await tasks[kept]).is_error
    with pytest.raises(asyncio.CancelledError):
        await tasks[cancelled]
    out = workspace(rt, "r") / "output"
    assert sorted(p.name for p in out.iterdir()) == [f"{kept}.md"]
    assert [c.call_id for c in history(rt, inv.id).calls] == [f"c{kept}"]


@pytest.mark.parametrize("callers", [1, 2])
async def test_cancelling_every_caller_stops_the_running_tools(make_runtime: MakeRuntime, tmp_path: Path,
                                                               callers: int) -> None:
    rt = make_runtime()
    stopped: list[str] = []

    @rt.tool(extension_id="probe", annotations=tooldeck.ToolAnnotations(concurrency_safe=True))
    async def spin(tag: str) -> str:
        """Append a line every 10 ms until cancelled."""
        try:
            while True:
                with (tmp_path / tag).open("a") as f:
                    f.write("beat\n")
                await asyncio.sleep(0.01)
        finally:
            stopped.append(tag)

    inv = rt.invocation(run_id="r")
    batcher = TurnBatcher(inv)
    tags = [f"t{i}" for i in range(callers)]
    tasks = [asyncio.create_task(batcher.call(tag, "spin", {"tag": tag})) for tag in tags]
    deadline = time.monotonic() + 30
    while not all((tmp_path / tag).exists() for tag in tags):
        assert time.monotonic() < deadline, "the tools never started"
        await asyncio.sleep(0.01)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with pytest.raises(asyncio.CancelledError):
            await task
    deadline = time.monotonic() + 30
    while sorted(stopped) != tags:
        assert time.monotonic() < deadline, f"not cancelled: {sorted(set(tags) - set(stopped))}"
        await asyncio.sleep(0.01)
    sizes = [(tmp_path / tag).stat().st_size for tag in tags]
    await asyncio.sleep(0.1)
    assert [(tmp_path / tag).stat().st_size for tag in tags] == sizes  # no beat after the cancellation
    assert {c.status for c in history(rt, inv.id).calls} == {"outcome_unknown"}


async def test_one_cancelled_caller_leaves_the_turn_running_for_the_others(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    log: list[str] = []
    add_probe_tools(rt, log)
    inv = rt.invocation(run_id="r")
    batcher = TurnBatcher(inv)
    gone = asyncio.create_task(batcher.call("a", "slow", {"tag": "a", "seconds": 0.1}))
    stays = asyncio.create_task(batcher.call("b", "slow", {"tag": "b", "seconds": 0.1}))
    while "start a" not in log:
        await asyncio.sleep(0.005)
    gone.cancel()
    assert (await stays).content == "b"
    calls = {c.call_id: c.status for c in history(rt, inv.id).calls}
    assert calls == {"a": "completed", "b": "completed"}  # the turn ran to its end; only the caller left


class FailingRecorder:
    """A records port that fails the turn's first write, as a full disk would."""

    recording = True

    def invocation_started(self, *args: Any) -> None:
        pass

    def calls_requested(self, *args: Any) -> None:
        pass

    def calls_started(self, *args: Any) -> None:
        pass

    def calls_admitted(self, *args: Any) -> None:
        raise HostFault("records.write_failed", "disk full")

    def calls_finished(self, *args: Any) -> None:
        pass

    def close(self) -> None:
        pass


async def test_a_runtime_fault_reaches_every_caller_of_the_turn(tmp_path: Path) -> None:
    rt = tooldeck.open(tmp_path / "home", records=FailingRecorder())
    try:
        batcher = TurnBatcher(rt.invocation(run_id="r"))
        outcomes = await asyncio.gather(batcher.call("c1", "dice_roll", {"formula": "d6"}),
                                        batcher.call("c2", "dice_roll", {"formula": "d6"}), return_exceptions=True)
        assert all(isinstance(o, HostFault) and o.code == "records.write_failed" for o in outcomes), outcomes
    finally:
        rt.close()


async def test_sync_calls_from_threads_run_one_at_a_time(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    log: list[str] = []
    add_probe_tools(rt, log)
    inv = rt.invocation(run_id="r")
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            assert run_sync(inv, f"c{i}", "slow_sync", {"tag": str(i)}).content == str(i)
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    await asyncio.to_thread(lambda: ([t.start() for t in threads], [t.join() for t in threads]))
    assert errors == []
    assert len(log) == 8 and no_overlap(log)
    assert sorted(c.round for c in history(rt, inv.id).calls) == [1, 2, 3, 4]


# -- differential: a batched turn is the turn `arun` gives for the same calls ---------------------------

NAMES = st.sampled_from(["echo", "add", "nope", "run_tool", "find_tools"])
ARGUMENTS = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.sampled_from(['{"text": "hi"}', '{"a": 1, "b": 2}', '{"a": "1"}', "[1, 2", "null", '{"names": ["add"]}']),
    st.dictionaries(st.sampled_from(["text", "a", "b", "x"]),
                    st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none()), max_size=3),
)
CALLS = st.lists(st.tuples(NAMES, ARGUMENTS), min_size=1, max_size=5)


def _twin(home: Path) -> tooldeck.Runtime:
    rt = tooldeck.open(home, records=False)

    @rt.tool(extension_id="calc")
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    @rt.tool(extension_id="calc")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return rt


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=CALLS, loading=st.sampled_from(["eager", "deferred"]))
def test_a_batched_turn_equals_a_direct_turn(tmp_path: Path, calls: list[tuple[str, Any]], loading: str) -> None:
    wire = [(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)]
    direct_rt, batched_rt = _twin(tmp_path / "direct"), _twin(tmp_path / "batched")
    try:
        profile = {"loading": loading}

        async def both() -> tuple[list[Any], list[Any]]:
            direct = await direct_rt.invocation(profile=profile).arun(
                [{"id": cid, "name": name, **({} if args is None else {"arguments": args})}
                 for cid, name, args in wire])
            batcher = TurnBatcher(batched_rt.invocation(profile=profile))
            batched = await asyncio.gather(*(batcher.call(cid, name, args) for cid, name, args in wire))
            return direct, list(batched)

        direct, batched = asyncio.run(both())
        assert [r.to_dict() for r in batched] == [r.to_dict() for r in direct]
    finally:
        direct_rt.close()
        batched_rt.close()
