"""`restore_file`: bring back a removed file, put a recorded version back, or undo this run's edits.

`path` alone brings back the file most recently removed there; `path` + `version` puts that version
(a number `file_history` lists) in place, the replaced content becoming a new version; `task_id`
("current") restores every file this run's Agenvoy file tools changed to what it was before the run's
first change (a file the run created goes to the trash). All through the workspace engine: the same
trash, versions and file locks as `workspace_restore_file`.
"""

from __future__ import annotations

from typing import Any

from tooldeck.builtins import workspace_trash as trash
from tooldeck.builtins.agenvoy_files import descriptors, task
from tooldeck.builtins.agenvoy_files.common import FIELD_REQUIRED, workspace
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace import errors as E
from tooldeck.workspace.limits import MAX_FILE_BYTES
from tooldeck.workspace.names import shown
from tooldeck.workspace.store import ANY, Location, WorkspaceStore

TOOL_ID = ToolId.builtin("restore_file")


def restore_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    task_id = args.get("task_id")
    if task_id:
        task.check_task_id(ctx, task_id)
        return _restore_task(ctx, store, policy)
    if not args.get("path"):
        raise ToolCallError(FIELD_REQUIRED, "path is required (or task_id to restore every file this run changed)")
    loc = store.locate(policy, args["path"], write=True)
    version = args.get("version")
    out = _removed(store, loc) if version is None else _version(store, loc, version)
    store.read_states.drop(loc.key)
    return out


def _versions_text(store: WorkspaceStore, loc: Location) -> str:
    versions = trash.newest_versions(store, loc)
    listed = ", ".join(f"{v.number} ({v.size:,} bytes, {trash.utc(v.saved_at)})" for v in versions)
    return f"recorded versions, newest first: {listed}" if listed else ""


def _removed(store: WorkspaceStore, loc: Location) -> ToolOutput:
    try:
        entry = trash.bring_back(store, loc)
    except FileExistsError:
        raise ToolCallError(E.RESTORE_TARGET_EXISTS, f"{loc.shown} exists again, so the removed file cannot go back "
                            "there; remove or rename the current file first") from None
    if entry is None:
        listed = _versions_text(store, loc)
        if listed and store.kind(loc) is not None:
            raise ToolCallError(E.RESTORE_VERSION_REQUIRED, f"{loc.shown} was not removed; {listed}. Pass version to "
                                "put one of them back")
        raise ToolCallError(E.RESTORE_NOTHING_TO_RESTORE, f"{loc.shown} has nothing to restore: it was not removed"
                            + (f"; {listed}" if listed else " and has no recorded versions"))
    effect, structured = trash.from_trash(loc, entry)
    return ToolOutput(f"restored: {loc.shown} ({entry.size:,} bytes) from the trash; read it with read_files before "
                      "editing it", structured, resource_refs=[loc.shown], effects=[effect])


def _version(store: WorkspaceStore, loc: Location, version: int) -> ToolOutput:
    data = trash.version_data(store, loc, version)
    if data is None:
        raise ToolCallError(E.RESTORE_VERSION_NOT_FOUND, f"{loc.shown} has no version {version}; "
                            + (_versions_text(store, loc) or "it has no recorded versions"))
    swap, kept_as = trash.put_version(store, loc, data)
    kept = f"; the content it replaced is version {kept_as}" if kept_as is not None else ""
    effect, structured = trash.from_version(loc, version, swap)
    return ToolOutput(f"restored: {loc.shown} to version {version} ({len(data):,} bytes){kept}", structured,
                      resource_refs=[loc.shown], effects=[effect])


def _restore_task(ctx: CallContext, store: WorkspaceStore, policy: Any) -> ToolOutput:
    tracker = task.touched(ctx)
    answer: dict[str, str] = {}
    for rel, first in tracker.items():
        key = shown(rel)
        try:
            loc = store.locate(policy, rel, write=True)
            answer[key] = _undo(store, loc, first)
            store.read_states.drop(loc.key)
            tracker.forget(rel)
        except ToolCallError as exc:
            answer[key] = f"error: {exc.message}"
    if not answer:
        return ToolOutput("nothing to restore: this run has not changed a file with edit_file or remove_file", {})
    lines = [f"{p}: {what}" for p, what in answer.items()]
    return ToolOutput("\n".join(lines), answer, resource_refs=list(answer))


def _undo(store: WorkspaceStore, loc: Location, first: task.First) -> str:
    now = store.kind(loc)
    if first[0] == "created":
        if now is None:
            return "already gone (the run created it)"
        store.remove(loc)
        return "removed to the trash (the run created it)"
    if first[0] == "removed" and now is not None:
        raise ToolCallError(E.RESTORE_TARGET_EXISTS, f"{loc.shown} was removed in this run and exists again; remove "
                            "or rename the current file, then restore it")
    if now is None:
        if trash.bring_back(store, loc) is None:
            raise ToolCallError(E.RESTORE_NOTHING_TO_RESTORE, f"{loc.shown} is gone and not in the trash")
        if first[0] == "removed":
            return "brought back from the trash"
    version = first[1]
    data = store.history.version_bytes(loc.real_rel, version, MAX_FILE_BYTES)
    if data is None:
        raise ToolCallError(E.RESTORE_VERSION_NOT_FOUND, f"version {version} of {loc.shown} is no longer kept (only "
                            "the newest 20 are)")
    store.swap(loc, ANY, lambda _old: data)
    return f"back to its content before this run (version {version})"



DESCRIPTOR = descriptors.RESTORE_FILE
TOOLS = [BuiltinTool(DESCRIPTOR, restore_file, blocking=True)]
