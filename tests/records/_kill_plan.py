"""The workload of the kill test (test_kill_durability.py), shared by the worker and the test.

A worker runs INVOCATIONS invocations of TURNS turns each; a turn mixes calls that finish on their
first step (`fast`), calls that sleep (`slow`, concurrency-safe; `serial`, which runs alone;
`threaded`, on a worker thread) and calls the gate refuses (an unknown tool, arguments that are not
JSON, arguments the schema rejects, and every call once the invocation's budget is spent). Every
tool appends a line to the log (os.write on an O_APPEND descriptor: the line survives the process
being killed) just before it returns, with the wall times it ran and the monotonic time it finished.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.runtime import Runtime

INVOCATIONS = 2
TURNS = 4
BUDGET = 13
"""max_calls_per_invocation: the last turns of an invocation run into it."""
REFUSALS = {"unknown": "tool.unknown_tool", "bad_json": "tool.invalid_arguments",
            "bad_schema": "tool.invalid_arguments"}
KINDS = ("fast", "slow", "serial", "threaded", "unknown", "bad_json", "bad_schema")
WEIGHTS = (6, 8, 2, 2, 2, 1, 1)


@dataclass(frozen=True)
class PlannedCall:
    tag: str
    """The call id, and the `tag` argument the tool logs."""
    name: str
    raw: str
    refusal: str | None
    """The gate's error code when the gate refuses it, else None."""

    def wire(self) -> dict[str, str]:
        return {"id": self.tag, "name": self.name, "arguments": self.raw}


def plan(seed: int) -> list[list[list[PlannedCall]]]:
    """invocations → turns → calls, the same for a given seed."""
    rng = random.Random(seed)
    out = []
    for v in range(INVOCATIONS):
        charged = 0
        turns = []
        for r in range(TURNS):
            calls = []
            for k in range(rng.choice((1, 1, 2, 3, 4, 5, 6))):
                tag = f"s{seed}v{v}r{r}c{k}"
                kind = rng.choices(KINDS, WEIGHTS)[0]
                ms = rng.randint(5, 250 if kind == "slow" else 120)
                name, raw = {
                    "fast": ("fast", f'{{"tag": "{tag}"}}'),
                    "unknown": ("no_such_tool", f'{{"tag": "{tag}"}}'),
                    "bad_json": ("slow", f'{{"tag": "{tag}", "ms": '),
                    "bad_schema": ("slow", f'{{"tag": "{tag}", "ms": "soon"}}'),
                }.get(kind, (kind, f'{{"tag": "{tag}", "ms": {ms}}}'))
                refusal = "tool.budget_exhausted" if charged >= BUDGET else REFUSALS.get(kind)
                charged += 1
                calls.append(PlannedCall(tag, name, raw, refusal))
            turns.append(calls)
        out.append(turns)
    return out


def log_line(fd: int, *fields: object) -> None:
    os.write(fd, orjson.dumps(list(fields)) + b"\n")


def run(home: Path, log: Path, seed: int) -> None:
    """The worker: run the plan with records on, logging each completion; then wait to be killed."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rt = Runtime(home, builtins=[], records=True,
                 profile={"allow": ["extension/*"], "max_calls_per_invocation": BUDGET})
    safe = ToolAnnotations(concurrency_safe=True)

    def done(tag: str, content: str, started: float) -> str:
        log_line(fd, "done", tag, content, started, time.time(), time.monotonic())
        return content

    @rt.tool("kill", "fast", annotations=safe)
    async def fast(tag: str) -> str:
        """Answers at once."""
        return done(tag, f"fast {tag}", time.time())

    @rt.tool("kill", "slow", annotations=safe)
    async def slow(tag: str, ms: int) -> str:
        """Sleeps, together with its siblings."""
        started = time.time()
        await asyncio.sleep(ms / 1000)
        return done(tag, f"slept {ms} ms ({tag})", started)

    @rt.tool("kill", "serial")
    async def serial(tag: str, ms: int) -> str:
        """Sleeps, alone."""
        started = time.time()
        await asyncio.sleep(ms / 1000)
        return done(tag, f"serial {ms} ms ({tag})", started)

    @rt.tool("kill", "threaded", blocking=True, annotations=safe)
    def threaded(tag: str, ms: int) -> str:
        """Sleeps on a worker thread."""
        started = time.time()
        time.sleep(ms / 1000)
        return done(tag, f"thread {ms} ms ({tag})", started)

    log_line(fd, "ready")
    for v, turns in enumerate(plan(seed)):
        inv = rt.invocation("openai", run_id=f"run_kill_{seed}")
        log_line(fd, "invocation", v, inv.id)
        for calls in turns:
            inv.run([c.wire() for c in calls])
    log_line(fd, "finished")
    time.sleep(120)
