"""Pre-call hooks of one turn (policy/hook_flow.py `settle`): the chains of calls that run together (consecutive
concurrency-safe calls) run together too, each call's own hooks still in chain order; a call that runs alone (a
mutating or `serial` tool) has its chain run alone, in call order. Real executables: each writes `start` and
`end` lines to a log, and a hook waits (with a deadline) until the peers its call names have started, so overlap
is observed, not timed."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest

import tooldeck
from tests.processes import ended

HOOK = f"""#!{sys.executable}
import json, sys, time
call = json.load(sys.stdin)
name, pause = sys.argv[1], float(sys.argv[2])
cid, args = call["call_id"], call["arguments"]

def log(kind):
    with open("events.log", "a") as f:
        f.write(f"{{kind}} {{name}} {{cid}} n={{args['n']}}\\n")

def started():
    try:
        lines = open("events.log").read().splitlines()
    except FileNotFoundError:
        return set()
    return {{line.split()[2] for line in lines if line.startswith(f"start {{name}} ")}}

log("start")
deadline = time.monotonic() + 15
while not set(args.get("peers", [])) <= started() and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(pause)
log("end")
print(json.dumps({{"arguments": dict(args, n=args["n"] + 100)}} if name == "A" else {{}}))
"""


def make(make_runtime: Any, pause: float = 0.0) -> tooldeck.Runtime:
    hooks = [{"event": "pre_call", "tool": "extension/t:*", "command": ["./hook.py", name, str(pause)],
              "timeout_s": 60, "name": name} for name in ("A", "B")]
    rt = make_runtime(records=True, max_identical_calls=0, hooks=hooks)
    path = rt.home / "hook.py"
    path.write_text(HOOK)
    path.chmod(0o755)

    @rt.tool(extension_id="t")
    async def together(n: int, peers: list[str]) -> int:  # async, not mutating: concurrency-safe
        return n

    @rt.tool(extension_id="t", concurrent=False)
    def alone(n: int) -> int:
        return n

    return rt


def events(rt: tooldeck.Runtime) -> list[tuple[str, str, str]]:
    return [tuple(line.split()[:3]) for line in (rt.home / "events.log").read_text().splitlines()]  # type: ignore[misc]


def at(log: list[tuple[str, str, str]], kind: str, hook: str, cid: str) -> int:
    return log.index((kind, hook, cid))


def test_hooks_of_concurrent_calls_overlap_and_keep_each_calls_chain_order(make_runtime: Any) -> None:
    rt = make(make_runtime)
    group = ["c0", "c1", "c2"]
    out = rt.invocation().run([{"id": c, "name": "together", "arguments": {"n": i, "peers": group}}
                               for i, c in enumerate(group)])
    assert [r.content for r in out] == ["100", "101", "102"]  # hook A's rewrite reached each call
    log = events(rt)
    for hook in ("A", "B"):  # every chain of the group started before any of them ended: they overlapped
        assert max(at(log, "start", hook, c) for c in group) < min(at(log, "end", hook, c) for c in group), log
    for c in group:  # within a call: A, then B on A's arguments
        assert at(log, "end", "A", c) < at(log, "start", "B", c)
    b_saw = [line for line in (rt.home / "events.log").read_text().splitlines() if line.startswith("start B")]
    assert sorted(b_saw) == ["start B c0 n=100", "start B c1 n=101", "start B c2 n=102"]


def test_a_call_that_runs_alone_has_its_hooks_run_alone_in_call_order(make_runtime: Any) -> None:
    rt = make(make_runtime, pause=0.2)
    calls = [{"id": "s0", "name": "alone", "arguments": {"n": 0}}, {"id": "s1", "name": "alone", "arguments": {"n": 1}},
             {"id": "s2", "name": "alone", "arguments": {"n": 2}}]
    out = rt.invocation().run(calls)
    assert [r.content for r in out] == ["100", "101", "102"]
    expected = [(kind, hook, c) for c in ("s0", "s1", "s2") for hook in ("A", "B") for kind in ("start", "end")]
    assert events(rt) == expected


def test_a_serial_call_splits_the_turn_into_groups_as_dispatch_does(make_runtime: Any) -> None:
    rt = make(make_runtime)
    turn = [{"id": "a0", "name": "together", "arguments": {"n": 0, "peers": ["a0", "a1"]}},
            {"id": "a1", "name": "together", "arguments": {"n": 1, "peers": ["a0", "a1"]}},
            {"id": "m", "name": "alone", "arguments": {"n": 5}},
            {"id": "b0", "name": "together", "arguments": {"n": 7, "peers": ["b0", "b1"]}},
            {"id": "b1", "name": "together", "arguments": {"n": 8, "peers": ["b0", "b1"]}}]
    inv = rt.invocation()
    out = inv.run(turn)
    assert [r.content for r in out] == ["100", "101", "105", "107", "108"]
    log = events(rt)
    for group in (["a0", "a1"], ["b0", "b1"]):
        for hook in ("A", "B"):
            assert max(at(log, "start", hook, c) for c in group) < min(at(log, "end", hook, c) for c in group), log
    first_done = max(at(log, "end", "B", c) for c in ("a0", "a1"))
    assert first_done < at(log, "start", "A", "m") < at(log, "end", "B", "m") < min(
        at(log, "start", "A", c) for c in ("b0", "b1"))
    recorded = [(e.data["call_id"], e.data["hook"], e.data["decision"]) for e in rt.recorder.events(inv.id)
                if e.kind == "hook"]
    assert sorted(recorded) == sorted((c["id"], h, "allow") for c in turn for h in ("A", "B"))


def test_a_denied_call_does_not_stop_the_hooks_of_its_group(make_runtime: Any) -> None:
    rt = make(make_runtime)
    rt.hooks.pre("extension/t:together")(lambda c: tooldeck.HookAnswer("deny", "no") if c.call_id == "d1" else None)
    out = rt.invocation().run([{"id": "d0", "name": "together", "arguments": {"n": 0, "peers": ["d0", "d2"]}},
                               {"id": "d1", "name": "together", "arguments": {"n": 1, "peers": []}},
                               {"id": "d2", "name": "together", "arguments": {"n": 2, "peers": ["d0", "d2"]}}])
    assert [r.error_code or r.content for r in out] == ["100", "hook.denied", "102"]
    log = events(rt)
    assert not any(c == "d1" for _, _, c in log)  # the Python hook denied first: its executables never ran
    assert max(at(log, "start", "A", c) for c in ("d0", "d2")) < min(at(log, "end", "A", c) for c in ("d0", "d2"))
    assert [r.call_id for r in out] == ["d0", "d1", "d2"]


SLOW = f"""#!{sys.executable}
import json, subprocess, sys, time
cid = json.load(sys.stdin)["call_id"]
child = subprocess.Popen(["sh", "-c", "while :; do echo x >> tick.{{0}}; sleep 0.05; done".format(cid)])
open(f"child.{{cid}}", "w").write(str(child.pid))
open(f"hook.{{cid}}", "w").write(str(__import__("os").getpid()))
time.sleep(120)
"""


async def test_cancelling_the_turn_stops_every_hook_of_the_group(make_runtime: Any) -> None:
    rt = make_runtime(records=True, hooks=[{"event": "pre_call", "tool": "extension/t:*", "command": ["./slow.py"],
                                            "timeout_s": 300}])
    (rt.home / "slow.py").write_text(SLOW)
    (rt.home / "slow.py").chmod(0o755)
    ran: list[int] = []

    @rt.tool(extension_id="t")
    async def together(n: int) -> int:
        ran.append(n)
        return n

    ids = ["k0", "k1"]
    task = asyncio.ensure_future(rt.invocation().arun([{"id": c, "name": "together", "arguments": {"n": i}}
                                                       for i, c in enumerate(ids)]))
    files = [rt.home / f"{kind}.{c}" for c in ids for kind in ("hook", "child")]
    deadline = time.monotonic() + 60
    while not all(f.is_file() and f.read_text() for f in files) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert all(f.is_file() for f in files), "both hooks run at once"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pids = [int(f.read_text()) for f in files]
    while not all(ended(p) for p in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert all(ended(p) for p in pids), pids
    ticks = [rt.home / f"tick.{c}" for c in ids]
    sizes = [t.stat().st_size for t in ticks]
    await asyncio.sleep(0.3)  # the loops wrote every 0.05 s: live ones would have grown the files
    assert [t.stat().st_size for t in ticks] == sizes and ran == []


class HostFault(BaseException):
    """Not a hook's failure (those are refusals): a fault of the host, which must propagate as it is."""


