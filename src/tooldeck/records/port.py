"""The records port. Nothing outside `records/` speaks SQL; the runtime writes through this interface.

Write pattern per model turn (a killed process loses no raw arguments, no refusal and no result
that had arrived; see docs/records.md): `calls_admitted` once after the gate and before any tool
runs (the raw wire arguments verbatim, the admitted calls as started, and the gate's refusals with
their results), then `calls_finished` with the results as they arrive: in a turn of several calls,
the results that arrived while others still run are written in batches (records/writer.py), and
the end of the turn writes the rest. The gate runs no tool and does no I/O; should it raise, the
runtime still writes the raw arguments with `calls_requested` before the error propagates.
`calls_requested` + `calls_started` remain for hosts that record the steps separately.

The port also holds the event log: `record_event` (an invocation's events, e.g. `invocation_resumed`)
and the run-scoped streams (`append_run_event` / `run_events`, e.g. the shell's background tasks).
`recording` says whether the recorder keeps anything: the runtime decides "records on" by it, not by
the recorder's type, so a subclass of `NullRecorder` that records is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooldeck.core.rawvalue import RawObject


@dataclass(slots=True)
class InvocationInfo:
    run_id: str
    invocation_id: str
    provider: str
    scene: str
    headless: bool
    snapshot_id: str
    snapshot_json: str
    created_at: float


@dataclass(slots=True)
class RequestedCall:
    call_id: str
    name: str
    raw_arguments: str | RawObject | None
    """The wire arguments verbatim (`core.rawvalue`): the string as sent, the compact JSON text of a host
    object, or a RawObject for a host object no JSON text holds; None if absent."""
    index: int
    provider: dict[str, Any] | None = None
    """What the turn keeps of the provider beside this call (`records/turns.py`), None when nothing:
    `{"data": …}` the call's provider data, and on the turn's first call `{"items": […]}` the turn's
    provider items (both verbatim JSON; see `protocols/items.py`)."""


@dataclass(slots=True)
class StartedCall:
    call_id: str
    index: int
    tool_id: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class FinishedCall:
    call_id: str
    index: int
    tool_id: str | None
    status: str
    """`completed` | `failed` | `outcome_unknown`."""
    arguments: dict[str, Any] | None
    content: str
    structured: Any
    is_error: bool
    error_code: str | None
    resource_refs: list[str]
    raw_result: Any
    started_at: float | None
    """When the tool started; None if it never did (a refusal) or is not known."""
    finished_at: float | None
    """When its result arrived; None when that is not known (a call whose result never arrived)."""
    effects: list[dict[str, Any]] = field(default_factory=list)


class Recorder(Protocol):
    recording: bool
    """True if this recorder keeps records: the runtime then builds and writes a turn's records (and
    runs hand their event streams to it); False for `NullRecorder` (records off)."""

    def invocation_started(self, info: InvocationInfo) -> None: ...

    def calls_requested(self, invocation_id: str, round: int, calls: list[RequestedCall], at: float) -> None: ...

    def calls_started(self, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None: ...

    def calls_admitted(self, invocation_id: str, round: int, requested: list[RequestedCall],
                       started: list[StartedCall], at: float, refused: Sequence[FinishedCall] = ()) -> None:
        """`calls_requested` and `calls_started` in one transaction, with the results of the calls
        the gate refused (`refused`: each a requested call that is not in `started`)."""
        ...

    def calls_finished(self, invocation_id: str, round: int, calls: list[FinishedCall]) -> None:
        """A batch of results, in any order; a turn may get several batches (at most one result per
        call: a repeat is kept apart and does not change the recorded outcome)."""
        ...

    def record_event(self, invocation_id: str | None, kind: str, data: dict[str, Any]) -> None:
        """An event of an invocation (kept in order; read back with the read API's `events`)."""
        ...

    def append_run_event(self, run_id: str, kind: str, data: dict[str, Any]) -> None:
        """Append `data` to the run's `kind` stream."""
        ...

    def run_events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        """The run's `kind` stream, in the order appended."""
        ...

    def close(self) -> None: ...


class NullRecorder:
    """Records off: every write is dropped and nothing reads back (`recording` is False, so the runtime
    writes nothing through it and runs keep their event streams elsewhere, e.g. the shell's background
    log in the workspace). Subclass it and set `recording = True` for a recorder that keeps only some
    of the port."""

    recording: bool = False

    def invocation_started(self, info: InvocationInfo) -> None:
        return None

    def calls_requested(self, invocation_id: str, round: int, calls: list[RequestedCall], at: float) -> None:
        return None

    def calls_started(self, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None:
        return None

    def calls_admitted(self, invocation_id: str, round: int, requested: list[RequestedCall],
                       started: list[StartedCall], at: float, refused: Sequence[FinishedCall] = ()) -> None:
        return None

    def calls_finished(self, invocation_id: str, round: int, calls: list[FinishedCall]) -> None:
        return None

    def record_event(self, invocation_id: str | None, kind: str, data: dict[str, Any]) -> None:
        return None

    def append_run_event(self, run_id: str, kind: str, data: dict[str, Any]) -> None:
        return None

    def run_events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        return None
