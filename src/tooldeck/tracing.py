"""OpenTelemetry spans for tool calls, after the GenAI semantic conventions (docs/tracing.md).

Optional: nothing here imports OpenTelemetry. Dispatch asks `wanted()` before each call, which costs
one attribute read while no tracer provider is set (and one dictionary lookup while
`opentelemetry.trace` is not even imported); only then does a call go through `traced`, which wraps
it in an `execute_tool {name}` span.

Attributes: `gen_ai.operation.name`, `gen_ai.tool.name` (the name the model called), `gen_ai.tool.call.id`,
`gen_ai.tool.type`, `tooldeck.tool.id`, `tooldeck.invocation.id`, `tooldeck.round`; on failure
`error.type` (the result's dotted error code) and an error status. Argument values and results
(`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) only with the Profile's `trace_content`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Coroutine
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import orjson

from tooldeck.core.errors import HOST_FAULT
from tooldeck.core.results import ToolOutput, as_output

if TYPE_CHECKING:
    from tooldeck.catalog.sources import TurnState
    from tooldeck.gate import Admitted, Refused
    from tooldeck.runtime import Invocation

TRACE_MODULE = "opentelemetry.trace"
SCOPE = "tooldeck"
_modules_get = sys.modules.get

_api: Any = None
"""`opentelemetry.trace` once something imported it (its `_TRACER_PROVIDER` is None until a provider is set)."""
_tracer: tuple[Any, Any] = (None, None)
"""(provider, its tracer): a tracer is made once per provider."""


def wanted() -> bool:
    """Whether a tracer provider is set. The hot path: a few bytecodes when not."""
    api = _api
    if api is None:
        return _modules_get(TRACE_MODULE) is not None and _attach()._TRACER_PROVIDER is not None
    return api._TRACER_PROVIDER is not None


def _attach() -> Any:
    """First sight of `opentelemetry.trace` (imported by the host, or by a library such as the MCP SDK):
    from now on dispatch reads the provider straight from it."""
    global _api
    api = sys.modules[TRACE_MODULE]
    api.get_tracer_provider()  # loads a provider named by OTEL_PYTHON_TRACER_PROVIDER, as OpenTelemetry does
    _api = api if hasattr(api, "_TRACER_PROVIDER") else _PublicApi(api)
    from tooldeck import dispatch

    dispatch._otel = _api
    return _api


class _NotImported:
    """Dispatch's stand-in for `opentelemetry.trace` while nothing has imported it: no provider."""

    _TRACER_PROVIDER = None


class _Importing:
    """Dispatch's stand-in once `opentelemetry.trace` is being imported: attaches on the next call."""

    @property
    def _TRACER_PROVIDER(self) -> Any:
        if _modules_get(TRACE_MODULE) is None:  # still importing, or the import failed
            return None
        return _attach()._TRACER_PROVIDER


class _ImportWatch:
    """A `sys.meta_path` entry that finds nothing and only notes when `opentelemetry.trace` is imported,
    so that dispatch reads one attribute per call before and after (it removes itself then)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == TRACE_MODULE:
            from tooldeck import dispatch

            dispatch._otel = _Importing()
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self)
        return None


def stand_in() -> Any:
    """What dispatch starts with: the module when already imported, else a stand-in and a watch."""
    if _modules_get(TRACE_MODULE) is not None:
        return _Importing()
    sys.meta_path.insert(0, _ImportWatch())
    return _NotImported()


class _PublicApi:
    """For an OpenTelemetry API without the module global this reads: the same answer through public calls."""

    def __init__(self, api: Any) -> None:
        self._module = api

    @property
    def _TRACER_PROVIDER(self) -> Any:
        provider = self._module.get_tracer_provider()
        return None if type(provider).__name__ == "ProxyTracerProvider" else provider


def tracer() -> Any:
    global _tracer
    provider = _api._TRACER_PROVIDER
    if _tracer[0] is not provider:
        from importlib.metadata import PackageNotFoundError, version

        try:
            ours = version("tooldeck")
        except PackageNotFoundError:
            ours = None
        _tracer = (provider, provider.get_tracer(SCOPE, ours))
    return _tracer[1]


Begin = Callable[..., Any]


async def traced(begin: Begin, inv: Invocation, check: Admitted | Refused, index: int, turn: TurnState,
                 window: bool) -> Any:
    """Run one call (`begin` is dispatch's untraced `begin_one`) inside its `execute_tool` span.

    The span is the current span while the tool runs (its own spans nest under it), and ends when the
    call finishes: with the call's error code as `error.type` when its output is an error, or when a
    fault or a cancellation leaves the call.
    """
    from opentelemetry import context as otel_context
    from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

    call = turn.calls[index]
    entry = check.entry
    name = entry.binding.call_name if entry is not None else call.name
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": _tool_type(entry),
        "tooldeck.invocation.id": inv.id,
        "tooldeck.round": turn.round,
    }
    if entry is not None:
        attributes["tooldeck.tool.id"] = entry.tool_id
    content = inv.profile.trace_content
    if content:
        attributes["gen_ai.tool.call.arguments"] = _arguments(call.arguments)
    span = tracer().start_span(f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes)
    token = otel_context.attach(set_span_in_context(span))
    try:
        out = begin(inv, check, index, turn, window, False)
        if type(out) is CoroutineType:
            out = await out
    except BaseException as exc:
        held = turn.outputs[index]
        code = held.error_code if type(held) is ToolOutput and held.error_code == HOST_FAULT else _type_name(exc)
        span.set_attribute("error.type", code)
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, code))
        raise
    else:
        output = as_output(out) if content else out
        if type(output) is ToolOutput and output.is_error:
            code = output.error_code or "tool.error"
            span.set_attribute("error.type", code)
            span.set_status(Status(StatusCode.ERROR, code))
        if content:
            span.set_attribute("gen_ai.tool.call.result", output.content)
        return out
    finally:
        otel_context.detach(token)
        span.end()


def _tool_type(entry: Any) -> str:
    """`extension` for a tool run by another process (an MCP server), `function` for the ones run here."""
    if entry is None:
        return "function"
    return "extension" if entry.binding.descriptor.id.kind == "mcp" else "function"


def _arguments(raw: Any) -> str:
    if type(raw) is str:
        return raw
    try:
        return orjson.dumps(raw).decode()
    except TypeError:
        return repr(raw)


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def maybe_traced(begin: Begin, inv: Invocation, check: Admitted | Refused, index: int, turn: TurnState,
                 window: bool) -> Any | Coroutine[Any, Any, Any]:
    """`traced` when a provider is set, else the untraced first step."""
    if (_api if _api is not None else _attach())._TRACER_PROVIDER is None:
        return begin(inv, check, index, turn, window, False)
    return traced(begin, inv, check, index, turn, window)
