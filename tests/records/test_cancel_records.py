import asyncio

import pytest


async def test_a_cancelled_turn_records_its_started_calls_as_outcome_unknown(make_runtime):
    rt = make_runtime(allow=["extension/*"])
    started = asyncio.Event()

    @rt.tool(extension_id="ext")
    async def slow() -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    inv = rt.invocation()
    task = asyncio.create_task(inv.arun([{"id": "a", "name": "slow"}, {"id": "b", "name": "nope"}]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    calls = {c.call_id: c for c in rt.recorder.history(inv.id).calls}
    assert calls["a"].status == "outcome_unknown"
    assert calls["a"].result.error_code == "tool.cancelled"  # outcome_unknown, and why: the turn was cancelled
    assert "was cancelled by the client before its result arrived" in calls["a"].result.content
    assert "may or may not have run" in calls["a"].result.content
    assert calls["b"].status == "failed" and calls["b"].result.error_code == "tool.unknown_tool"


async def test_a_cancelled_turn_keeps_the_results_that_arrived(make_runtime):
    rt = make_runtime(allow=["extension/*"])
    started = asyncio.Event()

    @rt.tool(extension_id="ext")
    async def quick() -> str:
        """Quick."""
        return "done"

    @rt.tool(extension_id="ext", concurrent=False)  # alone, so the call after it has not started
    async def slow() -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    inv = rt.invocation()
    task = asyncio.create_task(inv.arun([{"id": "a", "name": "quick"}, {"id": "b", "name": "slow"},
                                         {"id": "c", "name": "quick"}]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    calls = {c.call_id: c for c in rt.recorder.history(inv.id).calls}
    assert (calls["a"].status, calls["a"].result.content) == ("completed", "done")
    assert calls["b"].status == "outcome_unknown" and calls["c"].status == "outcome_unknown"


async def test_a_cancelled_shell_records_its_own_result_and_resume_never_reruns_it(make_runtime):
    rt = make_runtime(allow=["builtin:workspace.shell"])
    inv = rt.invocation()
    marker = inv.run_state.workspace_root / "output" / "c.txt"
    # "before" is printed before the marker is written, so once the marker exists the output is in the
    # pipe, and the loop reads it on its next pass (the sleep after the marker), before the cancel.
    command = "echo before; echo kept > /output/c.txt; for i in $(seq 1 200); do sleep 0.05; done; echo late"
    task = asyncio.create_task(inv.arun([{"id": "sh", "name": "workspace_shell", "arguments": {"command": command}}]))
    for _ in range(1000):
        if marker.exists():
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [call] = rt.recorder.history(inv.id).calls
    assert call.result.error_code == "workspace.shell_cancelled"
    assert call.result.content.startswith("Command cancelled.") and "before" in call.result.content
    assert "late" not in call.result.content and marker.read_text() == "kept\n"
    resumed = rt.resume(inv.id)
    [again] = rt.recorder.history(resumed.id).calls
    assert again.result.error_code == "workspace.shell_cancelled" and marker.read_text() == "kept\n"
