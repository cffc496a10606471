"""Building an invocation's snapshot, and what is built once per snapshot.

`Snapshots` belongs to one Runtime (one catalog). It turns prepared bindings into a `Snapshot`
(eager: every schema in the array; deferred modes: the fixed array of `snapshot/deferred.py`) and
keeps, per snapshot, what only depends on it: its JSON text for the records, the `find_tools` index
and, per (snapshot, Profile), the gate table with its compiled validators. Each cache is bounded
(`BuiltOnce`), so a long-lived host does not grow without end.

A snapshot's identity is the content it freezes: the catalog's descriptors (the same objects, or
equal ones) × provider × scene × headless × Profile (the same object, or an equal one) × the answers
of the availability conditions. `prepare` reuses the snapshot of an earlier invocation when all of
these are unchanged, so its gate table, search index and JSON text are reused with it; any change
(a tool registered, removed or re-listed, another Profile, a condition that answers otherwise) builds
a new snapshot with a new id. Invocations still get their own ids: only the snapshot is shared. A
Profile is not to be changed in place once an invocation used it (its lists are plain lists).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tooldeck.catalog import bindings as binding_prep
from tooldeck.catalog.catalog import Catalog
from tooldeck.catalog.profile import Profile, matches
from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.descriptors import AvailabilityContext, ToolDescriptor
from tooldeck.gate import GateTable
from tooldeck.snapshot import deferred
from tooldeck.snapshot.search import DeferredCatalog
from tooldeck.snapshot.snapshot import Binding, Snapshot

T = TypeVar("T")


class BuiltOnce(Generic[T]):
    """Values that depend only on a snapshot (and a profile): built on first use, kept for the
    invocations that reuse them, bounded so a long-lived host does not grow without end."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: dict[Any, tuple[Any, T]] = {}

    def get(self, key: Any, owner: Any, build: Callable[[], T]) -> T:
        """`owner` is kept with the value: a hit must come from the same objects (by identity)."""
        hit = self._items.get(key)
        if hit is not None and (hit[0] is owner or hit[0] == owner):
            return hit[1]
        if len(self._items) >= self._limit:
            self._items.clear()
        value = build()
        self._items[key] = (owner, value)
        return value


@dataclass(slots=True)
class _Built:
    """A snapshot with the content it was built from (see the module docstring)."""

    profile: Profile
    offered: tuple[ToolDescriptor, ...]
    conditions: tuple[tuple[str, str | None], ...]
    snapshot: Snapshot
    diagnostics: list[Diagnostic]
    """What preparing it said beyond the sources' own diagnostics (those are read afresh each time)."""


_KEYS_KEPT = 64
_PER_KEY = 8


class Snapshots:
    """The snapshots of one catalog and what each one needs built once."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._built: dict[tuple[str, str, bool], list[_Built]] = {}
        self._gate_tables: BuiltOnce[GateTable] = BuiltOnce(256)
        self._deferred_catalogs: BuiltOnce[DeferredCatalog] = BuiltOnce(64)
        self._texts: BuiltOnce[str] = BuiltOnce(64)
        self._left_out: dict[str, list[tuple[str, str]]] = {}

    def prepare(self, ctx: AvailabilityContext, profile: Profile) -> tuple[Snapshot, list[Diagnostic]]:
        """The snapshot of the catalog as `profile` and `ctx` (provider, scene, conditions) see it now:
        the one built before when none of that changed, else a new one. With it, the diagnostics."""
        offered = self.catalog.offered()
        answers = binding_prep.verdicts(offered, profile, ctx)
        conditions = tuple([(tid, v.reason if v is not None else None) for tid, v in answers.items()])
        key = (ctx.provider, ctx.scene, ctx.headless)
        earlier = self._built.get(key)
        if earlier is not None:
            for built in earlier:
                if ((built.profile is profile or built.profile == profile) and built.offered == offered
                        and built.conditions == conditions):
                    return built.snapshot, [*self.catalog.diagnostics(), *built.diagnostics]
        prepared = binding_prep.prepare(self.catalog, profile, ctx, ctx.provider, answers)
        diagnostics = prepared.diagnostics
        snapshot = self.build(ctx.provider, prepared.bindings, profile, diagnostics)
        if len(self._left_out) >= _KEYS_KEPT * _PER_KEY:
            self._left_out.clear()
        self._left_out[snapshot.id] = prepared.left_out
        if earlier is None:
            if len(self._built) >= _KEYS_KEPT:
                self._built.clear()
            earlier = self._built[key] = []
        elif len(earlier) >= _PER_KEY:
            del earlier[0]
        earlier.append(_Built(profile, offered, conditions, snapshot, diagnostics[prepared.from_sources:]))
        return snapshot, diagnostics

    def build(self, provider: str, bindings: list[Binding], prof: Profile, diagnostics: list[Diagnostic]) -> Snapshot:
        """Eager: every schema in the array. Deferred modes: a fixed array (see `snapshot/deferred.py`)."""
        budget = prof.max_calls_per_invocation
        if prof.loading == "eager":
            return Snapshot.build(provider, bindings, budget, "eager")
        fixed = deferred.fixed_bindings(bindings)
        pinned = [*fixed, *(b for b in bindings if b not in fixed and any(matches(p, b.tool_id) for p in prof.pinned))]
        listed = [b for b in bindings if b not in pinned]
        extra = {"pinned": [b.call_name for b in pinned], "listed": [b.call_name for b in listed]}
        if prof.native_search:
            if provider in deferred.NATIVE_SEARCH_PROVIDERS:
                extra["native_search"] = True
                extra["listed"] = []
                tools = deferred.native_search_array(provider, pinned, listed)
                return Snapshot.build(provider, bindings, budget, prof.loading, tools=tools, extra=extra)
            diagnostics.append(Diagnostic("tool.native_search_unsupported", f"{provider} has no tool search of its "
                                          "own; find_tools and run_tool are used instead."))
        meta_bindings = []
        for tid in deferred.meta_ids_for(prof.loading):
            descriptor = self.catalog.descriptors()[tid]
            meta_bindings.append(Binding(descriptor, tid.split(":", 1)[1]))
        tools = deferred.tools_array(provider, prof.loading, meta_bindings, pinned, listed)
        return Snapshot.build(provider, [*meta_bindings, *bindings], budget, prof.loading, tools=tools, extra=extra)

    def left_out(self, snapshot: Snapshot) -> list[tuple[str, str]]:
        """(tool id, reason) of the tools the Profile allowed that the snapshot's conditions left out."""
        return list(self._left_out.get(snapshot.id, ()))

    def json(self, snapshot: Snapshot) -> str:
        """A snapshot's JSON, serialised once (invocations that reuse a snapshot record the same text)."""
        return self._texts.get(snapshot.id, snapshot, snapshot.to_json)

    def deferred_catalog(self, snapshot: Snapshot) -> DeferredCatalog:
        """The find_tools search index of a snapshot, built once."""
        return self._deferred_catalogs.get(snapshot.id, snapshot, lambda: DeferredCatalog.build(snapshot))

    def gate_table(self, snapshot: Snapshot, profile: Profile) -> GateTable:
        """Per (snapshot, profile): the gate's entries, compiled validators and the spill guidance, with
        what every source adds (`ToolSource.prepare_gate`: e.g. MCP `ask` tools, a down server's names)."""
        def build() -> GateTable:
            table = GateTable.build(snapshot, profile)
            self.catalog.prepare_gate(table)
            return table

        # Keyed by the profile's identity too; the entry keeps the profile alive, so an id is never reused.
        return self._gate_tables.get((snapshot.id, id(profile)), (snapshot, profile), build)
