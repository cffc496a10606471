"""The runtime: a catalog of tools, runs with their workspaces, and invocations with frozen snapshots."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import CoroutineType
from typing import Any, Generic, TypeVar

import orjson

from tooldeck.builtins import default_builtins, meta
from tooldeck.builtins.registry import BuiltinTool, builtin_source
from tooldeck.catalog import bindings as binding_prep
from tooldeck.catalog.catalog import Catalog
from tooldeck.catalog.profile import Profile, matches
from tooldeck.catalog.sources import UNFINISHED, Diagnostic, ToolSource, TurnState
from tooldeck.core.arguments import MISSING
from tooldeck.core.descriptors import ALL_SCENES, AvailabilityContext, Scene, ToolAnnotations
from tooldeck.core.errors import INVALID_TOOL_CALL, TooldeckError
from tooldeck.core.ids import ToolId
from tooldeck.core.rawvalue import RawObject, raw_form
from tooldeck.core.results import AgentToolResult, ToolEffect, ToolOutput, as_output
from tooldeck.dispatch import Confirm, begin_one, not_started, run_batch
from tooldeck.gate import Admitted, Gate, GateTable, Refused, ToolChoice
from tooldeck.naming import PROTOCOLS
from tooldeck.projection import Projector
from tooldeck.records.port import FinishedCall, InvocationInfo, NullRecorder, Recorder, RequestedCall
from tooldeck.records.writer import TurnWriter
from tooldeck.snapshot import deferred
from tooldeck.snapshot.search import DeferredCatalog
from tooldeck.snapshot.snapshot import Binding, Snapshot
from tooldeck.sources.extensions import ExtensionRegistry

T = TypeVar("T")
PROFILE_FILES = ("profile.toml", "profile.json")


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


@dataclass
class RunState:
    """State shared by the invocations of one run: its workspace and per-run tool state."""

    run_id: str
    workspace_root: Path
    state: dict[str, Any] = field(default_factory=dict)
    records: Recorder | None = None
    """The runtime's records store when records are on (tools may keep run-scoped events there)."""

    def close(self) -> None:
        """Close what tool families keep in `state` (e.g. stop background tasks) before the store closes."""
        for value in list(self.state.values()):
            close = getattr(value, "close", None)
            if callable(close):
                close()


class UnpairedCall(TooldeckError):
    """A call without a usable id: its result could not be paired with it, so no call of its turn runs."""

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_TOOL_CALL, message)


@dataclass(slots=True)
class Call:
    id: str
    name: str
    arguments: Any

    @classmethod
    def from_wire(cls, call: Mapping[str, Any]) -> Call:
        """The call of a wire object (`{"id", "name", "arguments"}`, or OpenAI's `{"id", "function": {…}}`).

        Without a non-empty string `id` it raises `UnpairedCall` (`model.invalid_tool_call`): a result
        must carry its call's id. A missing or empty name is `""`, and a name that is not a str its JSON
        text: the gate answers such a call with `tool.unknown_tool`."""
        if type(call) is not dict and not isinstance(call, Mapping):
            raise UnpairedCall(f"a tool call must be an object with an `id`, got {type(call).__name__}; no call of "
                               "the turn was run (have the model retry the turn)")
        fn = call.get("function")
        if fn is None or (type(fn) is not dict and not isinstance(fn, Mapping)):
            fn = call
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise UnpairedCall("a tool call needs a non-empty string `id` to pair its result with it; no call of "
                               "the turn was run (have the model retry the turn)")
        name = fn.get("name")
        arguments = fn.get("arguments", MISSING)
        if arguments is MISSING:
            arguments = fn.get("args", MISSING)
        return cls(call_id, name if type(name) is str else _as_text(name), arguments)

    @classmethod
    def salvage(cls, call: Any) -> Call:
        """`from_wire` for the records of a turn it refused: never raises. An id or name that is not a
        str is kept as its JSON text (`""` when absent); a call that is not an object is kept whole as
        its raw arguments."""
        if type(call) is not dict and not isinstance(call, Mapping):
            return cls("", "", call)
        fn = call.get("function")
        if fn is None or (type(fn) is not dict and not isinstance(fn, Mapping)):
            fn = call
        arguments = fn.get("arguments", MISSING)
        if arguments is MISSING:
            arguments = fn.get("args", MISSING)
        call_id, name = call.get("id"), fn.get("name")
        return cls(call_id if type(call_id) is str else _as_text(call_id),
                   name if type(name) is str else _as_text(name), arguments)

    def raw_text(self) -> str | RawObject | None:
        """The raw form of the wire arguments for the records (`core.rawvalue`): the str as sent, a
        host object's JSON text or its RawObject, None when absent."""
        a = self.arguments
        if a is MISSING:
            return None
        if isinstance(a, str):
            return a
        return raw_form(a)


