"""What the workspace builtins share: the per-call store and policy, and description text."""

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
from tooldeck.workspace.paths import PathPolicy
from tooldeck.workspace.store import CasConflict, Location, WorkspaceStore, for_run

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
    return swap.sha256, ToolEffect(effects.FILE_WRITTEN, {"path": loc.shown, "mode": "replace", "sha256": swap.sha256,
                                                          "previous_sha256": None, "chars": chars})
