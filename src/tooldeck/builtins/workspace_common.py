"""What the workspace builtins share: the per-call store and policy, description text, and writing a new
file (at one name, or at the first free `<stem>-N.<ext>`)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.profile import WorkspaceRoots
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.results import ToolEffect
from tooldeck.workspace import effects
from tooldeck.workspace.limits import check_size
from tooldeck.workspace.paths import PathPolicy
from tooldeck.workspace.store import CasConflict, Location, Swap, WorkspaceStore, for_run

DEFAULT_POLICY = PathPolicy.from_roots(WorkspaceRoots())


def workspace(ctx: CallContext) -> tuple[WorkspaceStore, PathPolicy]:
    store = for_run(ctx.run)
    return store, store.policy(ctx.invocation.profile.workspace)


def call_name(ctx: CallContext, tool_id: str) -> str | None:
    """The call name of another tool in this invocation's snapshot, or None when the model lacks it."""
    for b in ctx.invocation.snapshot.bindings:
        if b.tool_id == tool_id:
            return b.call_name
    return None


def roots_sentence(policy: PathPolicy = DEFAULT_POLICY) -> str:
    writable = ", ".join(f"`{r}/`" for r in policy.writable)
    read_only = ", ".join(f"`{r}/`" for r in policy.read_only)
    return (f"Workspace paths are relative, e.g. `{policy.body_file}`. Writable folders: {writable}; "
            f"read-only: {read_only}; everything else is hidden. The reply body is `{policy.body_file}`.")


PATH_PROPERTY = {"type": "string", "description": "Relative workspace path, e.g. `output/main.md`."}


def for_profile(descriptor: ToolDescriptor, profile: Any) -> ToolDescriptor:
    """The descriptor with the Profile's own roots and body file in its text."""
    policy = PathPolicy.from_roots(profile.workspace)
    if roots_sentence(policy) == roots_sentence():
        return descriptor
    text = descriptor.description.replace(roots_sentence(), roots_sentence(policy))
    text = text.replace(f"`{DEFAULT_POLICY.body_file}`", f"`{policy.body_file}`")
    return replace(descriptor, description=text)


def profile_aware(tools: list[BuiltinTool]) -> list[BuiltinTool]:
    return [replace(t, descriptor=replace(t.descriptor, materialize=for_profile)) for t in tools]


async def write_new_file(store: WorkspaceStore, loc: Location, data: bytes, *, chars: int | None,
                         exists: ToolCallError) -> tuple[str, ToolEffect]:
    """Create the file at `loc` (off the event loop) unless one is there by then, which raises `exists`;
    the new file's sha256 and its `file_written` effect."""
    try:
        swap = await asyncio.to_thread(store.swap, loc, None, lambda _old: data)
    except CasConflict:
        raise exists from None
    return swap.sha256, new_file_effect(loc, swap.sha256, chars)


def new_file_effect(loc: Location, sha256: str, chars: int | None, mode: str = "replace") -> ToolEffect:
    """The `file_written` effect of a file that was not there before."""
    return ToolEffect(effects.FILE_WRITTEN, {"path": loc.shown, "mode": mode, "sha256": sha256,
                                             "previous_sha256": None, "chars": chars})


def numbered(path: str, n: int) -> str:
    """`path` itself for n = 1, else `<stem>-<n>.<ext>` (`<name>-<n>` for a name without an extension)."""
    if n == 1:
        return path
    folder, slash, name = path.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    return f"{folder}{slash}{stem}-{n}.{ext}" if dot and stem else f"{path}-{n}"


def create_first_free(store: WorkspaceStore, policy: PathPolicy, path: str, data: bytes, *, tries: int,
                      no_free_name: Exception) -> tuple[Location, Swap]:
    """Create the first free one of `path`, `<stem>-2.<ext>`, … `<stem>-<tries>.<ext>` holding `data`.

    A name is taken when something is there, or when another writer creates it between the look and the
    write (the store's compare-and-swap against "no file"): it is passed over, never overwritten. Raises
    `no_free_name` when all are taken, and the size limit's error before trying any. Blocking: call it on
    a worker thread from async code."""
    for n in range(1, tries + 1):
        loc = store.locate(policy, numbered(path, n), write=True)
        if n == 1:
            check_size(loc, len(data))
        if store.kind(loc) is not None:
            continue
        try:
            return loc, store.swap(loc, None, lambda _old: data)
        except CasConflict:
            continue
    raise no_free_name
