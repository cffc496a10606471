"""The catalog: every source's tools, keyed by stable ToolId."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooldeck.catalog.sources import SOURCE_METHODS, Diagnostic, Executable, ToolSource
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.errors import TooldeckError
from tooldeck.core.ids import SourceKind, ToolId

if TYPE_CHECKING:
    from tooldeck.gate import GateTable


class Catalog:
    def __init__(self, sources: list[ToolSource] | None = None) -> None:
        self._sources: dict[SourceKind, ToolSource] = {}
        for source in sources or []:
            self.add_source(source)

    def add_source(self, source: ToolSource) -> None:
        missing = [m for m in SOURCE_METHODS if not callable(getattr(source, m, None))]
        if missing:
            raise TooldeckError("catalog.source_incomplete", f"{type(source).__name__} is not a complete ToolSource: "
                                f"it has no {', '.join(missing)}; subclass tooldeck.ToolSource (its prepare_gate and "
                                "close do nothing by default) or define them")
        if source.kind in self._sources:
            raise TooldeckError("catalog.source_duplicate", f"a {source.kind} source is already registered")
        self._sources[source.kind] = source

    def source(self, kind: SourceKind) -> ToolSource | None:
        return self._sources.get(kind)

    def offered(self) -> tuple[ToolDescriptor, ...]:
        """Every source's descriptors as they come, unsorted and unchecked: what a snapshot's identity
        compares (the same objects, or equal ones, mean the same catalog)."""
        return tuple(d for source in self._sources.values() for d in source.descriptors())

    def descriptors(self) -> dict[str, ToolDescriptor]:
        """All tools by id string, ordered by id; provider namespaces stay distinct."""
        out: dict[str, ToolDescriptor] = {}
        for source in self._sources.values():
            for d in source.descriptors():
                key = str(d.id)
                if key in out:
                    raise TooldeckError("tool.catalog_duplicate_id", f"tool id {key} is offered twice")
                out[key] = d
        return dict(sorted(out.items()))

    def diagnostics(self) -> list[Diagnostic]:
        return [d for s in self._sources.values() for d in s.diagnostics()]

    def resolve(self, tool_id: ToolId) -> Executable | None:
        source = self._sources.get(tool_id.kind)
        return source.resolve(tool_id) if source else None

    def prepare_gate(self, table: GateTable) -> None:
        """Give each gate entry its tool's source (dispatch resolves through it), then let every source
        adjust the table (`ToolSource.prepare_gate`)."""
        for entry in table.entries.values():
            entry.source = self._sources.get(entry.binding.descriptor.id.kind)
        for source in self._sources.values():
            source.prepare_gate(table)

    def close(self) -> None:
        """Close every source (`ToolSource.close`), in the order they were added."""
        for source in list(self._sources.values()):
            source.close()
