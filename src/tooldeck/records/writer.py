"""The records of one model turn as the runtime writes them (records on): nothing finished is lost.

1. `TurnWriter.admit`, after the gate and before any tool runs, one transaction: every call with
   its raw wire arguments, the admitted calls as started, and the gate's refusals with their
   results (unknown tool, invalid arguments, budget…), so a refusal keeps its reason whatever
   happens to the process next.
2. While a turn of several calls runs, dispatch calls `on_wait` when the turn starts waiting on the
   event loop and when a result lands during a wait; the results that have arrived by then are
   written together (one insert-only batch, one transaction) at most FLUSH_DELAY_S later, at the
   next tick of the loop's ticker. So a result is durable within FLUSH_BOUND_S of its arrival while
   its siblings still run (as long as the event loop is free: a tool that blocks the loop blocks
   the flush too), and results that arrive together share a transaction.
3. `finish`, at the end of the turn, writes what remains in one transaction. When a cancellation
   or a fault cuts the turn off, an admitted call whose result never arrived is `outcome_unknown`,
   with no finish time.

A turn that never waits (every call finishes on its first step, the common fast case) asks for no
flush and writes twice, as before; a one-call turn is never watched: its result is written at the
end, right after it arrives.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from tooldeck.catalog.sources import UNFINISHED, TurnState
from tooldeck.core.errors import OUTCOME_UNKNOWN
from tooldeck.core.results import AgentToolResult, ToolOutput, as_output
from tooldeck.gate import Admitted, Refused
from tooldeck.records.interrupted import CANCELLED, INTERRUPTED, cancelled_text, not_run_text, unknown_outcome_text
from tooldeck.records.port import FinishedCall, Recorder, RequestedCall, StartedCall

FLUSH_DELAY_S = 0.02
"""How long results that arrived while a turn waits are held to share one transaction."""
FLUSH_BOUND_S = 0.05
"""The promise: a result that arrived while its turn waits is committed within this long (the delay
above, plus the write, plus slack for a busy machine)."""

Project = Callable[[str, str | None, int, Any], AgentToolResult]
"""`Projector.project`: (call id, tool id, round, output) → the model's result."""

logger = logging.getLogger("tooldeck.records")


