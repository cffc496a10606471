"""`edit_file`: Agenvoy's write | patch over the workspace engine's compare-and-swap.

Mode inference: `targets` → patch, `content` → write, else `mode is required; available: write, patch`.
Overwriting or patching an existing file needs a `read_files` of it in this run, with the file unchanged
since (the run's read-state, as for `workspace_write_file`); the write itself is a compare-and-swap on
the sha256 read, under the file's lock, keeping the previous content as a version (`file_history`,
`restore_file`). A bare file name is written into the body file's folder (`output/` by default), as
Agenvoy writes a blank path into its download folder.
"""

from __future__ import annotations

from typing import Any, Final

from tooldeck.builtins.agenvoy_files import descriptors, patching, task
from tooldeck.builtins.agenvoy_files.common import (
    FIELD_REQUIRED,
    MAX_TEXT_BYTES,
    TOO_LARGE,
    WOULD_EMPTY,
    choose_mode,
    require,
    workspace,
)
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E
from tooldeck.workspace.limits import check_size, encoded
from tooldeck.workspace.paths import PathPolicy, parse_path
from tooldeck.workspace.readstate import ReadState
from tooldeck.workspace.store import CasConflict, Location, WorkspaceStore, decode, sha256

TOOL_ID = ToolId.builtin("edit_file")
MODES: Final = descriptors.EDIT_MODES
EDGE_CHARS: Final = 128


def infer(args: dict[str, Any]) -> str | None:
    if args.get("targets"):
        return "patch"
    if args.get("content") is not None:
        return "write"
    return None


def edit_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = choose_mode(args, MODES, infer(args))
    path = require(args.get("path"), "path", mode)
    store, policy = workspace(ctx)
    loc = store.locate(policy, _placed(path, policy), write=True)
    if mode == "write":
        if args.get("content") is None:
            raise ToolCallError(FIELD_REQUIRED, "content is required when mode=write")
        out = _write(store, loc, args["content"])
    else:
        out = _patch(store, loc, require(args.get("targets"), "targets", mode))
    task.touched(ctx).note_swap(store, loc.real_rel, existed=not out.structured.get("created", False))
    return out


def _placed(raw: str, policy: PathPolicy) -> str:
    """A bare file name goes into the body file's folder."""
    rel = parse_path(raw)
    if "/" in rel or policy.is_visible(rel):
        return raw
    return f"{policy.root_of(policy.body_file)}/{rel}"


def _stale(loc: Location, current: str | None) -> ToolCallError:
    if current is None:
        return ToolCallError(E.WRITE_STALE_FILE, f"{loc.shown} no longer exists; find it with find_files, then "
                             "read it again with read_files")
    return ToolCallError(E.WRITE_STALE_FILE, f"{loc.shown} changed since you read it; read it again with read_files, "
                         "then edit the current content")


def _guard(store: WorkspaceStore, loc: Location, current: bytes | None,
           action: str) -> tuple[str | None, ReadState | None]:
    """The sha the write must find (None: the file must still be missing) and the run's read-state."""
    if current is None:
        return None, None
    state = store.read_states.get(loc.key)
    if state is None:
        raise ToolCallError(E.WRITE_REQUIRES_READ, f"{loc.shown} exists; read it with read_files before you {action} "
                            "it")
    if state.sha256 != sha256(current):
        raise _stale(loc, sha256(current))
    return state.sha256, state