def _as_text(value: Any) -> str:
    """An id or name that is not a str, as text for the records and messages (`""` when absent)."""
    if value is None or value is MISSING:
        return ""
    if isinstance(value, str):
        return str.__str__(value)
    return str(raw_form(value))


class Runtime:
    def __init__(
        self,
        home: str | Path = ".tooldeck",
        *,
        profile: Profile | Mapping[str, Any] | str | Path | None = None,
        records: bool | Recorder = True,
        builtins: Iterable[BuiltinTool] | None = None,
        confirm: Confirm | None = None,
        sources: Iterable[ToolSource] = (),
    ) -> None:
        self.home = Path(home).resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        self.profile = self._resolve_profile(profile) if profile is not None else self._home_profile()
        self.extensions = ExtensionRegistry()
        chosen = default_builtins() if builtins is None else list(builtins)
        self.catalog = Catalog([builtin_source([*meta.TOOLS, *chosen]),
                                self.extensions, *sources])
        self.recorder: Recorder = self._make_recorder(records)
        self.recording = self.recorder.recording
        self.confirm = confirm
        self.runs: dict[str, RunState] = {}
        self._gate_tables: BuiltOnce[GateTable] = BuiltOnce(256)
        self._deferred_catalogs: BuiltOnce[DeferredCatalog] = BuiltOnce(64)
        self._snapshot_texts: BuiltOnce[str] = BuiltOnce(64)
        self._loop: asyncio.AbstractEventLoop | None = None
        # -- MCP servers (issue 6): <home>/tooldeck.toml [mcp] and <home>/mcp.json --------------------
        from tooldeck.sources.mcp.wiring import attach_mcp

        self.mcp = attach_mcp(self)

    # -- configuration -------------------------------------------------------------------------
    def _home_profile(self) -> Profile:
        for name in PROFILE_FILES:
            if (self.home / name).is_file():
                return Profile.load(self.home / name)
        return Profile()

    @staticmethod
    def _resolve_profile(profile: Profile | Mapping[str, Any] | str | Path) -> Profile:
        if isinstance(profile, Profile):
            return profile
        if isinstance(profile, Mapping):
            return Profile.parse(dict(profile))
        return Profile.load(profile)

    def _make_recorder(self, records: bool | Recorder) -> Recorder:
        if records is False:
            return NullRecorder()
        if records is True:
            from tooldeck.records.store import SqliteRecorder

            return SqliteRecorder(self.home / "records.sqlite")
        return records

    def add_source(self, source: ToolSource) -> None:
        self.catalog.add_source(source)

    def tool(
        self,
        extension_id: str,
        name: str | None = None,
        *,
        scenes: Iterable[Scene] = ALL_SCENES,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        blocking: bool | None = None,
        annotations: ToolAnnotations | None = None,
        enabled: bool = True,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register a plain (sync or async) function as an extension tool."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.extensions.register(fn, extension_id, name, description=description, input_schema=input_schema,
                                     scenes=scenes, enabled=enabled, blocking=blocking, annotations=annotations)
            return fn

        return register

    # -- runs and invocations -------------------------------------------------------------------
    def run_state(self, run_id: str | None = None, workspace: str | Path | None = None) -> RunState:
        """The state of run `run_id` (created on first use). `workspace` lets several runs share one
        session workspace directory; by default each run has `<home>/workspaces/<run-id>/`."""
        rid = run_id or f"run_{uuid.uuid4().hex[:16]}"
        state = self.runs.get(rid)
        if state is not None and workspace is not None and state.workspace_root != Path(workspace).resolve():
            raise TooldeckError("run.workspace_conflict", f"run {rid} already uses {state.workspace_root}")
        if state is None:
            if "/" in rid or "\\" in rid or rid in (".", "..") or not rid.strip():
                raise TooldeckError("run.id_invalid", f"run id {rid!r} must be one path segment")
            root = Path(workspace).resolve() if workspace is not None else self.home / "workspaces" / rid
            state = RunState(rid, root, records=self.recorder if self.recording else None)
            state.workspace_root.mkdir(parents=True, exist_ok=True)
            self.runs[rid] = state
        return state

    def invocation(
        self,
        provider: str = "openai",
        scene: Scene = "chat",
        profile: Profile | Mapping[str, Any] | str | Path | None = None,
        run_id: str | None = None,
        headless: bool = False,
        *,
        confirm: Confirm | None = None,
        snapshot: Snapshot | None = None,
        workspace: str | Path | None = None,
    ) -> Invocation:
        if provider not in PROTOCOLS:
            raise TooldeckError("invocation.provider_invalid",
                                f"unknown provider {provider!r}; expected one of {', '.join(PROTOCOLS)}")
        if scene not in ALL_SCENES:
            raise TooldeckError("invocation.scene_invalid", f"unknown scene {scene!r}; expected chat or session")
        prof = self._resolve_profile(profile) if profile is not None else self.profile
        run = self.run_state(run_id, workspace)
        diagnostics: list[Diagnostic] = []
        if snapshot is None:
            ctx = AvailabilityContext(scene=scene, headless=headless, provider=provider, run_id=run.run_id)
            prepared = binding_prep.prepare(self.catalog, prof, ctx, provider)
            diagnostics = prepared.diagnostics
            snapshot = self._build_snapshot(provider, prepared.bindings, prof, diagnostics)
        inv = Invocation(self, run, snapshot, prof, scene, headless, confirm or self.confirm, diagnostics)
        if self.recording:
            self.recorder.invocation_started(InvocationInfo(run.run_id, inv.id, snapshot.provider, scene, headless,
                                                            snapshot.id, self._snapshot_json(snapshot), time.time()))
        return inv

    def _snapshot_json(self, snapshot: Snapshot) -> str:
        """A snapshot's JSON, serialised once (invocations that reuse a snapshot record the same text)."""
        return self._snapshot_texts.get(snapshot.id, snapshot, snapshot.to_json)

    def _build_snapshot(self, provider: str, bindings: list[Binding], prof: Profile,
                        diagnostics: list[Diagnostic]) -> Snapshot:
        """Eager: every schema in the array. Deferred modes: a fixed array (see `snapshot/deferred.py`)."""
        budget = prof.max_calls_per_invocation
        if prof.loading == "eager":
            return Snapshot.build(provider, bindings, budget, "eager")
        pinned = [b for b in bindings if any(matches(p, b.tool_id) for p in prof.pinned)]
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

    def deferred_catalog(self, snapshot: Snapshot) -> DeferredCatalog:
        """The find_tools search index of a snapshot, built once."""
        return self._deferred_catalogs.get(snapshot.id, snapshot, lambda: DeferredCatalog.build(snapshot))

    def gate_table(self, snapshot: Snapshot, profile: Profile) -> GateTable:
        """Per (snapshot, profile): the gate's entries, compiled validators and the spill guidance."""
        def build() -> GateTable:
            table = GateTable.build(snapshot, profile)
            for entry in table.entries.values():
                entry.source = self.catalog.source(entry.binding.descriptor.id.kind)
            if self.mcp is not None:  # MCP `ask` tools confirm (issue 6); a down server explains its names (issue 11)
                self.mcp.prepare_gate(table)
            return table

        # Keyed by the profile's identity too; the entry keeps the profile alive, so an id is never reused.
        return self._gate_tables.get((snapshot.id, id(profile)), (snapshot, profile), build)

    def loop(self) -> asyncio.AbstractEventLoop:
        """The private event loop behind the sync facade."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop

    def close(self) -> None:
        for run in list(self.runs.values()):
            run.close()
        if self.mcp is not None:  # stop MCP sessions and their server processes (issue 6)
            self.mcp.close()
        self.recorder.close()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- records: resume a recorded invocation (issue 3; see tooldeck.records.resume) -------------
    def resume(self, invocation_id: str, *, confirm: Confirm | None = None) -> Invocation:
        """Reopen a recorded invocation with its stored snapshot; its interrupted calls get
        `outcome_unknown` error results and are never run again."""
        from tooldeck.records.resume import resume_invocation

        return resume_invocation(self, invocation_id, confirm=confirm).invocation


class Invocation:
    """One model invocation: a frozen snapshot, its gate and budget, and its rounds of calls."""

    def __init__(self, runtime: Runtime, run: RunState, snapshot: Snapshot, profile: Profile, scene: Scene,
                 headless: bool, confirm: Confirm | None, diagnostics: list[Diagnostic]) -> None:
        self.id = f"inv_{uuid.uuid4().hex[:16]}"
        self.runtime = runtime
        self.run_state = run
        self.snapshot = snapshot
        self.profile = profile
        self.scene = scene
        self.headless = headless
        self.confirm = confirm
        self.diagnostics = diagnostics
        self.fetched: set[str] = run.state.setdefault("fetched_tools", set())
        """Tool ids whose schema was fetched in this run (deferred modes); shared by the run's invocations."""
        self.gate = Gate(snapshot, profile, runtime.gate_table(snapshot, profile), self.fetched)
        self.projector = Projector(run.workspace_root, self.id, profile.result_inline_limit, profile.preview_chars,
                                   runtime.gate_table(snapshot, profile).guidance)
        self.round = 0
        self.effects: list[tuple[str, ToolEffect]] = []

    @property
    def provider(self) -> str:
        return self.snapshot.provider

    def tools(self) -> list[dict[str, Any]]:
        """The provider-ready tools array (a copy; the snapshot stays frozen)."""
        return orjson.loads(orjson.dumps(list(self.snapshot.tools)))

    def call_names(self) -> dict[str, str]:
        return {b.call_name: b.tool_id for b in self.snapshot.bindings}

    def turn_context(self) -> str:
        """Text for this turn's context: in the deferred modes, every listed tool by name; else empty."""
        return deferred.turn_context(self.snapshot.loading, self.snapshot.extra.get("listed") or ())

    def run(self, calls: list[Mapping[str, Any]], tool_choice: ToolChoice = "auto") -> list[AgentToolResult]:
        """Sync facade over `arun`; not for use inside a running event loop."""
        return self.run_sync(calls, tool_choice)

    def run_sync(self, calls: list[Mapping[str, Any]], tool_choice: ToolChoice = "auto") -> list[AgentToolResult]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.runtime.loop().run_until_complete(self.arun(calls, tool_choice))
        raise TooldeckError("invocation.sync_in_async", "Invocation.run() was called inside a running event loop; "
                            "use `await invocation.arun(calls)`")

    async def arun(self, calls: list[Mapping[str, Any]], tool_choice: ToolChoice = "auto") -> list[AgentToolResult]:
        """Run one model turn's batch of calls; results come back in call order."""
        if type(calls) is list and len(calls) == 1 and not self.runtime.recording:
            # The most common turn, one call with records off: the steps below without the per-turn lists.
            call = Call.from_wire(calls[0])
            self.round += 1
            round_no = self.round
            chk = self.gate.check(call.id, call.name, call.arguments, tool_choice)
            out = begin_one(self, chk, 0, TurnState((call,), round_no, [UNFINISHED]))
            if type(out) is CoroutineType:
                out = await out
            if isinstance(out, ToolOutput) and out.effects:
                self.effects.extend((call.id, effect) for effect in out.effects)
            entry = chk.entry
            return [self.projector.project(call.id, entry.tool_id if entry is not None else None, round_no, out)]
        from_wire = Call.from_wire
        wire: list[Call] = []
        if type(calls) is not list:
            calls = list(calls)
        try:
            for c in calls:  # loops, not comprehensions: this is the hot path and a turn is often one call
                wire.append(from_wire(c))
        except UnpairedCall:
            if self.runtime.recording:
                self._record_unpaired_turn(calls)
            raise
        self.round += 1
        round_no = self.round
        runtime = self.runtime
        recording = runtime.recording
        check = self.gate.check
        checks: list[Admitted | Refused] = []
        try:
            for c in wire:
                checks.append(check(c.id, c.name, c.arguments, tool_choice))
        except BaseException:
            if recording:  # nothing a model sent is lost, even when the gate itself fails
                runtime.recorder.calls_requested(self.id, round_no, _requested(wire), time.time())
            raise
        n = len(wire)
        turn = TurnState(wire, round_no, [UNFINISHED] * n, [None] * n if recording else None)
        records: TurnWriter | None = None
        if recording:
            # One transaction before any tool runs: the raw wire arguments verbatim, which calls start, and
            # the gate's refusals with their results. Then the results, as they arrive (records/writer.py).
            records = TurnWriter.admit(runtime.recorder, self.id, turn, checks, _requested(wire),
                                       self.projector.project)
        outputs = turn.outputs
        try:
            if n == 1:
                out = begin_one(self, checks[0], 0, turn)
                outputs[0] = await out if type(out) is CoroutineType else out
            else:
                await run_batch(self, checks, turn, records)
        except BaseException as exc:  # cancelled, or a fault: the results that arrived are kept, the others
            if records is not None:  # may or may not have run
                self._close_turn(records, turn, checks, exc)
            raise
        if records is None:
            return self._project(turn, checks)  # type: ignore[return-value]
        results = self._project_rest(turn, checks, records.results)
        records.finish(results)
        return results  # type: ignore[return-value]

    def _record_unpaired_turn(self, calls: Any) -> None:
        """A turn refused because a call has no id: every call is recorded (raw arguments verbatim) and
        closed as `failed` with `model.invalid_tool_call` before the error propagates; nothing ran."""
        self.round += 1
        wire = [Call.salvage(c) for c in calls]
        now = time.time()
        recorder = self.runtime.recorder
        recorder.calls_requested(self.id, self.round, _requested(wire), now)
        recorder.calls_finished(self.id, self.round, _unpaired(wire, calls, now))

    def _project(self, turn: TurnState, checks: list[Admitted | Refused]) -> list[AgentToolResult | None]:
        """Each finished call's result for the model (None for a call whose result never arrived);
        its effects go to `effects`."""
        project = self.projector.project
        results: list[AgentToolResult | None] = []
        for c, chk, out in zip(turn.calls, checks, turn.outputs, strict=False):  # equal lengths by construction
            if out is UNFINISHED:
                results.append(None)
                continue
            entry = chk.entry
            results.append(project(c.id, entry.tool_id if entry is not None else None, turn.round, out))
            if isinstance(out, ToolOutput) and out.effects:
                self.effects.extend((c.id, effect) for effect in out.effects)
        return results

    def _close_turn(self, records: TurnWriter, turn: TurnState, checks: list[Admitted | Refused],
                    exc: BaseException) -> None:
        """Write a turn that a cancellation or a fault cut off: the results that arrived, the admitted calls
        a host fault stopped before they started as `tool.interrupted` (nothing ran), the others as
        `outcome_unknown`. Should that fail too, it is noted on the exception, which propagates as it is."""
        interrupted = () if isinstance(exc, asyncio.CancelledError) else not_started(checks, turn.outputs)
        try:
            try:
                results = self._project_rest(turn, checks, records.results)
            except Exception:  # a spill file cannot be written either (a full disk): keep the text inline
                results = _unprojected(turn, checks)
            records.finish(results, interrupted)
        except Exception as failed:
            exc.add_note(f"tooldeck could not close round {turn.round} of {self.id} in the records: {failed}")

    def _project_rest(self, turn: TurnState, checks: list[Admitted | Refused],
                      results: list[AgentToolResult | None]) -> list[AgentToolResult | None]:
        """`_project` for a recorded turn, whose `results` already hold the calls projected when they were
        written (refusals at admission, results written while the turn ran): the others are projected
        now, each exactly once. Effects in call order."""
        project = self.projector.project
        calls = turn.calls
        for i, out in enumerate(turn.outputs):
            if out is UNFINISHED:
                continue
            if results[i] is None:
                entry = checks[i].entry
                results[i] = project(calls[i].id, entry.tool_id if entry is not None else None, turn.round, out)
            if isinstance(out, ToolOutput) and out.effects:
                self.effects.extend((calls[i].id, effect) for effect in out.effects)
        return results


