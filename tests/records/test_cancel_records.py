import asyncio

import pytest

import tooldeck


async def test_a_cancelled_turn_records_its_started_calls_as_outcome_unknown(tmp_path):
    rt = tooldeck.Runtime(tmp_path, profile={"allow": ["extension/*"]})
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
    assert calls["a"].result.error_code == "tool.outcome_unknown"
    assert "may or may not have run" in calls["a"].result.content
    assert calls["b"].status == "failed" and calls["b"].result.error_code == "tool.unknown_tool"
    rt.close()
