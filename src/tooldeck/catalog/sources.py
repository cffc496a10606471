"""The ports between the runtime and its tools: `ToolSource` (what every source implements: builtin,
extension, MCP, script), `Executable` (how to run one tool), `CallContext` (what a running tool gets)
and `InvocationView` (what a tool sees of its invocation). Nothing here imports the runtime."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import SourceKind, ToolId
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:
    from tooldeck.catalog.profile import Profile
    from tooldeck.catalog.runs import RunState
    from tooldeck.gate import GateTable
    from tooldeck.snapshot.search import DeferredCatalog
    from tooldeck.snapshot.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    tool_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "tool_id": self.tool_id}


class _Unfinished:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNFINISHED"


UNFINISHED: Final = _Unfinished()
"""A call's slot in `TurnState.outputs` before its output arrives (None is a value a tool may return)."""


@dataclass(slots=True)
class TurnState:
    """The calls of one model turn, so a tool can see its place in the batch."""

    calls: Sequence[Any]
    """The turn's calls as they came (each has `id`, `name`, `arguments`)."""
    round: int
    outputs: list[Any]
    """Each call's output once it has finished (UNFINISHED before): a ToolOutput, or the plain value the
    tool returned (never an error)."""
    timings: list[tuple[float, float] | None] | None = None
    """(started, finished) per call that ran, kept only when records are on."""

    @property
    def call_names(self) -> list[str]:
        return [c.name for c in self.calls]

    def failed_before(self, index: int) -> list[int]:
        outputs = self.outputs
        return [i for i in range(index) if isinstance(outputs[i], ToolOutput) and outputs[i].is_error]


class InvocationView(Protocol):
    """What a tool sees of the invocation its call belongs to (`CallContext.invocation`): the Runtime's
    `Invocation` implements it, and a tool reads nothing else of the runtime."""

    id: str
    profile: Profile
    """The invocation's Profile: limits, timeouts (`profile.timeout_for(tool_id)`), workspace roots."""
    snapshot: Snapshot
    run_state: RunState
    fetched: set[str]
    """Tool ids whose schema the model has fetched in this run (deferred modes); `find_tools` adds to it."""
    ask_user: Any
    """Who answers `ask_user` in this invocation (`builtins.ask_user.AskUser`), or None."""

    def deferred_catalog(self) -> DeferredCatalog:
        """The snapshot's `find_tools` index (names and BM25), built once per snapshot."""
        ...


@dataclass(slots=True)
class CallContext:
    call_id: str
    tool_id: ToolId
    call_name: str
    round: int
    index: int
    invocation: InvocationView
    turn: TurnState

    @property
    def run(self) -> RunState:
        return self.invocation.run_state


@dataclass(frozen=True, slots=True)
class Executable:
    """How to run one tool. `fn(args, ctx)` returns a value or an awaitable of one (dispatch looks
    at what it returns, so sync and async callables need no flag).

    `blocking` marks a sync callable that may block: it runs on a worker thread. A sync callable
    that is not blocking runs inline on the event loop (the fast path).
    """

    fn: Callable[[dict[str, Any], CallContext], Any]
    blocking: bool = False
    direct: Callable[..., Any] | None = None
    """A callable that takes the arguments as keywords and needs no CallContext (plain extension
    functions): dispatch calls it as `direct(**args)` and builds no context."""


class ToolSource(Protocol):
    """A family of tools. A source written as a subclass inherits the no-op `prepare_gate` and `close`;
    `Catalog.add_source` refuses an object that lacks any method of the port (`catalog.source_incomplete`)."""

    kind: SourceKind

    def descriptors(self) -> Iterable[ToolDescriptor]:
        """The tools this source offers now (from memory or a disk cache; never waits on a network)."""
        ...

    def diagnostics(self) -> list[Diagnostic]:
        ...

    def resolve(self, tool_id: ToolId) -> Executable | None:
        """The executable for a tool at call time, or None when it is no longer available."""
        ...

    def prepare_gate(self, table: GateTable) -> None:
        """Called once per gate table, when the runtime builds it (before any invocation uses it): a
        source may tighten its tools' permissions there, or append to `table.explain_unknown` a function
        that says why one of its call names is missing. Default: nothing."""
        return None

    def close(self) -> None:
        """Release what the source holds (sessions, processes, threads); `Runtime.close` calls it once,
        after the runs and before the records. Default: nothing."""
        return None


SOURCE_METHODS = ("descriptors", "diagnostics", "resolve", "prepare_gate", "close")


@dataclass
class StaticSource(ToolSource):
    """A source backed by an in-memory table; the base of the builtin and extension registries."""

    kind: SourceKind
    _tools: dict[ToolId, tuple[ToolDescriptor, Executable]] = field(default_factory=dict)
    _diagnostics: list[Diagnostic] = field(default_factory=list)

    def add(self, descriptor: ToolDescriptor, executable: Executable) -> None:
        if descriptor.id.kind != self.kind:
            raise ValueError(f"{descriptor.id} is not a {self.kind} tool")
        self._tools[descriptor.id] = (descriptor, executable)

    def remove(self, tool_id: ToolId) -> bool:
        return self._tools.pop(tool_id, None) is not None

    def descriptors(self) -> Iterable[ToolDescriptor]:
        return [d for d, _ in self._tools.values()]

    def diagnostics(self) -> list[Diagnostic]:
        return list(self._diagnostics)

    def resolve(self, tool_id: ToolId) -> Executable | None:
        entry = self._tools.get(tool_id)
        return entry[1] if entry else None

    def get(self, tool_id: ToolId) -> ToolDescriptor | None:
        entry = self._tools.get(tool_id)
        return entry[0] if entry else None
