"""Resume a recorded invocation: same id, same frozen snapshot, rounds and budget carried on.

Every call still open in that invocation (its result never arrived: process killed, task
cancelled, connection lost) is closed first, whether or not its process is still alive (resuming is
the host's explicit decision): an admitted call becomes `outcome_unknown` with an error result
telling the model it may or may not have run and to check the state before repeating it; a call
that never reached dispatch gets "nothing was executed". None of them is executed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tooldeck.core.errors import BUDGET_EXHAUSTED, TooldeckError
from tooldeck.gate import BudgetState
from tooldeck.records.reader import CallRecord, InvocationHistory, RecordReader
from tooldeck.records.replay import replay_history
from tooldeck.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from tooldeck.dispatch import Confirm
    from tooldeck.runtime import Invocation, Runtime


@dataclass(slots=True)
class Resumed:
    invocation: Invocation
    history: InvocationHistory
    """The history after recovery: every call has its result."""
    recovered: list[CallRecord]
    """The calls this resume closed as interrupted."""

    def messages(self, provider: str | None = None) -> list[dict[str, Any]]:
        """The tool history to put back into the conversation, in `provider`'s format (default: the
        invocation's own provider)."""
        return replay_history(self.history, provider or self.invocation.provider, self.invocation.snapshot)


def reader_of(runtime: Runtime) -> RecordReader:
    recorder = runtime.recorder
    if not all(hasattr(recorder, m) for m in ("history", "snapshot_json", "recover")):
        raise TooldeckError("records.unavailable", "resuming needs the records store; open the Runtime with "
                            "records=True (or a recorder that implements the records read API)")
    return recorder  # type: ignore[return-value]


def budget_used(history: InvocationHistory) -> BudgetState:
    """What the gate had charged: every call except those refused because the budget was spent."""
    state = BudgetState()
    for call in history.calls:
        if call.result is not None and call.result.error_code == BUDGET_EXHAUSTED:
            continue
        state.total += 1
        if call.tool_id is not None:
            state.per_tool[call.tool_id] = state.per_tool.get(call.tool_id, 0) + 1
    return state


def resume_invocation(runtime: Runtime, invocation_id: str, *, confirm: Confirm | None = None) -> Resumed:
    """Reopen `invocation_id` in `runtime`: interrupted calls are closed (never re-run), the stored
    snapshot is reused (names never shift), and the next `run()` continues at the next round."""
    from tooldeck.runtime import Invocation

    store = reader_of(runtime)
    recovered = store.recover(invocation_id, force=True)
    history = store.history(invocation_id)
    summary = history.summary
    snapshot = Snapshot.from_json(store.snapshot_json(summary.snapshot_id))
    run = runtime.run_state(summary.run_id)
    inv = Invocation(runtime, run, snapshot, runtime.profile, summary.scene, summary.headless,  # type: ignore[arg-type]
                     confirm or runtime.confirm, [])
    inv.id = invocation_id
    inv.projector.invocation_id = invocation_id
    inv.round = max((c.round for c in history.calls), default=0)
    inv.gate.budget = budget_used(history)
    runtime.recorder.record_event(invocation_id, "invocation_resumed", {
        "round": inv.round, "recovered": [[c.round, c.index, c.call_id, c.status] for c in recovered]})
    return Resumed(inv, history, recovered)


def interrupted_calls(store: RecordReader, invocation_id: str | None = None) -> list[CallRecord]:
    """Close the open calls whose process is gone (all stores do this when they open, too)."""
    return store.recover(invocation_id)
