"""`workspace.remove_file` (to the workspace trash) and `workspace.restore_file` (from the trash, or an
earlier version). Registered through `workspace_edit.TOOLS`."""

from __future__ import annotations

import time
from typing import Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import PATH_PROPERTY, roots_sentence, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E
from tooldeck.workspace.history import TrashEntry, Version
from tooldeck.workspace.limits import MAX_FILE_BYTES, check_size
from tooldeck.workspace.store import ANY, Location, Swap, WorkspaceStore

MUTATING = ToolAnnotations(mutating=True)


# -- remove_file / restore_file -----------------------------------------------------------------------
def remove_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    entry = store.remove(loc)
    effect = ToolEffect(effects.FILE_REMOVED, {"path": loc.shown, "sha256": entry.sha256, "size": entry.size})
    return ToolOutput(f"Removed {loc.shown} ({entry.size:,} bytes) to the workspace trash. Bring it back with "
                      f"`workspace_restore_file` and path `{loc.shown}`.",
                      {"path": loc.shown, "sha256": entry.sha256, "size": entry.size},
                      resource_refs=[loc.shown], effects=[effect])


def restore_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    version = args.get("version")
    if version is None:
        return _restore_removed(store, loc)
    return _restore_version(store, loc, version)


def _restore_removed(store: WorkspaceStore, loc: Location) -> ToolOutput:
    try:
        entry = bring_back(store, loc)
    except FileExistsError:
        raise ToolCallError(E.RESTORE_TARGET_EXISTS, f"`{loc.shown}` exists again, so the removed file cannot be put "
                            "back there. Remove or rename the current file first.") from None
    if entry is None:
        listed = _versions_text(store, loc)
        if listed and store.kind(loc) is not None:
            raise ToolCallError(E.RESTORE_VERSION_REQUIRED, f"`{loc.shown}` was not removed. {listed} Pass `version` "
                                "to restore one of them.")
        raise ToolCallError(E.RESTORE_NOTHING_TO_RESTORE, f"`{loc.shown}` has no removed file to bring back. "
                            + (f"{listed} Pass `version` to restore one." if listed else
                               "Check the path with `workspace_list_files`."))
    effect, structured = from_trash(loc, entry)
    return ToolOutput(f"Restored {loc.shown} ({entry.size:,} bytes) from the trash. Read it before editing it.",
                      structured, resource_refs=[loc.shown], effects=[effect])


def _restore_version(store: WorkspaceStore, loc: Location, version: int) -> ToolOutput:
    data = version_data(store, loc, version)
    if data is None:
        listed = _versions_text(store, loc)
        raise ToolCallError(E.RESTORE_VERSION_NOT_FOUND, f"`{loc.shown}` has no version {version}. "
                            + (listed or "It has no earlier versions."))
    swap, kept_as = put_version(store, loc, data)
    kept = f" The content it replaced was kept as version {kept_as}." if kept_as is not None else ""
    effect, structured = from_version(loc, version, swap)
    return ToolOutput(f"Restored {loc.shown} to version {version} ({len(data):,} bytes).{kept} Read it before "
                      "editing it.", structured, resource_refs=[loc.shown], effects=[effect])


def _versions_text(store: WorkspaceStore, loc: Location) -> str:
    shown = [f"{v.number} ({v.size:,} bytes, saved {utc(v.saved_at)})" for v in newest_versions(store, loc)]
    return f"Earlier versions, newest first: {', '.join(shown)}." if shown else ""


# -- what restore_file here and Agenvoy's restore_file share (each words its answers its own way) ---------
def bring_back(store: WorkspaceStore, loc: Location) -> TrashEntry | None:
    """Put the file most recently removed from `loc` back; None when the trash holds none. FileExistsError
    when something is at `loc` again."""
    entry = store.history.latest_removed(loc.real_rel)
    if entry is not None:
        store.restore_removed(loc, entry)
    return entry


def version_data(store: WorkspaceStore, loc: Location, version: int) -> bytes | None:
    """Version `version` of the file, or None when there is no such version. Its size is checked against the
    file limit before it is read (a version saved by a tooldeck without the limit) and after (it may have
    grown since its size was taken)."""
    size = store.history.version_size(loc.real_rel, version)
    if size is None:
        return None
    check_size(loc, size)
    data = store.history.version_bytes(loc.real_rel, version, MAX_FILE_BYTES)
    if data is not None:
        check_size(loc, len(data))
    return data


def put_version(store: WorkspaceStore, loc: Location, data: bytes) -> tuple[Swap, int | None]:
    """`data` in place of the file; the number of the version that keeps what it replaced (None: no file)."""
    swap = store.swap(loc, ANY, lambda _old: data)
    store.read_states.drop(loc.key)
    newest = store.history.versions(loc.real_rel) if swap.old_data is not None else []
    return swap, newest[-1].number if newest else None


def newest_versions(store: WorkspaceStore, loc: Location, limit: int = 10) -> list[Version]:
    return list(reversed(store.history.versions(loc.real_rel)[-limit:]))


def utc(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + " UTC"


def from_trash(loc: Location, entry: TrashEntry) -> tuple[ToolEffect, dict[str, Any]]:
    """The effect and the structured answer of a file brought back from the trash."""
    effect = ToolEffect(effects.FILE_RESTORED, {"path": loc.shown, "source": "trash", "sha256": entry.sha256})
    return effect, {"path": loc.shown, "source": "trash", "sha256": entry.sha256, "size": entry.size}


def from_version(loc: Location, version: int, swap: Swap) -> tuple[ToolEffect, dict[str, Any]]:
    """The effect and the structured answer of a version put back in place."""
    effect = ToolEffect(effects.FILE_RESTORED, {"path": loc.shown, "source": "version", "version": version,
                                                "previous_sha256": swap.old_sha256, "sha256": swap.sha256})
    return effect, {"path": loc.shown, "source": "version", "version": version, "sha256": swap.sha256,
                    "size": len(swap.data)}


REMOVE_FILE = ToolDescriptor(
    id=ToolId.builtin("workspace.remove_file"),
    title="Remove a workspace file",
    description="Move one file to the workspace trash; `workspace_restore_file` can bring it back. "
    + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {"path": PATH_PROPERTY},
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=MUTATING,
)

RESTORE_FILE = ToolDescriptor(
    id=ToolId.builtin("workspace.restore_file"),
    title="Restore a workspace file",
    description="Bring back a file removed with `workspace_remove_file` (omit `version`), or put an earlier "
    "version of a file back in place: every write keeps the previous content as a numbered version, and the "
    "error for an unknown version lists the available ones. " + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {
            "path": PATH_PROPERTY,
            "version": {"type": "integer", "description": "Version number to restore; omit to undo a removal."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=MUTATING,
)

TOOLS = [
    BuiltinTool(REMOVE_FILE, remove_file, blocking=True),
    BuiltinTool(RESTORE_FILE, restore_file, blocking=True),
]