class TurnWriter:
    """Writes one turn's records; `results` holds each call's projected result once it has one."""

    __slots__ = ("_checks", "_closed", "_failed", "_invocation_id", "_project", "_recorder", "_redacted", "_ticker",
                 "_turn", "_written", "results")

    def __init__(self, recorder: Recorder, invocation_id: str, turn: TurnState, checks: Sequence[Admitted | Refused],
                 project: Project) -> None:
        n = len(checks)
        self._recorder = recorder
        self._invocation_id = invocation_id
        self._turn = turn
        self._checks = checks
        self._project = project
        self.results: list[AgentToolResult | None] = [None] * n
        """Each call's result for the model, projected exactly once (projection may write spill files)."""
        self._written = [False] * n
        self._ticker: _Ticker | None = None
        """The loop's ticker while this turn waits for a flush."""
        self._closed = False
        self._failed = False
        self._redacted: list[AgentToolResult] = []
        """Results written with secrets replaced, each noted once in the event log after its batch."""

    @classmethod
    def admit(cls, recorder: Recorder, invocation_id: str, turn: TurnState, checks: Sequence[Admitted | Refused],
              requested: list[RequestedCall], project: Project, requested_already: bool = False) -> TurnWriter:
        """Step 1: one transaction before any tool runs. `requested_already`: the calls were recorded as
        requested before pre-call hooks ran (policy/hook_flow.py); they are now started, and the refusals
        closed, in two writes."""
        writer = cls(recorder, invocation_id, turn, checks, project)
        at = time.time()
        calls = turn.calls
        round_no = turn.round
        started: list[StartedCall] = []
        refused: list[FinishedCall] = []
        for i, chk in enumerate(checks):
            call_id = calls[i].id
            if type(chk) is Admitted:
                started.append(StartedCall(call_id, i, chk.entry.tool_id, chk.args))
                continue
            r = chk.result  # type: ignore[union-attr]
            entry = chk.entry
            # The model gets exactly this (dispatch hands the refusal over as the same output).
            result = project(call_id, entry.tool_id if entry is not None else None, round_no,
                             ToolOutput(r.content, r.structured, True, r.error_code))
            writer.results[i] = result
            writer._written[i] = True
            refused.append(FinishedCall(call_id, i, result.tool_id, "failed", None, result.content, result.structured,
                                        True, result.error_code, result.resource_refs, None, None, at))
        if requested_already:
            recorder.calls_started(invocation_id, round_no, started, at)
            recorder.calls_finished(invocation_id, round_no, refused)
        else:
            recorder.calls_admitted(invocation_id, round_no, requested, started, at, refused)
        if refused:
            note_redactions(recorder, invocation_id, round_no, [r for r in writer.results if r is not None
                                                                and r.redaction is not None])
        return writer

    # -- step 2: while the turn waits ------------------------------------------------------------
    def on_wait(self) -> None:
        """The turn waits on the event loop, or a result landed while it waits: write what has arrived
        within FLUSH_DELAY_S (later arrivals join the same batch)."""
        if self._ticker is None and not self._closed and not self._failed:
            self._ticker = _ticker()
            self._ticker.add(self)

    def _flush_due(self) -> None:
        self._ticker = None
        if self._closed:
            return
        try:
            self.flush()
        except Exception:
            # Nothing is lost: the results stay unwritten and the end of the turn writes them (and raises
            # if that fails too). Stop flushing this turn rather than retry a failing store every time.
            self._failed = True
            logger.warning("writing the results of round %s of %s while it runs failed; they are written at "
                           "the end of the turn", self._turn.round, self._invocation_id, exc_info=True)

    def flush(self) -> None:
        """Write the results that have arrived and are not written yet, in one batch."""
        outputs = self._turn.outputs
        written = self._written
        ready = [i for i, out in enumerate(outputs) if not written[i] and out is not UNFINISHED]
        if not ready:
            return
        results = self.results
        for i in ready:
            if results[i] is None:
                results[i] = self._projected(i)
        self._recorder.calls_finished(self._invocation_id, self._turn.round, self._records(ready, results))
        for i in ready:
            written[i] = True
        if self._redacted:
            self._note()

    def _projected(self, i: int) -> AgentToolResult:
        entry = self._checks[i].entry
        return self._project(self._turn.calls[i].id, entry.tool_id if entry is not None else None, self._turn.round,
                             self._turn.outputs[i])

    # -- step 3: the end of the turn -------------------------------------------------------------
    def finish(self, results: Sequence[AgentToolResult | None], interrupted: Sequence[int] = (),
               cancelled: bool = False) -> None:
        """Write every result not written yet (`results`: the turn's projected results, None for a call
        whose result never arrived; `interrupted`: calls a host fault stopped before they started;
        `cancelled`: the turn was cancelled, so a missing result is `tool.cancelled`)."""
        self.close()
        written = self._written
        rest = [i for i in range(len(written)) if not written[i]]
        if rest:
            self._recorder.calls_finished(self._invocation_id, self._turn.round,
                                          self._records(rest, results, interrupted, cancelled))
            for i in rest:
                written[i] = True
            if self._redacted:
                self._note()

    def _note(self) -> None:
        redacted, self._redacted = self._redacted, []
        note_redactions(self._recorder, self._invocation_id, self._turn.round, redacted)

    def close(self) -> None:
        """No more writes while the turn waits (it is ending)."""
        self._closed = True
        ticker = self._ticker
        if ticker is not None:
            ticker.waiting.pop(self, None)
            self._ticker = None

    def _records(self, indexes: list[int], results: Sequence[AgentToolResult | None],
                 interrupted: Sequence[int] = (), cancelled: bool = False) -> list[FinishedCall]:
        """The records of these calls; their times are dispatch's (None where unknown: never an invented
        duration). A call with no result was cut off before it arrived: `outcome_unknown`, or
        `tool.interrupted` (nothing ran) when a host fault stopped it before it started."""
        turn = self._turn
        calls, outputs, checks = turn.calls, turn.outputs, self._checks
        timings = turn.timings
        out = []
        for i in indexes:  # one loop, no call per record: the end of every recorded turn runs it
            call, check, result = calls[i], checks[i], results[i]
            if result is None and i in interrupted:
                text = not_run_text(call.name)
                out.append(FinishedCall(call.id, i, check.entry.tool_id, "failed", check.args, text,  # type: ignore[union-attr]
                                        {"error": {"code": INTERRUPTED, "message": text}, "executed": False}, True,
                                        INTERRUPTED, [], None, None, None))
                continue
            if result is None:
                code = CANCELLED if cancelled else OUTCOME_UNKNOWN
                text = cancelled_text(call.name) if cancelled else unknown_outcome_text(call.name)
                out.append(FinishedCall(call.id, i, check.entry.tool_id, "outcome_unknown", check.args,  # type: ignore[union-attr]
                                        text, {"error": {"code": code, "message": text}}, True,
                                        code, [], None, None, None))
                continue
            o = as_output(outputs[i])
            status = ("outcome_unknown" if o.may_have_executed else "failed") if o.is_error else "completed"
            timing = timings[i] if timings is not None else None
            content, structured, raw = result.content, result.structured, o.raw
            if result.redaction is not None:  # secrets replaced in projection: the raw result too
                raw = result.redaction.raw
                self._redacted.append(result)
            if result.redacted is not None:  # what only the model may see (builtins/ask_user.py secrets)
                content, structured = result.redacted
                raw = None
            out.append(FinishedCall(
                call.id, i, result.tool_id, status, check.args if type(check) is Admitted else None, content,
                structured, result.is_error, result.error_code, result.resource_refs, raw,
                timing[0] if timing is not None else None, timing[1] if timing is not None else None,
                [e.to_dict() for e in o.effects] if o.effects else []))
        return out

