"""The records port. Nothing outside `records/` speaks SQL; the runtime writes through this interface.

Write pattern per model turn (a killed process loses no raw arguments, no refusal and no result
that had arrived; see docs/records.md): `calls_admitted` once after the gate and before any tool
runs (the raw wire arguments verbatim, the admitted calls as started, and the gate's refusals with
their results), then `calls_finished` with the results as they arrive: in a turn of several calls,
the results that arrived while others still run are written in batches (records/writer.py), and
the end of the turn writes the rest. The gate runs no tool and does no I/O; should it raise, the
runtime still writes the raw arguments with `calls_requested` before the error propagates.
`calls_requested` + `calls_started` remain for hosts that record the steps separately.
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

    def close(self) -> None: ...


class NullRecorder:
    """Records off."""

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

    def close(self) -> None:
        return None
