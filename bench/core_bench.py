"""Per-call overhead of the pipeline (decode + gate + validate + dispatch + project, records off),
beside a bare call, json.loads + call, decode + compiled validation + call, and the OpenAI Agents
SDK's FunctionTool.on_invoke_tool, all in the same run. The tooldeck rows: a two-int tool with a
16-character JSON string (OpenAI's shape), the same as a dict (Anthropic's and Gemini's shape), a
no-argument tool, a realistic 300-character string of a four-field tool, and a turn of 10. Also
snapshot build time for 10/100/1,000 tools.

    python -m bench.core_bench
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import jsonschema_rs
import orjson

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us, expect_ok, report
from tooldeck.catalog import bindings as binding_prep
from tooldeck.core.descriptors import AvailabilityContext
from tooldeck.snapshot.snapshot import Snapshot

TWO_INT = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
           "required": ["a", "b"], "additionalProperties": False}
ARGS = '{"a": 1, "b": 2}'
NOTE_ARGS = ('{"path": "notes/2026-11-30/meeting-with-the-platform-team.md", "text": "Agreed: ship the gate '
             'change on Monday, measure p50 and p99 before and after, and keep the old path behind a flag '
             'for 2 weeks. Owner: Dana; reviewers: Lee, Sam.", "tags": ["meeting", "platform", "release-42"], '
             '"priority": 3}')
INNER = 2_000

PROFILE = {"allow": ["extension/*"], "max_identical_calls": REPEATS_ALLOWED}


async def add(a: int, b: int) -> int:
    return a + b


async def ping() -> str:
    return "pong"


async def note(path: str, text: str, tags: list[str], priority: int) -> str:
    return "saved"


def peer_tools():
    try:
        from agents import function_tool
        from agents.tool_context import ToolContext
    except ImportError:
        return None
    add_tool, ping_tool = function_tool(add), function_tool(ping)

    def ctx(name: str, args: str) -> ToolContext:
        return ToolContext(context=None, tool_name=name, tool_call_id="c1", tool_arguments=args)

    return add_tool, ping_tool, ctx


async def per_call(home: Path) -> None:
    rt = tooldeck.Runtime(home, builtins=[], records=False, profile=PROFILE)
    rt.tool(extension_id="bench")(add)
    rt.tool(extension_id="bench")(ping)
    rt.tool(extension_id="bench")(note)
    inv = rt.invocation()
    validator = jsonschema_rs.validator_for(TWO_INT)
    one_add = [{"id": "c1", "name": "add", "arguments": ARGS}]
    one_ping = [{"id": "c1", "name": "ping"}]
    ten_add = [{"id": f"c{i}", "name": "add", "arguments": ARGS} for i in range(10)]
    one_add_dict = [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}]
    one_note = [{"id": "c1", "name": "note", "arguments": NOTE_ARGS}]
    assert (await inv.arun(one_add))[0].content == "3"
    assert (await inv.arun(one_add_dict))[0].content == "3"
    assert (await inv.arun(one_note))[0].content == "saved"

    async def bare() -> object:
        return await add(1, 2)

    async def json_call() -> object:
        return await add(**json.loads(ARGS))

    async def decode_validate_call() -> object:
        args = orjson.loads(ARGS)
        validator.validate(args)
        return await add(**args)

    async def td_add() -> object:
        inv.gate.budget.total = 0
        return await inv.arun(one_add)

    async def td_ping() -> object:
        inv.gate.budget.total = 0
        return await inv.arun(one_ping)

    async def td_batch() -> object:
        inv.gate.budget.total = 0
        return await inv.arun(ten_add)

    async def td_add_dict() -> object:
        inv.gate.budget.total = 0
        return await inv.arun(one_add_dict)

    async def td_note() -> object:
        inv.gate.budget.total = 0
        return await inv.arun(one_note)

    variants = {
        "bare await add(1, 2)": bare,
        "json.loads + call": json_call,
        "orjson + compiled validation + call": decode_validate_call,
        "tooldeck two-int, 1 call per turn": td_add,
        "tooldeck no-arg, 1 call per turn": td_ping,
        "tooldeck two-int, per call in a turn of 10": td_batch,
        "tooldeck two-int as a dict, 1 call per turn": td_add_dict,
        "tooldeck 300-char four-field, 1 call per turn": td_note,
    }
    peer = peer_tools()
    if peer is not None:
        add_tool, ping_tool, ctx = peer

        async def peer_add() -> object:
            return await add_tool.on_invoke_tool(ctx("add", ARGS), ARGS)

        async def peer_ping() -> object:
            return await ping_tool.on_invoke_tool(ctx("ping", "{}"), "{}")

        assert str(await peer_add()) == "3"
        variants["openai-agents FunctionTool two-int"] = peer_add
        variants["openai-agents FunctionTool no-arg"] = peer_ping
    else:
        print("  (openai-agents not installed: `pip install -e '.[bench]'` for the peer rows)")
    rows = await ainterleaved_us(variants, INNER // 10, per_call_divisor={
        "tooldeck two-int, per call in a turn of 10": 10}, check=expect_ok)
    print("Per-call overhead (median µs per call; ratio to the peer when present, else to a bare call):")
    report(rows, "openai-agents FunctionTool two-int" if peer else "bare await add(1, 2)")
    if peer:
        times = dict(rows)
        print("Each tooldeck case against the same tool through the peer (target: at most 0.33×):")
        for mine, theirs in (("tooldeck two-int, 1 call per turn", "openai-agents FunctionTool two-int"),
                             ("tooldeck no-arg, 1 call per turn", "openai-agents FunctionTool no-arg"),
                             ("tooldeck two-int, per call in a turn of 10", "openai-agents FunctionTool two-int")):
            print(f"  {mine:<44} {times[mine] / times[theirs]:5.2f}× {theirs}")
    rt.close()


def snapshot_build(home: Path) -> None:
    print("Snapshot build (prepare bindings + names + render), median of 7:")
    for n in (10, 100, 1_000):
        rt = tooldeck.Runtime(home / f"s{n}", builtins=[], records=False, profile=PROFILE)
        for i in range(n):
            rt.extensions.register(add, f"ext{i % 7}", f"tool.{i}.add", description=f"Add numbers {i}.")
        ctx = AvailabilityContext("chat", False, "openai", "r")
        samples = []
        for _ in range(7):
            start = time.perf_counter()
            prepared = binding_prep.prepare(rt.catalog, rt.profile, ctx, "openai")
            Snapshot.build("openai", prepared.bindings, 80)
            samples.append((time.perf_counter() - start) * 1e3)
        print(f"  {n:>5} tools  {statistics.median(samples):8.2f} ms")
        rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(per_call(Path(tmp)))
        snapshot_build(Path(tmp))


if __name__ == "__main__":
    main()
