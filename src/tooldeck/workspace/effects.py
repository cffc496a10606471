"""Effects of the workspace tools, and a small read API for hosts.

Tools put `ToolEffect`s in their output; the invocation collects them as `(call_id, effect)` pairs in
`Invocation.effects` and the records keep them. A host usually wants three answers after a model
turn, which these functions give without knowing the effect dicts:

    from tooldeck.workspace import effects
    for commit in effects.commits(invocation):      # publish the reply body
        host.publish(commit.text, mode=commit.mode)
    if effects.finish(invocation) is not None:      # the model finished the run
        ...
    effects.changed_files(invocation)               # paths written, patched, removed or restored
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from tooldeck.core.results import ToolEffect

FILE_WRITTEN: Final = "workspace_file_written"
FILE_PATCHED: Final = "workspace_file_patched"
FILE_REMOVED: Final = "workspace_file_removed"
FILE_RESTORED: Final = "workspace_file_restored"
COMMIT_REQUESTED: Final = "chat_commit_requested"
FINISH: Final = "finish"
FILE_EFFECTS: Final = (FILE_WRITTEN, FILE_PATCHED, FILE_REMOVED, FILE_RESTORED)


@dataclass(frozen=True, slots=True)
class CommitRequest:
    """`workspace_commit`: publish `text` (the file's content at commit time) as the run's reply."""

    call_id: str
    path: str
    mode: str
    """`replace` rewrites the run's reply; `append` extends it (or creates it)."""
    reason: str | None
    sha256: str
    text: str


@dataclass(frozen=True, slots=True)
class FinishRequest:
    call_id: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class FileChange:
    call_id: str
    kind: str
    path: str
    sha256: str | None


def _pairs(source: Any) -> Iterable[tuple[str, ToolEffect]]:
    """Accepts an `Invocation` (its `.effects`) or a list of `(call_id, ToolEffect)` pairs."""
    return getattr(source, "effects", source)


def commits(source: Any) -> list[CommitRequest]:
    return [CommitRequest(cid, e.data["path"], e.data["mode"], e.data.get("reason"), e.data["sha256"],
                          e.data["text"]) for cid, e in _pairs(source) if e.kind == COMMIT_REQUESTED]


def finish(source: Any) -> FinishRequest | None:
    """The admitted finish of the model turns seen so far, if any."""
    for cid, e in _pairs(source):
        if e.kind == FINISH:
            return FinishRequest(cid, e.data.get("reason"))
    return None


def changed_files(source: Any) -> list[FileChange]:
    return [FileChange(cid, e.kind, e.data["path"], e.data.get("sha256"))
            for cid, e in _pairs(source) if e.kind in FILE_EFFECTS]