def _requested(wire: list[Call]) -> list[RequestedCall]:
    return [RequestedCall(c.id, c.name, c.raw_text(), i) for i, c in enumerate(wire)]


def _unprojected(turn: TurnState, checks: list[Admitted | Refused]) -> list[AgentToolResult | None]:
    """Each finished call's result without projection (no spill file): for records a fault closes."""
    results: list[AgentToolResult | None] = []
    for c, chk, out in zip(turn.calls, checks, turn.outputs, strict=False):
        if out is UNFINISHED:
            results.append(None)
            continue
        o = as_output(out)
        results.append(AgentToolResult(c.id, chk.entry.tool_id if chk.entry is not None else None, o.content,
                                       o.structured, o.is_error, o.error_code, list(o.resource_refs)))
    return results


def _unpaired(wire: list[Call], calls: Any, now: float) -> list[FinishedCall]:
    """The results recorded for a turn refused because some of its calls have no id."""
    missing = [i for i, c in enumerate(calls) if not _has_id(c)]
    shown = ", ".join(str(i + 1) for i in missing[:10]) + (", …" if len(missing) > 10 else "")
    without_id = set(missing)
    out = []
    for i, c in enumerate(wire):
        if i in without_id:
            text = ("This call has no id (a non-empty string), so its result could not be paired with it; no call "
                    "of this turn was run. Send the calls again, each with its own id.")
        else:
            text = (f"Not run: call {shown} of this turn had no id, so the whole turn was refused; nothing was "
                    "executed. Call it again if it is still needed.")
        out.append(FinishedCall(c.id, i, None, "failed", None, text,
                                {"error": {"code": INVALID_TOOL_CALL, "message": text}, "executed": False}, True,
                                INVALID_TOOL_CALL, [], None, None, now))
    return out


def _has_id(call: Any) -> bool:
    if type(call) is not dict and not isinstance(call, Mapping):
        return False
    call_id = call.get("id")
    return isinstance(call_id, str) and bool(call_id)


def open(home: str | Path = ".tooldeck", **options: Any) -> Runtime:
    """Open a runtime rooted at `home` (workspaces, records, config)."""
    return Runtime(home, **options)


__all__ = ["Call", "Invocation", "RunState", "Runtime", "ToolId", "open"]
