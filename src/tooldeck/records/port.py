"""The records port. Nothing outside `records/` speaks SQL; the runtime writes through this interface.

Write pattern per model turn (a killed process loses no raw arguments, and the hot path pays two
transactions): `calls_admitted` once after the gate and before any tool runs (the raw wire
arguments verbatim, and the admitted calls as started), then `calls_finished` once with every
result. The gate runs no tool and does no I/O; should it raise, the runtime still writes the raw
arguments with `calls_requested` before the error propagates. `calls_requested` + `calls_started`
remain for hosts that record the steps separately.
"""

from __future__ import annotations

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
    finished_at: float
    effects: list[dict[str, Any]] = field(default_factory=list)


class Recorder(Protocol):
    def invocation_started(self, info: InvocationInfo) -> None: ...

    def calls_requested(self, invocation_id: str, round: int, calls: list[RequestedCall], at: float) -> None: ...

    def calls_started(self, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None: ...

    def calls_admitted(self, invocation_id: str, round: int, requested: list[RequestedCall],
                       started: list[StartedCall], at: float) -> None:
        """`calls_requested` and `calls_started` in one transaction."""
        ...

    def calls_finished(self, invocation_id: str, round: int, calls: list[FinishedCall]) -> None: ...

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
                       started: list[StartedCall], at: float) -> None:
        return None

    def calls_finished(self, invocation_id: str, round: int, calls: list[FinishedCall]) -> None:
        return None

    def close(self) -> None:
        return None
