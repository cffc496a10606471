"""The agent loop: send the conversation and the tools to a model, run the calls it asks for, send
the results back, until it is done.

One `Invocation` per model turn, all in one run (one workspace). The runtime reuses the snapshot
while the catalog, the Profile and the conditions are unchanged, so `inv.tools()` is the same tuple
every turn and the tools array goes out byte-identical (provider prompt caches hit); a catalog
change (an MCP server's tool list, a script tool added) gives the next turn a new snapshot.

A turn: drain background reports (user text for this turn) → `client.complete` → the answer joins
the conversation → its calls run through `inv.arun` (gate, dispatch, projection, records) →
`workspace_commit` effects go to the host's `on_commit` → the results join the conversation.

The run ends (`AgentResult.status`, docs/agent.md):
- `completed`: an answer without tool calls (while background tasks still run, the loop first waits
  up to `background_wait` seconds for their report and goes on with it), or a completion tool whose
  effect is in `COMPLETION_EFFECTS` succeeded (`workspace_finish`; `task_return`, `agent_handoff`
  join by their effect kinds);
- `max_turns` / `max_tokens`: no model turn is started past the budget (a turn's calls still run);
- `max_output_tokens` / `content_filter`: an answer without calls that the provider cut or withheld;
- `failed`: a model request failed (`model.*`), after the transport's retries;
- `cancelled`: the task awaiting `run` was cancelled; the HTTP request and the turn's tools are
  cancelled with it, the status is recorded, and `CancelledError` propagates.

Delegation (agent/delegation/): the run's link closes with it, cancelling unfinished children and
background legs; an `agent_handoff` hands the run to the target agent (`take_handoff`).

With records on, the conversation is kept as the run's `agent` event stream (`run_events(run_id,
"agent")`): the task, each model turn's text, calls, stop reason and usage, background reports, and
the final status. The key is never in it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooldeck.agent import background
from tooldeck.agent.delegation import link as links
from tooldeck.agent.delegation.children import take_handoff
from tooldeck.agent.errors import ModelError
from tooldeck.agent.events import AgentEvent, AgentResult, OnAgentEvent, OnCommit, Status
from tooldeck.agent.types import ModelClient, ModelConfig, ModelRequest, ModelTurn, StreamEvent, ToolChoice
from tooldeck.builtins.todo import TODO_UPDATED
from tooldeck.core.errors import TooldeckError
from tooldeck.protocols import NAME_PROTOCOL
from tooldeck.workspace import effects as workspace_effects

if TYPE_CHECKING:
    from tooldeck.builtins.ask_user import AskUser
    from tooldeck.catalog.profile import Profile
    from tooldeck.dispatch import Confirm
    from tooldeck.invocation import Invocation
    from tooldeck.runtime import Runtime

DEFAULT_MAX_TURNS = 50
RUN_EVENTS = "agent"
"""The run event stream the loop records the conversation in."""
COMPLETION_EFFECTS = frozenset({workspace_effects.FINISH, "task_returned", "handoff_accepted"})
"""Effect kinds of the completion tools: a call that produced one ends the run (`agent_handoff`'s ends
the stage: the target agent continues the run, agent/delegation/children.py)."""
_ANSWER_STATUS: dict[str, Status] = {"length": "max_output_tokens", "content_filter": "content_filter"}


class Agent:
    """A model driving a runtime's tools. `await agent.run(task)` → `AgentResult`; several runs may
    follow each other (each a fresh conversation; a given `run_id` reuses that run's workspace).
    `async with` keeps the HTTP client open across runs, else each run closes it when it ends."""

    def __init__(self, runtime: Runtime, model: ModelConfig | ModelClient, *, instructions: str | None = None,
                 max_turns: int | None = None, max_tokens: int | None = None, tool_choice: ToolChoice = "auto",
                 scene: str = "chat", headless: bool = False, profile: Profile | Mapping[str, Any] | None = None,
                 confirm: Confirm | None = None, workspace: str | Path | None = None,
                 on_event: OnAgentEvent | None = None, on_commit: OnCommit | None = None,
                 background_wait: float = 300.0, completion_effects: frozenset[str] = COMPLETION_EFFECTS,
                 http_client: Any = None, ask_user: AskUser | None = None, agent_id: str | None = None,
                 reasoning: str | None = None) -> None:
        self.runtime = runtime
        if isinstance(model, ModelConfig):
            self.config = model
            self._client: ModelClient | None = None
            self._owns_client = True
        else:  # the host's own client: the host closes it
            self.config = model.config
            self._client = model
            self._owns_client = False
        self.instructions = instructions
        self.max_turns = max_turns or self.config.max_turns or DEFAULT_MAX_TURNS
        self.max_tokens = max_tokens or self.config.max_tokens_per_run
        self.tool_choice = tool_choice
        self.scene = scene
        self.headless = headless
        self.profile = profile
        self.confirm = confirm
        self.workspace = workspace
        self.on_event = on_event
        self.on_commit = on_commit
        self.ask_user = ask_user
        """Who answers `ask_user` (builtins/ask_user.py); None: the Runtime's. A headless agent has none."""
        self.background_wait = background_wait
        self.reasoning = reasoning
        """The reasoning effort of every model turn (low | medium | high; None: the provider's default)."""
        self.completion_effects = completion_effects
        self._http_client = http_client
        self.agent_id = agent_id  # the agent profile the run acts as (<home>/agents/<id>.toml); None: `main`
        self.parent_task: Any = None  # a return-mode child's task (agent/delegation/children.py)
        self.lineage: dict[str, Any] = {}  # what a child run's `run_started` records of its parent
        self._keep_open = False
        self.result: AgentResult | None = None
        """The last run's result (also after a cancelled run, whose `run` raised)."""

    @property
    def client(self) -> ModelClient:
        if self._client is None:
            from tooldeck.agent.providers import make_client

            self._client = make_client(self.config, client=self._http_client) if self._http_client is not None \
                else make_client(self.config)
        return self._client

    async def __aenter__(self) -> Agent:
        self._keep_open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._keep_open = False
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            client, self._client = self._client, None
            await client.aclose()

    # -- a run -------------------------------------------------------------------------------------
    async def run(self, task: str, *, run_id: str | None = None,
                  history: Sequence[tuple[str, str]] = ()) -> AgentResult:
        """`history`: earlier (task, answer) exchanges the conversation starts with (a named subagent
        session's past legs), sent before `task` as user and assistant messages."""
        rid = run_id or f"run_{uuid.uuid4().hex[:16]}"
        run = _Run(self, task, rid, resumed=run_id is not None, history=history)
        try:
            return await run.go()
        finally:
            self.result = run.result
            if run.link is not None:  # unfinished children and background legs stop with the run
                await run.link.aclose()
            if not self._keep_open:
                await self.aclose()


class _Run:
    """The state of one run: its conversation, usage, turns and invocations."""

    def __init__(self, agent: Agent, task: str, run_id: str, resumed: bool,
                 history: Sequence[tuple[str, str]] = ()) -> None:
        self.agent = agent
        self.task = task
        self.history = tuple(history)
        self.run_id = run_id
        self.resumed = resumed
        self.client = agent.client
        self.provider = NAME_PROTOCOL[self.client.format]
        rt = agent.runtime
        self.recorder = rt.recorder if rt.recording else None
        self.emit = agent.on_event
        self.result = AgentResult("failed", run_id)
        self.messages: list[dict[str, Any]] = []
        self._turn_no = 0
        self.instructions, self.profile = agent.instructions, agent.profile  # the stage's (a handoff changes them)
        self.last_snapshot: Any = None
        self.link: links.RunLink | None = None

    def _event(self, kind: str, **data: Any) -> None:
        if self.emit is not None:
            self.emit(AgentEvent(kind, data))

    def _record(self, kind: str, **data: Any) -> None:
        if self.recorder is not None:
            self.recorder.append_run_event(self.run_id, RUN_EVENTS, {"type": kind, "at": time.time(), **data})

    async def go(self) -> AgentResult:
        agent, result = self.agent, self.result
        cfg = agent.config
        self.link = links.attach(self)
        past = {"history": [{"task": t, "answer": a} for t, a in self.history]} if self.history else {}
        self._record("run_started", task=self.task, model=cfg.public(), instructions=agent.instructions,
                     **past, **agent.lineage)
        self._event("run_started", run_id=self.run_id, model=cfg.public(), task=self.task)
        for past_task, answer in self.history:
            self.messages.extend(self.client.user_message(past_task))
            self.messages.extend(self.client.assistant_message(ModelTurn(answer)))
        self.messages.extend(self.client.user_message(self.task))
        try:
            status = await self._turns()
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._finish("cancelled")
            raise
        except ModelError as exc:
            result.error = exc
            status = "failed"
        except TooldeckError as exc:
            if not exc.code.startswith("model."):  # a fault of the host or the runtime: recorded, then raised
                result.error = exc
                self._finish("failed")
                raise
            result.error = exc
            status = "failed"
        except BaseException as exc:
            result.error = TooldeckError("agent.host_fault", f"{type(exc).__name__}: {exc}")
            self._finish("failed")
            raise
        self._finish(status)
        return result

    def _finish(self, status: Status) -> None:
        result = self.result
        result.status = status
        err = result.error
        data = {"status": status, "completed_by": result.completed_by, "text": result.text, "reply": result.reply,
                "usage": result.usage.to_dict(), "turns": result.turns, "error_code": err.code if err else None,
                "error": err.message if err else None}
        try:
            self._record("run_finished", **data)
        except Exception as exc:  # the run's own outcome stands; the failed write is noted on it
            if err is not None:
                err.add_note(f"tooldeck could not record the end of run {self.run_id}: {exc}")
            else:
                raise
        self._event("run_finished", **data)

    async def _turns(self) -> Status:
        agent, result = self.agent, self.result
        rt = agent.runtime
        on_stream = self._stream_handler() if self.emit is not None else None
        notes: str | None = None
        first = True
        while True:
            if result.turns >= agent.max_turns:
                return "max_turns"
            if agent.max_tokens is not None and result.usage.total_tokens >= agent.max_tokens:
                return "max_tokens"
            inv = rt.invocation(self.provider, agent.scene, self.profile, self.run_id, agent.headless,  # type: ignore[arg-type]
                                confirm=agent.confirm, workspace=agent.workspace,
                                ask_user=None if agent.headless else agent.ask_user)
            self.last_snapshot = inv.snapshot
            result.invocation_ids.append(inv.id)
            if first and background.has_background(inv, self.resumed):
                notes = background.drain(inv)
            first = False
            if notes:
                self._deliver_notes(notes)
                notes = None
            result.turns += 1
            self._turn_no = result.turns
            self._event("turn_started", turn=result.turns)
            turn = await self.client.complete(self._request(inv), on_stream)
            result.usage = result.usage + turn.usage
            result.text = turn.text
            self._record("model_turn", turn=result.turns, invocation_id=inv.id, text=turn.text,
                         calls=[{"id": c.get("id"), "name": c.get("name")} for c in turn.calls],
                         stop_reason=turn.stop_reason, usage=turn.usage.to_dict())
            self._event("model_turn", turn=result.turns, invocation_id=inv.id, text=turn.text,
                        calls=[{"id": c.get("id"), "name": c.get("name")} for c in turn.calls],
                        stop_reason=turn.stop_reason, usage=turn.usage.to_dict())
            self.messages.extend(self.client.assistant_message(turn))
            if not turn.calls:
                if background.has_background(inv, self.resumed):
                    notes = background.drain(inv)
                    if notes is None and background.running(inv):
                        notes = await background.wait_for_report(inv, agent.background_wait)
                    if notes:
                        continue
                result.completed_by = "answer"
                return _ANSWER_STATUS.get(turn.stop_reason, "completed")
            done_by = await self._run_calls(inv, turn)
            if done_by is not None:
                if self.link is not None and self.link.handoff is not None and take_handoff(self):
                    continue
                result.completed_by = done_by
                return "completed"

    async def _run_calls(self, inv: Invocation, turn: ModelTurn) -> str | None:
        """Run the turn's calls, hand commits to the host, add the results (and any background
        report) to the conversation. The call name of a completion tool that succeeded, or None."""
        n = self._turn_no
        if self.emit is not None:
            for c in turn.calls:
                self._event("tool_call", turn=n, call_id=c.get("id"), name=c.get("name"),
                            arguments=c.get("arguments"))
        choice = self.agent.tool_choice
        # the turn's provider items (reasoning, thinking, text parts) and each call's provider_data are
        # recorded with the turn, so replay sends them back (protocols/items.py)
        results = await inv.arun(turn.calls, choice, provider_items=turn.provider_items or None)
        if self.emit is not None:
            for r in results:  # a redacted result (a secret answer) is shown as the records keep it
                self._event("tool_result", turn=n, call_id=r.call_id, tool_id=r.tool_id, is_error=r.is_error,
                            error_code=r.error_code, content=r.content if r.redacted is None else r.redacted[0])
        done_by = None
        if inv.effects:
            done_by = await self._effects(inv, turn)
        notes = background.drain(inv) if background.has_background(inv, self.resumed) else None
        if notes:
            self._record("background_reports", turn=n, text=notes)
            self._event("background_reports", turn=n, count=notes.count("[background report "), text=notes)
        self.messages.extend(self.client.tool_results(turn, results, [notes] if notes else ()))
        return done_by

    async def _effects(self, inv: Invocation, turn: ModelTurn) -> str | None:
        result, on_commit = self.result, self.agent.on_commit
        for commit in workspace_effects.commits(inv):
            result.commits.append(commit)
            result.reply = commit.text if commit.mode == "replace" or result.reply is None \
                else result.reply + commit.text
            self._event("commit", turn=self._turn_no, call_id=commit.call_id, path=commit.path, mode=commit.mode,
                        chars=len(commit.text))
            if on_commit is not None:
                out = on_commit(commit)
                if inspect.isawaitable(out):
                    await out
        for call_id, effect in inv.effects:
            if effect.kind == TODO_UPDATED:  # write_todo's checklist: the host watches it, the records keep it
                self._record("todo", turn=self._turn_no, call_id=call_id, **effect.data)
                self._event("todo", turn=self._turn_no, call_id=call_id, **effect.data)
        names = {c.get("id"): c.get("name") for c in turn.calls}
        for call_id, effect in inv.effects:
            if effect.kind in self.agent.completion_effects:
                return str(names.get(call_id) or effect.kind)
        return None

    def _deliver_notes(self, notes: str) -> None:
        """Reports that arrived while no tool result was due: a user message of their own."""
        self._record("background_reports", turn=self.result.turns + 1, text=notes)
        self._event("background_reports", turn=self.result.turns + 1, count=notes.count("[background report "),
                    text=notes)
        self.messages.extend(self.client.user_message(notes))

    def _request(self, inv: Invocation) -> ModelRequest:
        agent = self.agent
        instructions = self.instructions
        context = inv.turn_context()
        if context:
            instructions = f"{instructions}\n\n{context}" if instructions else context
        if self.link is not None:  # the agents this one may delegate or hand off to
            instructions = self.link.with_directory(instructions, inv.snapshot)
        return ModelRequest(self.messages, inv.tools(), instructions, agent.tool_choice,
                            agent.config.max_output_tokens, stream=agent.config.stream, reasoning=agent.reasoning)

    def _stream_handler(self) -> Any:
        emit = self.emit
        assert emit is not None

        def on_stream(event: StreamEvent) -> None:
            n = self._turn_no
            if event.kind in ("text", "reasoning"):
                emit(AgentEvent(event.kind, {"turn": n, "text": event.text}))
            elif event.kind == "tool_call_started":
                emit(AgentEvent(event.kind, {"turn": n, "index": event.index, "call_id": event.call_id,
                                             "name": event.name}))
            else:
                emit(AgentEvent(event.kind, {"turn": n, "index": event.index, "text": event.text}))

        return on_stream

