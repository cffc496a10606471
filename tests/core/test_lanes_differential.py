"""The hot-path lanes give what the general paths give (issue 18.5): same results, same records.

Each layer keeps one fast lane beside its general path:

- the invocation: `_one_call` (one call, records off) beside `_turn` (a turn that is not a list
  always takes `_turn`);
- the gate: `Gate.check`'s inline decode beside `Gate.check_general` (every argument through
  `ToolArguments.decode`);
- dispatch: `Executable.direct` (`fn(**args)`, no CallContext) beside `Executable.fn(args, ctx)`.

Four runtimes on real SQLite files in their own home dirs (records on and off, fast and general) run
the same generated turns, one call or several, with valid, invalid and odd arguments and names. The
fast and general runtimes must give equal results and equal records, and records on must not change
a result.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tooldeck
from tests.core.strategies import ARGUMENTS, MISSING
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.core.errors import ToolCallError
from tooldeck.core.rawvalue import RawObject
from tooldeck.records.reader import InvocationHistory

SAFE = ToolAnnotations(read_only=True, concurrency_safe=True)


def _register(rt: tooldeck.Runtime) -> None:
    @rt.tool("lanes", annotations=SAFE)
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @rt.tool("lanes", annotations=SAFE)
    async def later(a: int, b: int = 0) -> str:
        """Add after yielding to the event loop once (a call that suspends)."""
        await asyncio.sleep(0)
        return f"later:{a + b}"

    @rt.tool("lanes", blocking=False)
    def echo(text: str, times: int = 1) -> str:
        """Echo a text (sync, inline)."""
        if times < 0:
            raise ToolCallError("lanes.negative", "times must be at least 0")
        return text * min(times, 3)

    @rt.tool("lanes")
    def note(path: str, tags: list[str] | None = None) -> dict[str, Any]:
        """Keep a note (sync, on a worker thread; a model-converted argument)."""
        return {"path": path, "tags": tags or []}

    @rt.tool("lanes")
    async def nothing() -> str:
        """No arguments."""
        return "nothing to do"

    @rt.tool("lanes", input_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                                    "required": ["n"]})
    def halve(n: int) -> Any:
        """Halve an even number (an explicit schema; fails on odd numbers)."""
        if n % 2:
            raise ValueError(f"{n} is odd")
        return tooldeck.ToolOutput(f"half of {n}", structured={"half": n // 2})


def _general(rt: tooldeck.Runtime) -> None:
    """Take every executable's general path: `fn(args, ctx)`, never `direct`."""
    resolve = rt.extensions.resolve

    def without_direct(tool_id: Any) -> Any:
        executable = resolve(tool_id)
        return None if executable is None else dataclasses.replace(executable, direct=None)

    rt.extensions.resolve = without_direct  # type: ignore[method-assign]


@dataclasses.dataclass
class Lane:
    rt: tooldeck.Runtime
    fast: bool

    def run(self, turn: list[Any]) -> tuple[tooldeck.Invocation, Any]:
        inv = self.rt.invocation(run_id="lanes")
        if not self.fast:
            inv.gate.check = inv.gate.check_general  # type: ignore[method-assign]
        try:
            return inv, inv.run(turn if self.fast else tuple(turn))  # type: ignore[arg-type]
        except tooldeck.TooldeckError as exc:
            return inv, (exc.code, exc.message)


@contextmanager
def lanes(tmp_path: Path) -> Iterator[dict[tuple[bool, bool], Lane]]:
    """(records, fast) → a runtime with its own home dir."""
    with ExitStack() as stack:
        out = {}
        for records in (False, True):
            for fast in (True, False):
                home = tmp_path / f"{'on' if records else 'off'}-{'fast' if fast else 'general'}"
                rt = stack.enter_context(tooldeck.Runtime(home, records=records, builtins=[],
                                                          profile={"max_calls_per_invocation": 6}))
                _register(rt)
                if not fast:
                    _general(rt)
                out[(records, fast)] = Lane(rt, fast)
        yield out


# -- generated turns ------------------------------------------------------------------------------
VALID = {
    "add": st.fixed_dictionaries({"a": st.integers(-(2**70), 2**70), "b": st.integers(-5, 5)}),
    "later": st.fixed_dictionaries({"a": st.integers(-9, 9)}, optional={"b": st.integers(-9, 9)}),
    "echo": st.fixed_dictionaries({"text": st.text(max_size=6), "times": st.sampled_from([-1, 0, 1, 4])}),
    "note": st.fixed_dictionaries({"path": st.text(max_size=8)},
                                  optional={"tags": st.one_of(st.none(), st.lists(st.text(max_size=4), max_size=3))}),
    "nothing": st.just({}),
    "halve": st.fixed_dictionaries({"n": st.integers(-50, 50)}),
}
INVALID = st.dictionaries(st.sampled_from(["a", "b", "text", "times", "path", "tags", "n", "zzz"]),
                          st.one_of(st.integers(-3, 3), st.text(max_size=3), st.none(), st.booleans(),
                                    st.floats(allow_nan=False), st.lists(st.integers(), max_size=2)), max_size=3)
NAMES = st.sampled_from([*VALID, "nope", "", "find_tools", "run_tool", "ADD"])


def _as_text(value: dict[str, int]) -> str:
    """A model's JSON text of integer arguments (integers beyond 64 bits written out exactly)."""
    return "{" + ", ".join(f'"{k}": {v}' for k, v in value.items()) + "}"


