"""Small builders for test tools; every test still runs the real pipeline."""

from __future__ import annotations

from typing import Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import StaticSource
from tooldeck.core.descriptors import ALL_SCENES, ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId

EMPTY = {"type": "object", "properties": {}, "additionalProperties": False}


def descriptor(tid: str, schema: dict[str, Any] | None = None, *, safe: bool = False, mutating: bool = False,
               available: Any = None, scenes: Any = ALL_SCENES, description: str = "A test tool.") -> ToolDescriptor:
    return ToolDescriptor(ToolId.parse(tid), description, schema or EMPTY,
                          annotations=ToolAnnotations(concurrency_safe=safe, mutating=mutating, read_only=safe),
                          available=available, scenes=frozenset(scenes))


def builtin(name: str, handler: Any, schema: dict[str, Any] | None = None, **kw: Any) -> BuiltinTool:
    blocking = kw.pop("blocking", False)
    return BuiltinTool(descriptor(f"builtin:{name}", schema, **kw), handler, blocking)


def static_source(kind: str, tools: list[tuple[str, Any]]) -> StaticSource:
    from tooldeck.catalog.sources import Executable

    source = StaticSource(kind)  # type: ignore[arg-type]
    for tid, fn in tools:

        source.add(descriptor(tid), Executable(fn))
    return source
