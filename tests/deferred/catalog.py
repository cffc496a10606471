"""A 300-tool catalog for the deferred-loading tests: the default builtins, BFCL functions as
extension tools, and BFCL functions offered by an MCP source."""

from __future__ import annotations

from typing import Any

import tooldeck
from tests.conftest import MakeRuntime
from tests.corpus import bfcl_functions
from tooldeck.catalog.sources import Executable, StaticSource
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.naming import mcp_model_name

EXTENSIONS = slice(0, 85)
MCP = slice(85, 285)


def _schema(fn: dict[str, Any]) -> dict[str, Any]:
    params = dict(fn.get("parameters") or {})
    params["type"] = "object"
    return params


def _echo(args: dict[str, Any], ctx: Any) -> ToolOutput:
    return ToolOutput(f"{ctx.call_name} ran with {sorted(args)}")


def mcp_source(functions: list[dict[str, Any]], server: str = "bfcl") -> StaticSource:
    source = StaticSource("mcp")
    for fn in functions:
        tid = ToolId.mcp("reg-bfcl", fn["name"])
        source.add(ToolDescriptor(tid, fn.get("description") or fn["name"], _schema(fn),
                                  model_name=mcp_model_name(server, fn["name"])), Executable(_echo))
    return source


def runtime(make_runtime: MakeRuntime, **profile: Any) -> tooldeck.Runtime:
    """The BFCL catalog (85 extension tools, 200 MCP tools) over `make_runtime`, deferred unless `loading` says."""
    functions = list(bfcl_functions())
    rt = make_runtime(sources=[mcp_source(functions[MCP])], profile={"loading": "deferred", **profile})
    for fn in functions[EXTENSIONS]:
        rt.extensions.register(lambda **kw: "ok", "bfcl", fn["name"], description=fn.get("description") or "x",
                               input_schema=_schema(fn), blocking=False)
    return rt