# -- write --------------------------------------------------------------------------------------------
def _write(store: WorkspaceStore, loc: Location, content: str) -> ToolOutput:
    data = encoded(content, "content")
    check_size(loc, len(data))
    current = store.read_if_exists(loc)
    if current is not None and len(current) > MAX_TEXT_BYTES:
        raise ToolCallError(TOO_LARGE, f"{loc.shown} is {len(current) / (1024 * 1024):.1f} MB, over edit_file's 1 MB "
                            "limit for overwriting; edit it with run_command")
    guard, _state = _guard(store, loc, current, "overwrite")
    if current and not data:
        raise ToolCallError(WOULD_EMPTY, f"writing empty content would leave {loc.shown} empty, so nothing was "
                            "written; to remove the file use remove_file")
    try:
        swap = store.swap(loc, guard, lambda _old: data)
    except CasConflict as exc:
        raise _stale(loc, exc.current_sha) from None
    store.read_states.record_full(loc.key, swap.sha256, content)
    verb = "created" if swap.old_sha256 is None else "updated"
    effect = ToolEffect(effects.FILE_WRITTEN, {"path": loc.shown, "mode": "replace", "sha256": swap.sha256,
                                               "previous_sha256": swap.old_sha256, "chars": len(content)})
    return ToolOutput(_receipt(f"successfully {verb}", loc, content, len(data)),
                      {"path": loc.shown, "mode": "write", "created": swap.old_sha256 is None, "bytes": len(data),
                       "sha256": swap.sha256}, resource_refs=[loc.shown], effects=[effect])


def _receipt(head: str, loc: Location, text: str, size: int) -> str:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    out = [f"{head}: {loc.shown} ({size:,} bytes, {len(lines)} lines on disk)"]
    if lines:
        out.append(f"first line: {_edge(lines[0])}")
        if len(lines) > 1:
            out.append(f"last line: {_edge(lines[-1])}")
    return "\n".join(out)


def _edge(line: str) -> str:
    return line if len(line) <= EDGE_CHARS else line[:EDGE_CHARS] + "…"


# -- patch --------------------------------------------------------------------------------------------
def _patch(store: WorkspaceStore, loc: Location, targets: list[dict[str, Any]]) -> ToolOutput:
    patching.validate(targets)
    current = store.read_if_exists(loc)
    if current is None:
        raise ToolCallError(E.FILE_NOT_FOUND, f"{loc.shown} does not exist; create it with mode=write")
    guard, state = _guard(store, loc, current, "patch")
    assert state is not None
    if not state.full_read:
        _check_seen(loc, state, targets)
    text = decode(loc, current)
    patched = patching.apply(loc.shown, text, targets)
    data = encoded(patched, "the patched text")
    check_size(loc, len(data))
    try:
        swap = store.swap(loc, guard, lambda _old: data)
    except CasConflict as exc:
        raise _stale(loc, exc.current_sha) from None
    if state.full_read:
        store.read_states.record_full(loc.key, swap.sha256, patched)
    else:
        pieces = tuple(t.get("new_string") or t.get("insert_string") or "" for t in targets)
        store.read_states.put(loc.key, ReadState(swap.sha256, False, "", fragments=pieces))
    effect = ToolEffect(effects.FILE_PATCHED, {"path": loc.shown, "previous_sha256": swap.old_sha256,
                                               "sha256": swap.sha256, "replacements": len(targets)})
    head = f"successfully patched ({len(targets)} target{'s' if len(targets) != 1 else ''})"
    return ToolOutput(_receipt(head, loc, patched, len(data)),
                      {"path": loc.shown, "mode": "patch", "targets": len(targets), "bytes": len(data),
                       "oldSha256": swap.old_sha256, "sha256": swap.sha256},
                      resource_refs=[loc.shown], effects=[effect])


def _check_seen(loc: Location, state: ReadState, targets: list[dict[str, Any]]) -> None:
    """After a partial read, every anchor must lie in what the model read."""
    for i, t in enumerate(targets, 1):
        if "insert_string" in t:
            row = t["row"]
            if row not in state.lines and row - 1 not in state.lines:
                raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"target #{i} inserts at row {row} of {loc.shown}, "
                                    "which you have not read; read that part with read_files (offset) first")
        elif t.get("replace_all") or not state.observed_contains(t["old_string"]):
            raise ToolCallError(E.PATCH_REQUIRES_FULL_READ, f"old_string of target #{i} is not in the part of "
                                f"{loc.shown} you have read" + (" (replace_all needs the whole file)"
                                                                 if t.get("replace_all") else "")
                                + "; read the file with read_files, then patch again")



DESCRIPTOR = descriptors.EDIT_FILE
TOOLS = [BuiltinTool(DESCRIPTOR, edit_file, blocking=True)]
