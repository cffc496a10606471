"""What this run's Agenvoy file tools changed, so `restore_file(task_id="current")` can undo it and
`file_history(task_id="current")` can list it. Agenvoy's task is tooldeck's run.

Per file, the first change of the run is kept: `("version", n)` (the content before it was saved as
version `n`), `("created",)` (the file did not exist) or `("removed",)` (removed before any edit).
"""

from __future__ import annotations

import threading
from typing import Any, Final

from tooldeck.builtins.agenvoy_files.common import TASK_UNKNOWN
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.store import WorkspaceStore

STATE_KEY: Final = "tooldeck.agenvoy_files.task"
First = tuple[Any, ...]


class Touched:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first: dict[str, First] = {}

    def note_swap(self, store: WorkspaceStore, rel: str, existed: bool) -> None:
        with self._lock:
            if rel in self.first:
                return
            if not existed:
                self.first[rel] = ("created",)
                return
            versions = store.history.versions(rel)
            if versions:
                self.first[rel] = ("version", versions[-1].number)

    def note_removed(self, rel: str) -> None:
        with self._lock:
            self.first.setdefault(rel, ("removed",))

    def items(self) -> list[tuple[str, First]]:
        with self._lock:
            return sorted(self.first.items())

    def forget(self, rel: str) -> None:
        with self._lock:
            self.first.pop(rel, None)


def touched(ctx: CallContext) -> Touched:
    state = ctx.run.state
    found = state.get(STATE_KEY)
    if found is None:
        found = state.setdefault(STATE_KEY, Touched())
    return found


def check_task_id(ctx: CallContext, task_id: str) -> None:
    if task_id not in ("current", ctx.run.run_id):
        raise ToolCallError(TASK_UNKNOWN, f'task_id "{task_id}" is not this run; use "current" (the edits of this run '
                            "are the only task tooldeck keeps)")
