"""`Invocation`: one model invocation over a frozen snapshot, its gate and budget, and its rounds of calls.

`arun(calls)` runs one model turn: wire calls (`wire.Call`) → gate (`gate.py`) → dispatch
(`dispatch.py`) → projection (`projection.py`), with the records of the turn written through
`records/writer.py` when records are on. Results come back in call order.

Two lanes, one named function each, held equal by `tests/core/test_lanes_differential.py`:

- `_one_call`: the most common turn, one call with records off, without the per-turn lists;
- `_turn`: every other turn (several calls, records on, a turn that is not a list).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Iterable, Mapping
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from tooldeck.catalog.profile import Profile
from tooldeck.catalog.runs import RunState
from tooldeck.catalog.sources import UNFINISHED, Diagnostic, TurnState
from tooldeck.core.descriptors import Scene
from tooldeck.core.errors import TooldeckError
from tooldeck.core.results import AgentToolResult, ToolEffect, ToolOutput
from tooldeck.dispatch import Confirm, begin_one, not_started, run_batch
from tooldeck.gate import Admitted, Gate, Refused, ToolChoice
from tooldeck.invocation_ids import new_invocation_id
from tooldeck.policy import hook_flow
from tooldeck.policy.hooks import Hook, chains_for
from tooldeck.policy.hooks_exec import profile_hooks
from tooldeck.policy.known_secrets import KNOWN
from tooldeck.policy.resolve import workspace_resolver
from tooldeck.projection import Projector
from tooldeck.records.calls import provider_slots, record_unpaired_turn, requested, unprojected
from tooldeck.records.writer import TurnWriter
from tooldeck.repeats import RepeatGuard
from tooldeck.snapshot import deferred
from tooldeck.snapshot.search import DeferredCatalog
from tooldeck.snapshot.snapshot import Snapshot
from tooldeck.wire import Call, UnpairedCall

if TYPE_CHECKING:
    from tooldeck.runtime import Runtime

Turn = list[Mapping[str, Any]]


class Invocation:
    """One model invocation: a frozen snapshot, its gate and budget, and its rounds of calls.

    It is the `InvocationView` its tools get (`ctx.invocation`): `id`, `profile`, `snapshot`,
    `run_state`, `fetched`, `deferred_catalog()`."""

    def __init__(self, runtime: Runtime, run: RunState, snapshot: Snapshot, profile: Profile, scene: Scene,
                 headless: bool, confirm: Confirm | None, diagnostics: list[Diagnostic], ask_user: Any = None,
                 hooks: Iterable[Hook] = ()) -> None:
        self.id = new_invocation_id()
        self.runtime = runtime
        self.run_state = run
        self.snapshot = snapshot
        self.profile = profile
        self.scene = scene
        self.headless = headless
        self.confirm = confirm
        self.ask_user = ask_user
        """Who answers `ask_user` (builtins/ask_user.py), or None: then the tool is not offered."""
        self.diagnostics = diagnostics
        state = run.state  # a new invocation per served call: no throwaway defaults built for `setdefault`
        fetched = state.get("fetched_tools")
        if fetched is None:
            fetched = state["fetched_tools"] = set()
        self.fetched: set[str] = fetched
        """Tool ids whose schema was fetched in this run (deferred modes); shared by the run's invocations."""
        table = runtime.snapshots.gate_table(snapshot, profile)
        repeats = None
        if profile.max_identical_calls:
            repeats = state.get("repeats")
            if repeats is None:
                repeats = state["repeats"] = RepeatGuard()
        resolve = workspace_resolver(run.workspace_root) if any(r.path for r in profile.rules) else None
        own = profile_hooks(profile.hooks, runtime.home)
        chains = None
        if runtime.hooks or hooks or own:
            chains = chains_for((b.tool_id for b in snapshot.bindings), [*runtime.hooks, *hooks, *own])
        self.gate = Gate(snapshot, profile, table, self.fetched, repeats, resolve, chains)
        self.projector = Projector(run.workspace_root, self.id, profile.result_inline_limit, profile.preview_chars,
                                   table.guidance, KNOWN.policy(profile))
        self.round = 0
        self.effects: list[tuple[str, ToolEffect]] = []

    @property
    def provider(self) -> str:
        return self.snapshot.provider

    def tools(self) -> tuple[dict[str, Any], ...]:
        """The provider-ready tools array: the snapshot's own, shared by every invocation that reuses the
        snapshot, returned without a copy. Do not change it or the dicts inside (they are the frozen
        snapshot's); `copy.deepcopy` it to edit a copy."""
        return self.snapshot.tools

    def call_names(self) -> dict[str, str]:
        return {b.call_name: b.tool_id for b in self.snapshot.bindings}

    def turn_context(self) -> str:
        """Text for this turn's context: in the deferred modes, every listed tool by name and the skills
        `run_skill` can load (docs/scripts.md); else empty."""
        text = deferred.turn_context(self.snapshot.loading, self.snapshot.extra.get("listed") or ())
        if text:
            from tooldeck.sources.skills import turn_context as skills_context

            skills = skills_context(self)
            text = f"{text}\n\n{skills}" if skills else text
        return text

    def deferred_catalog(self) -> DeferredCatalog:
        """The snapshot's find_tools index, built once per snapshot (shared with other invocations)."""
        return self.runtime.snapshots.deferred_catalog(self.snapshot)

    # -- running a turn ---------------------------------------------------------------------------
    def run(self, calls: Turn, tool_choice: ToolChoice = "auto", *,
            provider_items: list[Mapping[str, Any]] | None = None) -> list[AgentToolResult]:
        """Sync facade over `arun`; not for use inside a running event loop."""
        return self.run_sync(calls, tool_choice, provider_items=provider_items)

    def run_sync(self, calls: Turn, tool_choice: ToolChoice = "auto", *,
                 provider_items: list[Mapping[str, Any]] | None = None) -> list[AgentToolResult]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.runtime.loop().run_until_complete(self.arun(calls, tool_choice, provider_items=provider_items))
        raise TooldeckError("invocation.sync_in_async", "Invocation.run() was called inside a running event loop; "
                            "use `await invocation.arun(calls)`")

    def arun(self, calls: Turn, tool_choice: ToolChoice = "auto", *,
             provider_items: list[Mapping[str, Any]] | None = None) -> Coroutine[Any, Any, list[AgentToolResult]]:
        """Run one model turn's batch of calls (`await` it); results come back in call order.

        `provider_items`: the provider-native items of the assistant turn that must travel back before
        its calls (Responses reasoning items, Anthropic thinking blocks, text parts); a call may carry
        `"provider_data"` (Gemini `thoughtSignature`). With records on both are checked, then recorded
        with the turn verbatim, and replay sends them back (`protocols/items.py`); with records off
        nothing keeps them and they are not looked at.

        It only picks the lane and returns its coroutine, so the fast lane costs no extra await."""
        if type(calls) is list and len(calls) == 1 and not self.runtime.recording:
            return self._one_call(calls[0], tool_choice)
        return self._turn(calls, tool_choice, provider_items)

    async def _one_call(self, wire_call: Mapping[str, Any], tool_choice: ToolChoice) -> list[AgentToolResult]:
        """The fast lane, one call with records off: `_turn`'s steps without the per-turn lists."""
        call = Call.from_wire(wire_call)
        self.round += 1
        round_no = self.round
        if self.gate.repeats is not None:
            self.gate.repeats.begin_turn()
        chk = self.gate.check(call.id, call.name, call.arguments, tool_choice)
        if type(chk) is Admitted and chk.hooks is not None:
            chk = await hook_flow.pre_call(self, call.id, chk)
        out = begin_one(self, chk, 0, TurnState((call,), round_no, [UNFINISHED]))
        if type(out) is CoroutineType:
            out = await out
        if isinstance(out, ToolOutput) and out.effects:
            self.effects.extend((call.id, effect) for effect in out.effects)
        entry = chk.entry
        results = [self.projector.project(call.id, entry.tool_id if entry is not None else None, round_no, out)]
        if self.gate.repeats is not None:
            self.gate.repeats.observe(results)
        return results

    async def _turn(self, calls: Turn, tool_choice: ToolChoice,
                    provider_items: list[Mapping[str, Any]] | None = None) -> list[AgentToolResult]:
        """The general lane: any number of calls, records on or off."""
        from_wire = Call.from_wire
        wire: list[Call] = []
        if type(calls) is not list:
            calls = list(calls)
        runtime = self.runtime
        recording = runtime.recording
        # What the turn keeps of the provider, checked before anything runs or is recorded.
        slots = provider_slots(calls, provider_items, self.provider) if recording else None
        try:
            for c in calls:  # loops, not comprehensions: this is the hot path and a turn is often one call
                wire.append(from_wire(c))
        except UnpairedCall:
            if recording:
                self.round += 1
                record_unpaired_turn(runtime.recorder, self.id, self.round, calls, slots)
            raise
        self.round += 1
        round_no = self.round
        if self.gate.repeats is not None:
            self.gate.repeats.begin_turn()
        check = self.gate.check
        checks: list[Admitted | Refused] = []
        try:
            for c in wire:
                checks.append(check(c.id, c.name, c.arguments, tool_choice))
        except BaseException:
            if recording:  # nothing a model sent is lost, even when the gate itself fails
                runtime.recorder.calls_requested(self.id, round_no, requested(wire, slots), time.time())
            raise
        asked = None
        if self.gate.hooks is not None and any(type(c) is Admitted and c.hooks is not None for c in checks):
            # Pre-call hooks may take seconds: what the model sent is recorded before they run.
            if recording:
                asked = requested(wire, slots)
                runtime.recorder.calls_requested(self.id, round_no, asked, time.time())
            await hook_flow.settle(self, wire, checks)
        n = len(wire)
        turn = TurnState(wire, round_no, [UNFINISHED] * n, [None] * n if recording else None)
        records: TurnWriter | None = None
        if recording:
            # One transaction before any tool runs: the raw wire arguments verbatim, which calls start, and
            # the gate's refusals with their results. Then the results, as they arrive (records/writer.py).
            records = TurnWriter.admit(runtime.recorder, self.id, turn, checks, asked or requested(wire, slots),
                                       self.projector.project, requested_already=asked is not None)
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
            results = self._project(turn, checks)
        else:
            results = self._project_rest(turn, checks, records.results)
            records.finish(results)
        if self.gate.repeats is not None:
            self.gate.repeats.observe(results)
        return results  # type: ignore[return-value]

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
                secrets = self.projector.secrets
                results = unprojected(turn, checks, secrets.redactor if secrets is not None else None)
            records.finish(results, interrupted, cancelled=isinstance(exc, asyncio.CancelledError))
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