@st.composite
def calls(draw: Any, index: int) -> dict[str, Any]:
    name = draw(NAMES)
    kind = draw(st.sampled_from(["valid", "valid", "valid-text", "invalid", "odd"]))
    if kind.startswith("valid") and name in VALID:
        arguments: Any = draw(VALID[name])
        if kind == "valid-text" and all(type(v) is int for v in arguments.values()):
            arguments = _as_text(arguments)
    elif kind == "invalid":
        arguments = draw(INVALID)
    else:
        arguments = draw(ARGUMENTS)
    call: dict[str, Any] = {"name": name}
    if arguments is not MISSING:
        call["arguments"] = arguments
    if draw(st.integers(0, 40)) > 0:  # now and then a call without an id: the whole turn is refused
        call["id"] = f"call_{index}"
    if draw(st.integers(0, 3)) == 0:
        call = {"id": call.pop("id", None), "function": call} if "id" in call else {"function": call}
    return call


@st.composite
def turns(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.sampled_from([1, 1, 1, 2, 3, 5]))
    return [draw(calls(i)) for i in range(n)]


# -- comparing --------------------------------------------------------------------------------------
def canon(value: Any, inv_id: str) -> Any:
    """A form equal for equal values (NaN equals itself; an invocation id reads as INV)."""
    if isinstance(value, str):
        return value.replace(inv_id, "INV")
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, RawObject):
        return ("raw", canon(value.tokens(), inv_id))
    if isinstance(value, dict):
        return ("dict", tuple((canon(k, inv_id), canon(v, inv_id)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("list", tuple(canon(v, inv_id) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple(canon(getattr(value, f.name), inv_id)
                                            for f in dataclasses.fields(value)))
    return value


def results_of(inv: tooldeck.Invocation, out: Any) -> Any:
    return canon([out, inv.effects], inv.id)


def records_of(inv: tooldeck.Invocation, history: InvocationHistory) -> Any:
    s = history.summary
    calls = [(c.round, c.index, c.call_id, c.call_name, c.tool_id, c.raw_arguments, c.arguments, c.status,
              None if c.result is None else (c.result.content, c.result.structured, c.result.is_error,
                                             c.result.error_code, c.result.resource_refs, c.result.raw_result,
                                             c.result.effects))
             for c in history.calls]
    return canon([s.provider, s.scene, s.rounds, s.calls, s.errors, s.open_calls, s.unknown_outcomes, calls], inv.id)


def test_fast_and_general_lanes_give_the_same_results_and_records(tmp_path: Path) -> None:
    seen: set[str] = set()
    with lanes(tmp_path) as by:

        @settings(max_examples=150, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(turns())
        # every kind of answer at least once, whatever the generated turns reach
        @example([{"id": "c1", "name": "echo", "arguments": {"text": "x", "times": -1}}])
        @example([{"id": "c1", "name": "halve", "arguments": {"n": 3}},
                  {"id": "c2", "name": "nope", "arguments": "{}"}])
        @example([{"id": "c1", "name": "add", "arguments": {"a": "x"}}, {"name": "add"}])
        def agree(turn: list[dict[str, Any]]) -> None:
            ran = {key: lane.run(turn) for key, lane in by.items()}
            fast_off, general_off = ran[(False, True)], ran[(False, False)]
            fast_on, general_on = ran[(True, True)], ran[(True, False)]
            expected = results_of(*fast_off)
            assert results_of(*general_off) == expected
            assert results_of(*fast_on) == expected  # records on change no result
            assert results_of(*general_on) == expected
            # (a turn refused for a missing id takes a round only with records on, where it is recorded)
            assert fast_off[0].round == general_off[0].round and fast_on[0].round == general_on[0].round
            recorded = records_of(fast_on[0], by[(True, True)].rt.recorder.history(fast_on[0].id))
            assert records_of(general_on[0], by[(True, False)].rt.recorder.history(general_on[0].id)) == recorded
            out = fast_off[1]
            if isinstance(out, tuple):
                seen.add(out[0])
            else:
                seen.update("ok" if r.error_code is None else r.error_code for r in out)
                seen.add(f"turn of {min(len(out), 2)}")

        agree()
    # the generated turns reached every lane and every kind of answer
    assert {"ok", "turn of 1", "turn of 2", "model.invalid_tool_call", "tool.invalid_arguments",
            "tool.unknown_tool", "tool.execution_failed", "lanes.negative"} <= seen, seen


def test_a_one_call_turn_takes_the_fast_lane_only_with_records_off(tmp_path: Path) -> None:
    """The lanes the differential test compares are really the ones taken."""
    taken: list[str] = []
    with lanes(tmp_path) as by:
        for (records, fast), lane in by.items():
            inv = lane.rt.invocation()
            for name in ("_one_call", "_turn"):
                lane_fn = getattr(inv, name)

                def spy(*args: Any, _fn: Any = lane_fn, _name: str = name) -> Any:
                    taken.append(_name)
                    return _fn(*args)

                setattr(inv, name, spy)
            call = {"id": "c", "name": "add", "arguments": '{"a": 1, "b": 2}'}
            [result] = inv.run([call] if fast else (call,))  # type: ignore[arg-type]
            assert result.content == "3"
            assert taken.pop() == ("_one_call" if fast and not records else "_turn"), (records, fast)
