"""Helpers for the records tests: adapters under test, a small snapshot, and a history writer that
goes through the Recorder port only (so the same tests can run against any adapter)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooldeck.core.arguments import ToolArguments
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.protocols import FORMATS
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.store import SqliteRecorder
from tooldeck.snapshot.snapshot import Binding, Snapshot

ADAPTERS: dict[str, Callable[[Path], Any]] = {
    "sqlite": lambda home: SqliteRecorder(home / "records.sqlite"),
}
"""Every records adapter the store tests run against (PostgreSQL will join here)."""

TOOL_NAMES = ("dice_roll", "read_file", "search", "write_file")


def snapshot(provider: str = "openai", names: Sequence[str] = TOOL_NAMES) -> Snapshot:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    bindings = [Binding(ToolDescriptor(ToolId.extension("test", n), f"{n} tool", schema), n) for n in names]
    return Snapshot.build(provider, bindings, 1000)


def tool_id(name: str) -> str:
    return str(ToolId.extension("test", name))


def start_invocation(store: Any, snap: Snapshot | None = None, run_id: str = "run_test") -> str:
    snap = snap or snapshot()
    inv_id = f"inv_{uuid.uuid4().hex[:16]}"
    store.invocation_started(InvocationInfo(run_id, inv_id, snap.provider, "chat", False, snap.id, snap.to_json(),
                                            time.time()))
    return inv_id


@dataclass
class PlannedCall:
    call_id: str
    name: str
    raw: str | None
    outcome: str = "ok"
    """ok | error | unknown (the tool reported it may have run)"""
    content: str = ""


@dataclass
class PlannedRound:
    calls: list[PlannedCall]
    finish_order: list[int] = field(default_factory=list)
    """The order results are handed to the store (completion order); default call order."""
    interrupt: str | None = None
    """None | "after_requested" (killed in the gate) | "after_started" (killed while tools ran)."""
    admitted: bool = False
    """Write the requested and started calls with one `calls_admitted` (the runtime's path) instead of
    `calls_requested` + `calls_started`."""


def write_round(store: Any, inv_id: str, round_no: int, planned: PlannedRound, known: Sequence[str] = TOOL_NAMES
                ) -> None:
    """Write one model turn as the runtime does: requested, started (admitted), finished (in
    `finish_order`, which may differ from call order), stopping at the round's interruption point."""
    now = time.time()
    requested = [RequestedCall(c.call_id, c.name, c.raw, i) for i, c in enumerate(planned.calls)]
    admitted = [i for i, c in enumerate(planned.calls) if c.name in known and ToolArguments.decode(c.raw).is_valid]
    started = [StartedCall(planned.calls[i].call_id, i, tool_id(planned.calls[i].name),
                           ToolArguments.decode(planned.calls[i].raw).to_replay_object()) for i in admitted]
    if planned.admitted and planned.interrupt != "after_requested":
        store.calls_admitted(inv_id, round_no, requested, started, now)
    else:
        store.calls_requested(inv_id, round_no, requested, now)
        if planned.interrupt == "after_requested":
            return
        if started:
            store.calls_started(inv_id, round_no, started, now)
    if planned.interrupt == "after_started":
        return
    finished = []
    for i in planned.finish_order or list(range(len(planned.calls))):
        c = planned.calls[i]
        args = ToolArguments.decode(c.raw)
        if c.name not in known:
            finished.append(_finish(c, i, None, "failed", True, "tool.unknown_tool", f"`{c.name}` is not a tool"))
        elif not args.is_valid:
            finished.append(_finish(c, i, tool_id(c.name), "failed", True, "tool.invalid_arguments",
                                    args.invalid_message()))
        elif c.outcome == "ok":
            finished.append(_finish(c, i, tool_id(c.name), "completed", False, None, c.content or f"ok {i}"))
        elif c.outcome == "unknown":
            finished.append(_finish(c, i, tool_id(c.name), "outcome_unknown", True, "tool.timeout",
                                    "timed out; it may have executed"))
        else:
            finished.append(_finish(c, i, tool_id(c.name), "failed", True, "test.failed", c.content or "it failed"))
    if finished:
        store.calls_finished(inv_id, round_no, finished)


def _finish(c: PlannedCall, i: int, tid: str | None, status: str, is_error: bool, code: str | None,
            content: str) -> FinishedCall:
    now = time.time()
    return FinishedCall(c.call_id, i, tid, status, None, content,
                        {"error": {"code": code}} if is_error else {"value": i}, is_error, code, [], {"raw": content},
                        now if tid else None, now)


def count_results(messages: list[dict[str, Any]], fmt: str) -> tuple[list[list[str]], list[list[str]]]:
    """(call ids per turn, result ids per turn) of a rendered history."""
    calls: list[list[str]] = []
    results: list[list[str]] = []
    if fmt in ("openai", "mistral"):
        for m in messages:
            if m["role"] == "assistant":
                calls.append([tc["id"] for tc in m["tool_calls"]])
                results.append([])
            elif m["role"] == "tool":
                results[-1].append(m["tool_call_id"])
    elif fmt == "openai_responses":
        for item in messages:
            if item["type"] == "function_call":
                if not results or results[-1]:
                    calls.append([])
                    results.append([])
                calls[-1].append(item["call_id"])
            else:
                results[-1].append(item["call_id"])
    elif fmt == "anthropic":
        for m in messages:
            if m["role"] == "assistant":
                calls.append([b["id"] for b in m["content"]])
            else:
                results.append([b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"])
    elif fmt == "gemini":
        for m in messages:
            if m["role"] == "model":
                calls.append([p["functionCall"]["id"] for p in m["parts"]])
            else:
                results.append([p["functionResponse"]["id"] for p in m["parts"]])
    return calls, results


ALL_FORMATS = tuple(FORMATS)
