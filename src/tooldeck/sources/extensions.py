"""Extension tools: plain Python functions (sync or async) registered as tools.

The schema comes from type hints and the docstring via pydantic, or is given explicitly. The
snapshot never holds the function: it is looked up by ToolId when the call runs, so a tool that
was unregistered or disabled since gives "currently unavailable, no action was taken".
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tooldeck.catalog.sources import CallContext, Diagnostic, Executable, ToolSource
from tooldeck.core.descriptors import ALL_SCENES, Availability, Scene, ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import TooldeckError
from tooldeck.core.ids import ToolId

if TYPE_CHECKING:
    import pydantic

_PLAIN_TYPES = (str, int, float, bool, list, dict, type(None))
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


@dataclass(frozen=True, slots=True)
class FunctionSignature:
    description: str
    schema: dict[str, Any]
    context_param: str | None
    model: type[pydantic.BaseModel] | None
    """Set when some parameter needs pydantic to build it (models, dates…); plain JSON types skip it."""


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """First paragraph → description; an `Args:` section of `name: text` lines → parameter texts."""
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    summary = text.split("\n\n", 1)[0].replace("\n", " ").strip()
    params: dict[str, str] = {}
    in_args, current = False, None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if not stripped:
                current = None
                continue
            if stripped.endswith(":") and not line.startswith((" ", "\t")):
                break
            m = _ARG_LINE.match(line)
            if m:
                current = m.group(1).lstrip("*")
                params[current] = m.group(2).strip()
            elif current:
                params[current] += " " + stripped
    return summary, params


def _is_plain(annotation: Any) -> bool:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_plain(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return all(_is_plain(a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return True
    if origin in (list, dict):
        return all(_is_plain(a) for a in typing.get_args(annotation))
    return annotation in _PLAIN_TYPES


def function_signature(fn: Callable[..., Any], description: str | None = None) -> FunctionSignature:
    import pydantic  # here, not at import: a command that registers no Python tool never pays for it

    summary, param_docs = parse_docstring(fn.__doc__)
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_param = None
    plain = True
    for name, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(name, param.annotation)
        if annotation is CallContext:
            context_param = name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TooldeckError("extension.tool_schema_invalid",
                                f"{fn.__qualname__}: *args/**kwargs cannot be described as tool parameters")
        if annotation is inspect.Parameter.empty:
            annotation = Any
        plain = plain and _is_plain(annotation)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (annotation, pydantic.Field(default, description=param_docs.get(name)))
    model = pydantic.create_model(f"{fn.__name__}_arguments", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in (schema.get("properties") or {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return FunctionSignature(description or summary or fn.__name__, schema, context_param,
                             None if plain else model)


def _executable(fn: Callable[..., Any], call: Callable[[dict[str, Any], CallContext], Any],
                blocking: bool | None, direct: bool = False) -> Executable:
    """Coroutine functions never block the loop; a sync function runs on a thread unless declared non-blocking."""
    if inspect.iscoroutinefunction(fn):
        return Executable(call, False, fn if direct else None)
    return Executable(call, True if blocking is None else blocking, fn if direct else None)


def _make_executable(fn: Callable[..., Any], sig: FunctionSignature, blocking: bool | None) -> Executable:
    ctx_name, model = sig.context_param, sig.model

    if model is None and ctx_name is None:
        def call(args: dict[str, Any], ctx: CallContext) -> Any:
            return fn(**args)

        return _executable(fn, call, blocking, direct=True)

    def call_converted(args: dict[str, Any], ctx: CallContext) -> Any:
        kwargs = dict(model.model_validate(args)) if model is not None else dict(args)
        if ctx_name is not None:
            kwargs[ctx_name] = ctx
        return fn(**kwargs)

    return _executable(fn, call_converted, blocking)


@dataclass(frozen=True, slots=True)
class ExtensionTool:
    descriptor: ToolDescriptor
    executable: Executable
    enabled: bool = True


class ExtensionRegistry(ToolSource):
    """The extension source: register, enable/disable, unregister; dispatched by ToolId."""

    kind = "extension"

    def __init__(self) -> None:
        self._tools: dict[ToolId, ExtensionTool] = {}

    def register(
        self,
        fn: Callable[..., Any],
        extension_id: str,
        name: str | None = None,
        *,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        scenes: Iterable[Scene] = ALL_SCENES,
        enabled: bool = True,
        blocking: bool | None = None,
        annotations: ToolAnnotations | None = None,
        replace: bool = False,
        concurrent: bool | None = None,
        is_enabled: Availability | None = None,
    ) -> ToolId:
        """Register `fn` as the tool `extension/<extension_id>:<name>`.

        `concurrent`: whether calls of one model turn may run together (docs/architecture.md, "Extension
        tools"). By default an `async def` tool does, unless its annotations say it is mutating; a sync
        tool does only when annotated `concurrency_safe`.

        `is_enabled(ctx: AvailabilityContext) -> bool`: asked once per invocation before the snapshot freezes;
        false leaves the tool out of that invocation, an exception too (with a `tool.condition_failed`
        diagnostic). `enabled` is the static switch (`set_enabled`).
        """
        tool_name = name or fn.__name__
        tool_id = ToolId.extension(extension_id, tool_name)
        if tool_id in self._tools and not replace:
            raise TooldeckError("extension.tool_already_registered", f"{tool_id} is already registered")
        scene_set = frozenset(scenes)
        if not scene_set or not scene_set <= ALL_SCENES:
            raise TooldeckError("extension.tool_definition_invalid", f"{tool_id}: scenes must be a non-empty subset "
                                "of chat, session")
        if is_enabled is not None and not callable(is_enabled):
            raise TooldeckError("extension.tool_definition_invalid", f"{tool_id}: is_enabled must be a callable "
                                f"taking the AvailabilityContext, not {is_enabled!r}")
        if input_schema is not None:
            if input_schema.get("type") != "object":
                raise TooldeckError("extension.tool_schema_invalid", f"{tool_id}: input_schema must have type object")
            sig = FunctionSignature(description or parse_docstring(fn.__doc__)[0] or tool_name, dict(input_schema),
                                    None, None)
            executable = _raw_executable(fn, blocking)
        else:
            sig = function_signature(fn, description)
            executable = _make_executable(fn, sig, blocking)
        if not sig.description.strip():
            raise TooldeckError("extension.tool_definition_invalid", f"{tool_id}: a description is required")
        descriptor = ToolDescriptor(
            id=tool_id, title=tool_name, description=sig.description, input_schema=sig.schema,
            annotations=_annotations(fn, annotations, concurrent, tool_id), scenes=scene_set, model_name=tool_name,
            available=is_enabled,
        )
        self._tools[tool_id] = ExtensionTool(descriptor, executable, enabled)
        return tool_id

    def set_enabled(self, tool_id: ToolId | str, enabled: bool) -> None:
        tid = ToolId.parse(tool_id) if isinstance(tool_id, str) else tool_id
        tool = self._tools.get(tid)
        if tool is None:
            raise TooldeckError("extension.tool_not_registered", f"{tid} is not registered")
        self._tools[tid] = ExtensionTool(tool.descriptor, tool.executable, enabled)

    def unregister(self, tool_id: ToolId | str) -> bool:
        tid = ToolId.parse(tool_id) if isinstance(tool_id, str) else tool_id
        return self._tools.pop(tid, None) is not None

    def descriptors(self) -> list[ToolDescriptor]:
        return [t.descriptor for t in self._tools.values() if t.enabled]

    def diagnostics(self) -> list[Diagnostic]:
        return []

    def resolve(self, tool_id: ToolId) -> Executable | None:
        tool = self._tools.get(tool_id)
        return tool.executable if tool is not None and tool.enabled else None


def _annotations(fn: Callable[..., Any], given: ToolAnnotations | None, concurrent: bool | None,
                 tool_id: ToolId) -> ToolAnnotations:
    """The tool's annotations with `concurrency_safe` decided: `concurrent` when given, else an `async def`
    that is not annotated mutating runs concurrently (it shares the event loop cooperatively, as in
    asyncio.gather); a sync function runs concurrently only when annotated so (it runs on a worker thread
    and need not be thread-safe)."""
    annotations = given or ToolAnnotations()
    if concurrent is not None and type(concurrent) is not bool:
        raise TooldeckError("extension.tool_definition_invalid", f"{tool_id}: concurrent must be True, False or "
                            f"None (the default for the function's kind), not {concurrent!r}")
    if concurrent is None:
        concurrent = annotations.concurrency_safe or (inspect.iscoroutinefunction(fn) and not annotations.mutating)
    if concurrent == annotations.concurrency_safe:
        return annotations
    return dataclasses.replace(annotations, concurrency_safe=concurrent)


def _raw_executable(fn: Callable[..., Any], blocking: bool | None) -> Executable:
    """With an explicit schema the function receives the arguments as keywords, unconverted."""
    params = inspect.signature(fn).parameters
    wants_ctx = [n for n, p in params.items() if p.annotation is CallContext or p.annotation == "CallContext"]
    ctx_name = wants_ctx[0] if wants_ctx else None

    def call(args: dict[str, Any], ctx: CallContext) -> Any:
        return fn(**args, **{ctx_name: ctx}) if ctx_name else fn(**args)

    return _executable(fn, call, blocking, direct=ctx_name is None)
