"""The read side of the records: what replay, resume and the CLI get back from any adapter.

These are plain data; an adapter (SQLite today, PostgreSQL later) fills them. Statuses of a call:
`requested` (raw arguments stored, before the gate) → `started` (admitted, about to run) →
`completed` | `failed` | `outcome_unknown`. `requested` and `started` are *open*: the result has
not arrived yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooldeck.core.rawvalue import RawObject
from tooldeck.records.owner import Owner

OPEN_STATUSES = ("requested", "started")
FINAL_STATUSES = ("completed", "failed", "outcome_unknown")
STATUSES = OPEN_STATUSES + FINAL_STATUSES


@dataclass(slots=True)
class ResultRecord:
    content: str
    structured: Any
    is_error: bool
    error_code: str | None
    resource_refs: list[str]
    raw_result: Any
    effects: list[dict[str, Any]]
    recorded_at: float


@dataclass(slots=True)
class CallRecord:
    invocation_id: str
    round: int
    index: int
    call_id: str
    call_name: str
    tool_id: str | None
    raw_arguments: str | RawObject | None
    """The wire arguments exactly as sent: the str, a host object's JSON text, or the RawObject of a host
    object no JSON text holds (None when the field was absent)."""
    arguments: dict[str, Any] | None
    """The decoded, admitted arguments (None when the gate refused the call or it never got there)."""
    status: str
    requested_at: float
    started_at: float | None
    finished_at: float | None
    owner: Owner | None
    result: ResultRecord | None = None
    provider_data: dict[str, Any] | None = None
    """The call's provider data as the model sent it (e.g. Gemini `{"thoughtSignature": …}`), or None."""
    provider_items: list[dict[str, Any]] | None = None
    """The provider items of the call's turn (reasoning items, thinking blocks …), on the call that
    carries them (the turn's first), else None. `InvocationHistory.turn_items` finds them."""

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


@dataclass(slots=True)
class InvocationSummary:
    invocation_id: str
    run_id: str
    provider: str
    scene: str
    headless: bool
    snapshot_id: str
    created_at: float
    rounds: int = 0
    calls: int = 0
    errors: int = 0
    open_calls: int = 0
    unknown_outcomes: int = 0


@dataclass(slots=True)
class InvocationHistory:
    summary: InvocationSummary
    calls: list[CallRecord] = field(default_factory=list)
    """In (round, index) order: the order the model sent them, whatever the completion order."""

    @staticmethod
    def turn_items(calls: list[CallRecord]) -> list[dict[str, Any]]:
        """The provider items of a round's calls (as `rounds` yields them); empty when it had none."""
        for call in calls:
            if call.provider_items:
                return call.provider_items
        return []

    def rounds(self) -> Iterator[tuple[int, list[CallRecord]]]:
        current: list[CallRecord] = []
        round_no = None
        for call in self.calls:
            if call.round != round_no and current:
                yield round_no, current  # type: ignore[misc]
                current = []
            round_no = call.round
            current.append(call)
        if current:
            yield round_no, current  # type: ignore[misc]


@dataclass(slots=True)
class Event:
    seq: int
    invocation_id: str | None
    kind: str
    data: dict[str, Any]
    at: float


class RecordReader(Protocol):
    """Read API every records adapter provides (used by replay, resume and the CLI)."""

    def list_invocations(self, limit: int = 20, run_id: str | None = None) -> list[InvocationSummary]: ...

    def history(self, invocation_id: str) -> InvocationHistory: ...

    def snapshot_json(self, snapshot_id: str) -> str: ...

    def events(self, invocation_id: str) -> list[Event]: ...

    def recover(self, invocation_id: str | None = None, *, force: bool = False) -> list[CallRecord]: ...
