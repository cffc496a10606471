"""How a builtin tool is declared: one module = descriptor + handler, registered in `builtins/__init__.py`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tooldeck.catalog.sources import CallContext, Executable, StaticSource
from tooldeck.core.descriptors import ToolDescriptor

Handler = Callable[[dict[str, Any], CallContext], Any]


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    descriptor: ToolDescriptor
    handler: Handler
    blocking: bool = False
    """True for a sync handler that does I/O or heavy work: it runs on a worker thread."""

    def executable(self) -> Executable:
        return Executable(self.handler, self.blocking)


def builtin_source(tools: Iterable[BuiltinTool]) -> StaticSource:
    source = StaticSource("builtin")
    for tool in tools:
        source.add(tool.descriptor, tool.executable())
    return source
