"""`RunState`: what the invocations of one run share (its workspace root and per-run tool state).

Plain data: the Runtime creates the workspace directory and keeps the runs; tools reach their run
through `CallContext.run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tooldeck.records.port import Recorder


@dataclass
class RunState:
    """State shared by the invocations of one run: its workspace and per-run tool state."""

    run_id: str
    workspace_root: Path
    state: dict[str, Any] = field(default_factory=dict)
    records: Recorder | None = None
    """The runtime's records store when records are on (tools may keep run-scoped events there)."""
    home: Path | None = None
    """The runtime's home, for what tools keep across runs (e.g. `fetch_page`'s skip-cache)."""

    def close(self) -> None:
        """Close what tool families keep in `state` (e.g. stop background tasks) before the store closes."""
        for value in list(self.state.values()):
            close = getattr(value, "close", None)
            if callable(close):
                close()