REDACTED_EVENT = "result_redacted"


def note_redactions(recorder: Recorder, invocation_id: str, round_no: int, results: Sequence[AgentToolResult]) -> None:
    """One `result_redacted` event per result whose secrets projection replaced: its call id, round and the
    number of markers per label (the values themselves are nowhere in the records)."""
    for result in results:
        if result.redaction is not None:
            counts = result.redaction.counts
            recorder.record_event(invocation_id, REDACTED_EVENT, {"call_id": result.call_id, "round": round_no,
                                                                  "count": sum(counts.values()), "labels": counts})


class _Ticker:
    """One per event loop: writes each waiting turn's results FLUSH_DELAY_S after the turn asked, with
    one timer for all of them (re-armed for the next turn due), instead of a timer armed and
    cancelled per turn: a short turn that waits costs a dict entry."""

    __slots__ = ("__weakref__", "_armed", "waiting")

    def __init__(self) -> None:
        self.waiting: dict[TurnWriter, float] = {}
        """Turn → when its flush is due (loop time); in the order they asked, so in due order."""
        self._armed = False

    def add(self, writer: TurnWriter) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + FLUSH_DELAY_S
        self.waiting[writer] = due
        if not self._armed:
            self._armed = True
            loop.call_at(due, self._tick)

    def _tick(self) -> None:
        self._armed = False
        loop = asyncio.get_running_loop()
        now = loop.time()
        waiting = self.waiting
        for writer, due in list(waiting.items()):
            if due > now + 0.001:  # not due yet (the loop may run a timer up to its clock resolution early)
                self._armed = True
                loop.call_at(due, self._tick)
                return
            del waiting[writer]
            writer._flush_due()


_TICKERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Ticker] = weakref.WeakKeyDictionary()


def _ticker() -> _Ticker:
    loop = asyncio.get_running_loop()
    ticker = _TICKERS.get(loop)
    if ticker is None:
        ticker = _TICKERS[loop] = _Ticker()
    return ticker
