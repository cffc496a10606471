"""A turn's wire calls as the records port takes them (`RequestedCall`, `FinishedCall`).

- `requested`: each call with its raw wire arguments verbatim, in call order, and the provider slot
  `provider_slots` made of the turn's provider items and each call's provider data;
- `record_unpaired_turn`: a turn refused whole because a call has no id (`model.invalid_tool_call`):
  every call is recorded and closed as `failed`, nothing ran;
- `unprojected`: the finished calls' results without projection, for a turn a fault closes when even
  a spill file cannot be written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tooldeck.catalog.sources import UNFINISHED, TurnState
from tooldeck.core.errors import INVALID_TOOL_CALL
from tooldeck.core.results import AgentToolResult, as_output
from tooldeck.protocols.items import check_data, check_items
from tooldeck.records.port import FinishedCall, Recorder, RequestedCall
from tooldeck.wire import Call, has_id

if TYPE_CHECKING:
    from tooldeck.gate import Admitted, Refused
    from tooldeck.policy.redact import Redactor


Slots = list[dict[str, Any] | None] | None
"""Each call's provider slot (`records/turns.py`), or None for a turn without provider items or data."""


def requested(wire: Sequence[Call], slots: Slots = None) -> list[RequestedCall]:
    if slots is None:
        return [RequestedCall(c.id, c.name, c.raw_text(), i) for i, c in enumerate(wire)]
    return [RequestedCall(c.id, c.name, c.raw_text(), i, slots[i]) for i, c in enumerate(wire)]


def provider_slots(calls: Sequence[Any], items: Any, family: str) -> Slots:
    """What the turn keeps of the provider beside each call: the turn's provider items on its first call,
    each call's `"provider_data"`; None when there is nothing. Checked before anything of the turn runs
    or is recorded (`invocation.provider_items_invalid`, `invocation.provider_data_invalid`)."""
    slots: Slots = None
    if items is not None:
        kept = check_items(items, family)
        if kept and calls:
            slots = [None] * len(calls)
            slots[0] = {"items": kept}
    for i, c in enumerate(calls):  # records on only, but every such turn: a dict needs no ABC check
        data = c.get("provider_data") if type(c) is dict or isinstance(c, Mapping) else None
        if data is None:
            continue
        if slots is None:
            slots = [None] * len(calls)
        slot = slots[i]
        if slot is None:
            slot = slots[i] = {}
        slot["data"] = check_data(data, family, i)
    return slots


def record_unpaired_turn(recorder: Recorder, invocation_id: str, round_no: int, calls: Iterable[Any],
                         slots: Slots = None) -> None:
    """A turn refused because a call has no id: every call is recorded (raw arguments verbatim) and
    closed as `failed` with `model.invalid_tool_call` before the error propagates; nothing ran."""
    calls = list(calls)
    wire = [Call.salvage(c) for c in calls]
    now = time.time()
    recorder.calls_requested(invocation_id, round_no, requested(wire, slots), now)
    recorder.calls_finished(invocation_id, round_no, _unpaired(wire, calls, now))


def _unpaired(wire: list[Call], calls: list[Any], now: float) -> list[FinishedCall]:
    """The results recorded for a turn refused because some of its calls have no id."""
    missing = [i for i, c in enumerate(calls) if not has_id(c)]
    shown = ", ".join(str(i + 1) for i in missing[:10]) + (", …" if len(missing) > 10 else "")
    without_id = set(missing)
    out = []
    for i, c in enumerate(wire):
        if i in without_id:
            text = ("This call has no id (a non-empty string), so its result could not be paired with it; no call "
                    "of this turn was run. Send the calls again, each with its own id.")
        else:
            text = (f"Not run: call {shown} of this turn had no id, so the whole turn was refused; nothing was "
                    "executed. Call it again if it is still needed.")
        out.append(FinishedCall(c.id, i, None, "failed", None, text,
                                {"error": {"code": INVALID_TOOL_CALL, "message": text}, "executed": False}, True,
                                INVALID_TOOL_CALL, [], None, None, now))
    return out


def unprojected(turn: TurnState, checks: Sequence[Admitted | Refused],
                redactor: Redactor | None = None) -> list[AgentToolResult | None]:
    """Each finished call's result without projection (no spill file), its secrets redacted all the same:
    for records a fault closes."""
    results: list[AgentToolResult | None] = []
    for c, chk, out in zip(turn.calls, checks, turn.outputs, strict=False):
        if out is UNFINISHED:
            results.append(None)
            continue
        o = as_output(out)
        redaction = None
        if redactor is not None:
            o, redaction = redactor.output(o)
        results.append(AgentToolResult(c.id, chk.entry.tool_id if chk.entry is not None else None, o.content,
                                       o.structured, o.is_error, o.error_code, list(o.resource_refs), o.redacted,
                                       redaction))
    return results