async def test_a_fault_in_one_chain_stops_the_others_and_propagates_as_it_is(make_runtime: Any) -> None:
    rt = make_runtime(records=True, hooks=[{"event": "pre_call", "tool": "extension/t:*", "command": ["./slow.py"],
                                            "timeout_s": 300}])
    (rt.home / "slow.py").write_text(SLOW)
    (rt.home / "slow.py").chmod(0o755)
    ran: list[int] = []

    @rt.tool(extension_id="t")
    async def together(n: int) -> int:
        ran.append(n)
        return n

    async def fault_once_f1_runs(call: tooldeck.HookCall) -> None:
        if call.call_id != "f0":
            return
        deadline = time.monotonic() + 60
        written = [rt.home / "child.f1", rt.home / "hook.f1"]
        while not all(f.is_file() and f.read_text() for f in written) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        raise HostFault("the host broke")

    rt.hooks.pre("extension/t:*")(fault_once_f1_runs)
    with pytest.raises(HostFault, match="the host broke"):
        await rt.invocation().arun([{"id": c, "name": "together", "arguments": {"n": i}}
                                    for i, c in enumerate(["f0", "f1"])])
    pids = [int((rt.home / f"{kind}.f1").read_text()) for kind in ("hook", "child")]
    deadline = time.monotonic() + 30
    while not all(ended(p) for p in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert all(ended(p) for p in pids), pids
    assert ran == [] and not (rt.home / "hook.f0").exists()
