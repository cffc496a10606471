"""Differential property: writing results while a turn runs changes when they are written, never
what. The same random turns (calls that finish on their first step, suspend once, sleep alone or
together, spill to a file, hand over effects, or are refused) run with records off, with a flush at
every wait (delay 0) and with no flush before the end of the turn: the model gets the same results,
the host the same effects in call order, the records the same calls, and every result is projected
once (one spill file per spilled call)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tooldeck
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.records import writer

SAFE = ToolAnnotations(concurrency_safe=True)
INLINE_LIMIT = 200


def _runtime(home: Path, records: bool) -> tooldeck.Runtime:
    rt = tooldeck.Runtime(home, builtins=[], records=records,
                          profile={"allow": ["extension/*"], "result_inline_limit": INLINE_LIMIT,
                                   "max_calls_per_invocation": 10_000})

    @rt.tool("d", "inline", annotations=SAFE)
    def inline(n: int) -> str:
        """Finishes on its first step."""
        return f"inline {n}"

    @rt.tool("d", "once", annotations=SAFE)
    async def once(n: int) -> str:
        """Suspends once."""
        await asyncio.sleep(0)
        return f"once {n}"

    @rt.tool("d", "nap", annotations=SAFE)
    async def nap(n: int, ms: int) -> str:
        """Sleeps, together with its siblings."""
        await asyncio.sleep(ms / 1000)
        return f"nap {n} {ms}"

    @rt.tool("d", "alone")
    async def alone(n: int, ms: int) -> str:
        """Sleeps, alone."""
        await asyncio.sleep(ms / 1000)
        return f"alone {n} {ms}"

    @rt.tool("d", "big", annotations=SAFE)
    async def big(n: int) -> str:
        """A result over the inline limit: projection spills it to a file."""
        await asyncio.sleep(0.001)
        return f"big {n} " + "x" * (INLINE_LIMIT * 2)

    @rt.tool("d", "effect", annotations=SAFE)
    async def effect(n: int) -> ToolOutput:
        """Hands the host an effect."""
        await asyncio.sleep(0.001 * (n % 3))
        return ToolOutput(f"effect {n}", effects=[ToolEffect("file_written", {"n": n})])

    return rt


_CALL = st.one_of(
    st.tuples(st.sampled_from(("inline", "once", "big", "effect")), st.just(None)),
    st.tuples(st.sampled_from(("nap", "alone")), st.integers(0, 4)),
    st.tuples(st.sampled_from(("no_such_tool", "bad_args")), st.just(None)),
)


def _wire(turn: list[tuple[str, int | None]], round_no: int) -> list[dict[str, Any]]:
    calls = []
    for k, (name, ms) in enumerate(turn):
        n = round_no * 10 + k
        args: Any = {"n": n} if ms is None else {"n": n, "ms": ms}
        if name == "bad_args":
            name, args = "nap", '{"n": '
        calls.append({"id": f"c{round_no}_{k}", "name": name, "arguments": args})
    return calls


_RUNTIMES: dict[str, Any] = {}


def _runtimes() -> dict[str, tooldeck.Runtime]:
    if not _RUNTIMES:
        _RUNTIMES["dir"] = tempfile.TemporaryDirectory()
        root = Path(_RUNTIMES["dir"].name)
        _RUNTIMES["off"] = _runtime(root / "off", False)
        _RUNTIMES["flush"] = _runtime(root / "flush", True)
        _RUNTIMES["end"] = _runtime(root / "end", True)
    return _RUNTIMES


@pytest.fixture(scope="module", autouse=True)
def _close_runtimes() -> Any:
    yield
    if _RUNTIMES:
        for key in ("off", "flush", "end"):
            _RUNTIMES.pop(key).close()
        _RUNTIMES.pop("dir").cleanup()


def _normal(value: Any, inv_id: str) -> Any:
    """Spill paths name the invocation; everything else must be identical."""
    return str(value).replace(inv_id, "INV")


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(st.lists(_CALL, min_size=1, max_size=6), min_size=1, max_size=3))
def test_writing_results_while_a_turn_runs_changes_when_never_what(turns: list[list[tuple[str, int | None]]]) -> None:
    runtimes = _runtimes()
    seen: dict[str, Any] = {}
    for variant, delay in (("off", None), ("flush", 0.0), ("end", 3600.0)):
        rt = runtimes[variant]
        inv = rt.invocation()
        default, writer.FLUSH_DELAY_S = writer.FLUSH_DELAY_S, delay if delay is not None else writer.FLUSH_DELAY_S
        try:
            results = [rt.loop().run_until_complete(inv.arun(_wire(turn, r))) for r, turn in enumerate(turns)]
        finally:
            writer.FLUSH_DELAY_S = default
        out: dict[str, Any] = {
            "results": [[(_normal(x.content, inv.id), x.is_error, x.error_code, _normal(x.structured, inv.id))
                         for x in turn] for turn in results],
            "effects": [(call_id, e.to_dict()) for call_id, e in inv.effects],
        }
        spill = inv.run_state.workspace_root / "tool-results" / inv.id
        files = sorted(p.name for p in spill.iterdir()) if spill.exists() else []
        assert not [f for f in files if "-2." in f], files  # every result projected exactly once
        out["spilled"] = files
        if delay is not None:
            out["records"] = [
                (c.round, c.index, c.call_id, c.status, c.raw_arguments, c.arguments, c.tool_id,
                 _normal(c.result.content, inv.id), c.result.is_error, c.result.error_code,
                 _normal(c.result.structured, inv.id), c.result.effects, c.result.raw_result)
                for c in rt.recorder.history(inv.id).calls]  # type: ignore[attr-defined]
            assert all(c[3] != "started" for c in out["records"])
        seen[variant] = out
    assert seen["flush"]["results"] == seen["end"]["results"] == seen["off"]["results"]
    assert seen["flush"]["effects"] == seen["end"]["effects"] == seen["off"]["effects"]
    assert seen["flush"]["spilled"] == seen["end"]["spilled"] == seen["off"]["spilled"]
    assert seen["flush"]["records"] == seen["end"]["records"]
