"""`workspace.write_file`, `workspace.apply_patch`, `workspace.remove_file`, `workspace.restore_file`.

Replacing or patching an existing file needs a prior read of the same bytes (the run's read-state);
the write itself is a compare-and-swap on the read sha256, so a concurrent change is refused as
stale instead of being overwritten.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import PATH_PROPERTY, profile_aware, roots_sentence, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E
from tooldeck.workspace.reading import count_words
from tooldeck.workspace.readstate import ReadState
from tooldeck.workspace.store import ANY, CasConflict, Location, Swap, WorkspaceStore, decode, sha256

MUTATING = ToolAnnotations(mutating=True)
_APPEND_ATTEMPTS = 5
_FULL_READ_HINT = ("Read the whole file with `workspace_read_file` (no start_line or line_count), then patch "
                   "again. A file longer than one page cannot be read in full; rewrite it with "
                   "`workspace_write_file` or edit it with the shell.")


def _stale(code: str, loc: Location, current_sha: str | None) -> ToolCallError:
    if current_sha is None:
        return ToolCallError(code, f"`{loc.rel}` no longer exists. List its folder with `workspace_list_files` "
                             "to see what is there, then read or write it again.")
    return ToolCallError(code, f"`{loc.rel}` changed since you read it. Read it again with `workspace_read_file`, "
                         "then retry with the current content.")


# -- write_file ---------------------------------------------------------------------------------------
def write_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or "replace"
    if mode not in ("replace", "append"):
        raise ToolCallError(E.WRITE_MODE_INVALID, f"mode must be `replace` or `append` (got `{mode}`).")
    content: str = args["content"]
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    data = content.encode("utf-8")
    swap = _replace(store, loc, data, content) if mode == "replace" else _append(store, loc, data, content)
    chars, words = len(content), count_words(content)
    verb = "Wrote" if mode == "replace" else "Appended"
    structured = {"path": loc.rel, "mode": mode, "chars": chars, "words": words, "sha256": swap.sha256}
    effect = ToolEffect(effects.FILE_WRITTEN, {"path": loc.rel, "mode": mode, "sha256": swap.sha256,
                                               "previous_sha256": swap.old_sha256, "chars": chars})
    return ToolOutput(f"{verb} {chars} chars / {words} words to {loc.rel}.", structured,
                      resource_refs=[loc.rel], effects=[effect])


def _replace(store: WorkspaceStore, loc: Location, data: bytes, content: str) -> Swap:
    state = store.read_states.get(loc.key)
    current = store.current_sha(loc)
    if current is None:
        guard: str | None = None
    elif state is None:
        raise ToolCallError(E.WRITE_REQUIRES_READ, f"`{loc.rel}` already exists. Read it with "
                            "`workspace_read_file` before replacing it, or use mode `append` to add to it.")
    elif state.sha256 != current:
        raise _stale(E.WRITE_STALE_FILE, loc, current)
    else:
        guard = state.sha256
    try:
        swap = store.swap(loc, guard, lambda _old: data)
    except CasConflict as exc:
        raise _stale(E.WRITE_STALE_FILE, loc, exc.current_sha) from None
    store.read_states.record_full(loc.key, swap.sha256, content)
    return swap


def _append(store: WorkspaceStore, loc: Location, data: bytes, content: str) -> Swap:
    for _ in range(_APPEND_ATTEMPTS):
        try:
            swap = store.swap(loc, ANY, lambda old: (old or b"") + data)
            break
        except CasConflict:
            continue  # the file appeared between the read and the link; append to it now
    else:
        raise _stale(E.WRITE_STALE_FILE, loc, store.current_sha(loc))
    states = store.read_states
    state = states.get(loc.key)
    old_text = _text_or_none(swap.old_data)
    if swap.old_data is None or (state is not None and state.full_read and state.sha256 == swap.old_sha256
                                 and old_text is not None):
        states.record_full(loc.key, swap.sha256, (old_text or "") + content)
    elif state is not None and state.sha256 == swap.old_sha256:
        states.put(loc.key, ReadState(swap.sha256, False, "", state.lines, (*state.fragments, content),
                                      state.require_full_read))
    # else: the model never saw these bytes; the read-state stays as it was (missing or stale)
    return swap


def _text_or_none(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


WRITE_FILE = ToolDescriptor(
    id=ToolId.builtin("workspace.write_file"),
    title="Write a workspace file",
    description="Create or overwrite a text file, or append to it (folders are created as needed). To replace "
    "an existing file you must have read it with `workspace_read_file` and it must be unchanged since; append "
    "needs no read and creates a missing file. Only files inside the writable folders can be written, not the "
    "folders themselves. " + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {
            "path": PATH_PROPERTY,
            "content": {"type": "string", "description": "The text to write, exactly as it should be stored."},
            "mode": {"type": "string", "description": "`replace` (default) or `append`."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    annotations=MUTATING,
)


# -- apply_patch --------------------------------------------------------------------------------------
def apply_patch(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    old: str = args["old_string"]
    new: str = args["new_string"]
    replace_all = bool(args.get("replace_all", False))
    if old == "":  # (1)
        raise ToolCallError(E.PATCH_EMPTY_OLD_STRING, "old_string is empty. To create or overwrite a whole "
                            "file use `workspace_write_file`.")
    if old == new:  # (2)
        raise ToolCallError(E.PATCH_NO_CHANGE, "old_string and new_string are the same, so there is nothing to "
                            "change.")
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)  # (3)
    state = store.read_states.get(loc.key)
    if state is None:  # (4)
        raise ToolCallError(E.PATCH_REQUIRES_READ, f"Read `{loc.rel}` with `workspace_read_file` before patching it.")
    try:
        swap, count = _patch(store, loc, state, old, new, replace_all)
    except ToolCallError:
        if not state.full_read:
            store.read_states.flag_full_read_required(loc.key, state)
        raise
    new_text = swap.data.decode("utf-8")
    if state.full_read:
        store.read_states.record_full(loc.key, swap.sha256, new_text)
    else:
        texts = tuple(t.replace(old, new) for t in state.observed_texts())
        store.read_states.put(loc.key, ReadState(swap.sha256, False, "", fragments=texts))
    chars, words = len(new_text), count_words(new_text)
    structured = {"path": loc.rel, "chars": chars, "words": words, "oldSha256": swap.old_sha256,
                  "sha256": swap.sha256, "replacements": count}
    effect = ToolEffect(effects.FILE_PATCHED, {"path": loc.rel, "previous_sha256": swap.old_sha256,
                                               "sha256": swap.sha256, "replacements": count})
    return ToolOutput(f"Patched {loc.rel} with {count} replacement{'s' if count != 1 else ''}; file now has "
                      f"{chars} chars / {words} words.", structured, resource_refs=[loc.rel], effects=[effect])


def _patch(store: WorkspaceStore, loc: Location, state: ReadState, old: str, new: str,
           replace_all: bool) -> tuple[Swap, int]:
    if not state.full_read:
        if state.require_full_read:  # (5)
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"An earlier patch of `{loc.rel}` failed after a "
                                f"partial read. {_FULL_READ_HINT}")
        if replace_all:  # (6)
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"replace_all needs the whole file, and `{loc.rel}` "
                                f"was only partly read. {_FULL_READ_HINT}")
        if not state.observed_contains(old):  # (7)
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"old_string is not in the part of `{loc.rel}` you "
                                f"have read. {_FULL_READ_HINT}")
    current = store.read_if_exists(loc)
    current_sha = None if current is None else sha256(current)
    if current is None or current_sha != state.sha256:  # (8)
        raise _stale(E.PATCH_STALE_FILE, loc, current_sha)
    text = decode(loc, current)
    count = text.count(old)
    if count == 0:  # (9)
        raise ToolCallError(E.PATCH_OLD_STRING_NOT_FOUND, f"old_string was not found in `{loc.rel}`. Copy it "
                            "exactly from `workspace_read_file` output, without the line numbers and tab.")
    if count > 1 and not replace_all:  # (10)
        raise ToolCallError(E.PATCH_OLD_STRING_NOT_UNIQUE, f"old_string matched {count} times in `{loc.rel}`. "
                            "Add surrounding lines to make it unique, or set replace_all to true.")
    patched = (text.replace(old, new) if replace_all else text.replace(old, new, 1)).encode("utf-8")
    try:  # (11)
        swap = store.swap(loc, state.sha256, lambda _old: patched)
    except CasConflict as exc:
        raise _stale(E.PATCH_STALE_FILE, loc, exc.current_sha) from None
    return swap, count if replace_all else 1


APPLY_PATCH = ToolDescriptor(
    id=ToolId.builtin("workspace.apply_patch"),
    title="Patch a workspace file",
    description="Replace exact text in a file: `old_string` must occur exactly once, or set `replace_all`. "
    "Read the file first with `workspace_read_file`; after a partial read, `old_string` must lie in the lines "
    "you read (and `replace_all` needs a full read). Copy `old_string` without line numbers. " + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {
            "path": PATH_PROPERTY,
            "old_string": {"type": "string", "description": "Exact text to replace (whitespace included)."},
            "new_string": {"type": "string", "description": "Text to put in its place."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    },
    annotations=MUTATING,
)


# -- remove_file / restore_file -----------------------------------------------------------------------
def remove_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    entry = store.remove(loc)
    effect = ToolEffect(effects.FILE_REMOVED, {"path": loc.rel, "sha256": entry.sha256, "size": entry.size})
    return ToolOutput(f"Removed {loc.rel} ({entry.size:,} bytes) to the workspace trash. Bring it back with "
                      f"`workspace_restore_file` and path `{loc.rel}`.",
                      {"path": loc.rel, "sha256": entry.sha256, "size": entry.size},
                      resource_refs=[loc.rel], effects=[effect])


def restore_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    version = args.get("version")
    if version is None:
        return _restore_removed(store, loc)
    return _restore_version(store, loc, version)


def _restore_removed(store: WorkspaceStore, loc: Location) -> ToolOutput:
    entry = store.history.latest_removed(loc.real_rel)
    if entry is None:
        listed = _versions_text(store, loc)
        if listed and store.kind(loc) is not None:
            raise ToolCallError(E.RESTORE_VERSION_REQUIRED, f"`{loc.rel}` was not removed. {listed} Pass `version` "
                                "to restore one of them.")
        raise ToolCallError(E.RESTORE_NOTHING_TO_RESTORE, f"`{loc.rel}` has no removed file to bring back. "
                            + (f"{listed} Pass `version` to restore one." if listed else
                               "Check the path with `workspace_list_files`."))
    try:
        store.restore_removed(loc, entry)
    except FileExistsError:
        raise ToolCallError(E.RESTORE_TARGET_EXISTS, f"`{loc.rel}` exists again, so the removed file cannot be put "
                            "back there. Remove or rename the current file first.") from None
    effect = ToolEffect(effects.FILE_RESTORED, {"path": loc.rel, "source": "trash", "sha256": entry.sha256})
    return ToolOutput(f"Restored {loc.rel} ({entry.size:,} bytes) from the trash. Read it before editing it.",
                      {"path": loc.rel, "source": "trash", "sha256": entry.sha256, "size": entry.size},
                      resource_refs=[loc.rel], effects=[effect])


def _restore_version(store: WorkspaceStore, loc: Location, version: int) -> ToolOutput:
    data = store.history.version_bytes(loc.real_rel, version) if version >= 1 else None
    if data is None:
        listed = _versions_text(store, loc)
        raise ToolCallError(E.RESTORE_VERSION_NOT_FOUND, f"`{loc.rel}` has no version {version}. "
                            + (listed or "It has no earlier versions."))
    swap = store.swap(loc, ANY, _constant(data))
    store.read_states.drop(loc.key)
    kept = ""
    if swap.old_data is not None:
        newest = store.history.versions(loc.real_rel)
        if newest:
            kept = f" The content it replaced was kept as version {newest[-1].number}."
    effect = ToolEffect(effects.FILE_RESTORED, {"path": loc.rel, "source": "version", "version": version,
                                                "previous_sha256": swap.old_sha256, "sha256": swap.sha256})
    return ToolOutput(f"Restored {loc.rel} to version {version} ({len(data):,} bytes).{kept} Read it before "
                      "editing it.", {"path": loc.rel, "source": "version", "version": version,
                                      "sha256": swap.sha256, "size": len(data)},
                      resource_refs=[loc.rel], effects=[effect])


def _constant(data: bytes) -> Callable[[bytes | None], bytes]:
    return lambda _old: data


def _versions_text(store: WorkspaceStore, loc: Location, limit: int = 10) -> str:
    versions = store.history.versions(loc.real_rel)
    if not versions:
        return ""
    shown = [f"{v.number} ({v.size:,} bytes, saved {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(v.saved_at))} "
             "UTC)" for v in reversed(versions[-limit:])]
    return f"Earlier versions, newest first: {', '.join(shown)}."


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

TOOLS = profile_aware([
    BuiltinTool(WRITE_FILE, write_file, blocking=True),
    BuiltinTool(APPLY_PATCH, apply_patch, blocking=True),
    BuiltinTool(REMOVE_FILE, remove_file, blocking=True),
    BuiltinTool(RESTORE_FILE, restore_file, blocking=True),
])
