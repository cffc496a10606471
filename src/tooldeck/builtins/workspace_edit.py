"""`workspace.write_file` and `workspace.apply_patch` (and the family's TOOLS, with `workspace_trash`'s
`remove_file` and `restore_file`).

Replacing or patching an existing file needs a prior read of the same bytes (the run's read-state);
the write itself is a compare-and-swap on the read sha256, so a concurrent change (by a thread or by
another process) is refused as stale instead of being overwritten. The size of what a write would
make is checked against `MAX_FILE_BYTES` before the new content is built.
"""

from __future__ import annotations

from typing import Any

from tooldeck.builtins import workspace_trash
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import PATH_PROPERTY, profile_aware, roots_sentence, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E
from tooldeck.workspace.limits import MAX_FILE_BYTES, check_size, encoded, utf8_size
from tooldeck.workspace.reading import count_words
from tooldeck.workspace.readstate import ReadState
from tooldeck.workspace.store import ANY, CasConflict, Location, Swap, WorkspaceStore, decode, sha256
from tooldeck.workspace.text import decode_utf8, encode_utf8

MUTATING = ToolAnnotations(mutating=True)
_APPEND_ATTEMPTS = 5
_FULL_READ_HINT = ("Read the whole file with `workspace_read_file` (no start_line or line_count), then patch "
                   "again. A file longer than one page cannot be read in full; rewrite it with "
                   "`workspace_write_file` or edit it with the shell.")


def _stale(code: str, loc: Location, current_sha: str | None) -> ToolCallError:
    if current_sha is None:
        return ToolCallError(code, f"`{loc.shown}` no longer exists. List its folder with `workspace_list_files` "
                             "to see what is there, then read or write it again.")
    return ToolCallError(code, f"`{loc.shown}` changed since you read it. Read it again with `workspace_read_file`, "
                         "then retry with the current content.")


# -- write_file ---------------------------------------------------------------------------------------
def write_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or "replace"
    if mode not in ("replace", "append"):
        raise ToolCallError(E.WRITE_MODE_INVALID, f"mode must be `replace` or `append` (got `{mode}`).")
    content: str = args["content"]
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    if len(content) > MAX_FILE_BYTES // 4:  # shorter ones cannot reach the limit (a character is <= 4 bytes)
        check_size(loc, utf8_size(content))
    data = encoded(content, "content")
    swap = _replace(store, loc, data, content) if mode == "replace" else _append(store, loc, data, content)
    chars, words = len(content), count_words(content)
    verb = "Wrote" if mode == "replace" else "Appended"
    structured = {"path": loc.shown, "mode": mode, "chars": chars, "words": words, "sha256": swap.sha256}
    effect = ToolEffect(effects.FILE_WRITTEN, {"path": loc.shown, "mode": mode, "sha256": swap.sha256,
                                               "previous_sha256": swap.old_sha256, "chars": chars})
    return ToolOutput(f"{verb} {chars} chars / {words} words to {loc.shown}.", structured,
                      resource_refs=[loc.shown], effects=[effect])


def _replace(store: WorkspaceStore, loc: Location, data: bytes, content: str) -> Swap:
    state = store.read_states.get(loc.key)
    current = store.current_sha(loc)
    if current is None:
        guard: str | None = None
    elif state is None:
        raise ToolCallError(E.WRITE_REQUIRES_READ, f"`{loc.shown}` already exists. Read it with "
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
            swap = store.swap(loc, ANY, lambda old: _appended(loc, old, data), size=lambda now: now + len(data))
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


def _appended(loc: Location, old: bytes | None, data: bytes) -> bytes:
    if old is None:
        return data
    check_size(loc, len(old) + len(data))
    return old + data


def _text_or_none(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return decode_utf8(data)
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
        raise ToolCallError(E.PATCH_REQUIRES_READ, f"Read `{loc.shown}` with `workspace_read_file` before patching it.")
    try:
        swap, count = _patch(store, loc, state, old, new, replace_all)
    except ToolCallError:
        if not state.full_read:
            store.read_states.flag_full_read_required(loc.key, state)
        raise
    new_text = decode_utf8(swap.data)
    if state.full_read:
        store.read_states.record_full(loc.key, swap.sha256, new_text)
    else:
        texts = tuple(t.replace(old, new) for t in state.observed_texts())
        store.read_states.put(loc.key, ReadState(swap.sha256, False, "", fragments=texts))
    chars, words = len(new_text), count_words(new_text)
    structured = {"path": loc.shown, "chars": chars, "words": words, "oldSha256": swap.old_sha256,
                  "sha256": swap.sha256, "replacements": count}
    effect = ToolEffect(effects.FILE_PATCHED, {"path": loc.shown, "previous_sha256": swap.old_sha256,
                                               "sha256": swap.sha256, "replacements": count})
    return ToolOutput(f"Patched {loc.shown} with {count} replacement{'s' if count != 1 else ''}; file now has "
                      f"{chars} chars / {words} words.", structured, resource_refs=[loc.shown], effects=[effect])


def _patch(store: WorkspaceStore, loc: Location, state: ReadState, old: str, new: str,
           replace_all: bool) -> tuple[Swap, int]:
    if not state.full_read:
        if state.require_full_read:  # (5)
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"An earlier patch of `{loc.shown}` failed after a "
                                f"partial read. {_FULL_READ_HINT}")
        if replace_all:  # (6)
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"replace_all needs the whole file, and `{loc.shown}` "
                                f"was only partly read. {_FULL_READ_HINT}")
        if not state.observed_contains(old):  # (7)
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"old_string is not in the part of `{loc.shown}` you "
                                f"have read. {_FULL_READ_HINT}")
    current = store.read_if_exists(loc)
    current_sha = None if current is None else sha256(current)
    if current is None or current_sha != state.sha256:  # (8)
        raise _stale(E.PATCH_STALE_FILE, loc, current_sha)
    text = decode(loc, current)
    count = text.count(old)
    if count == 0:  # (9)
        raise ToolCallError(E.PATCH_OLD_STRING_NOT_FOUND, f"old_string was not found in `{loc.shown}`. Copy it "
                            "exactly from `workspace_read_file` output, without the line numbers and tab.")
    if count > 1 and not replace_all:  # (10)
        raise ToolCallError(E.PATCH_OLD_STRING_NOT_UNIQUE, f"old_string matched {count} times in `{loc.shown}`. "
                            "Add surrounding lines to make it unique, or set replace_all to true.")
    replaced = count if replace_all else 1
    new_bytes = encoded(new, "new_string")  # (11) the result's size, known before it is built
    check_size(loc, len(current) + replaced * (len(new_bytes) - utf8_size(old)))
    patched = encode_utf8(text.replace(old, new) if replace_all else text.replace(old, new, 1))
    try:  # (12)
        swap = store.swap(loc, state.sha256, lambda _old: patched)
    except CasConflict as exc:
        raise _stale(E.PATCH_STALE_FILE, loc, exc.current_sha) from None
    return swap, replaced


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


TOOLS = profile_aware([
    BuiltinTool(WRITE_FILE, write_file, blocking=True),
    BuiltinTool(APPLY_PATCH, apply_patch, blocking=True),
    *workspace_trash.TOOLS,
])
