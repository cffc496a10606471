"""What a run freezes of its conversation, kept in the run's state (and, with records on, in its
`conversation` event stream, so another process resuming the run sees the same):

- the **input message count** of the chat bound to the run (Profile `conversation.chat`, else the
  run's own agent conversation): for an agent run's own chat, the messages its current session started
  with (earlier sessions and the task); for any other chat, its length at the first conversation tool
  call of the session. Messages past it are not searchable or readable. A chat that is now shorter
  than its frozen count is `agent.input_history_conflict`, a HostFault: the run fails.
- the **world-info activation**: the entries that the newest `scan_depth` messages of that input
  activate (conversation/worldinfo_activate.py), computed once per session and read by
  `worldinfo_read_activated`.

Per **chat** (not per run), the world-info timed effects (conversation/worldinfo_timed.py): each
activation appends the chat's effects after it to the `worldinfo_timed` stream of the pseudo-run
`worldinfo-chat:<chat>`, and the next activation of that chat, in any run or process, starts from
the last one. Reading the effects, activating and appending the new ones is one step under a lock of the
chat shared by the processes of the home (`<home>/locks/worldinfo_timed-<hash>.lock`), so two runs activating
one chat at once take turns instead of both starting from the same effects.

A session is one `Agent.run` of the run (the number of `run_started` events in its agent stream; 0
outside the agent loop).
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from tooldeck.conversation import worldinfo_timed as timed_effects
from tooldeck.conversation.model import INPUT_HISTORY_CONFLICT, NOT_FOUND, WI_UNAVAILABLE, Chat
from tooldeck.conversation.port import SOURCE_KEY, ConversationSource
from tooldeck.conversation.sources import AGENT_STREAM, DefaultSource
from tooldeck.conversation.worldinfo import Activated, activate, budget_tokens, load_book
from tooldeck.core.errors import HostFault, ToolCallError, TooldeckError
from tooldeck.file_lock import exclusive

if TYPE_CHECKING:
    from tooldeck.catalog.runs import RunState
    from tooldeck.catalog.sources import CallContext
    from tooldeck.conversation.settings import ConversationSettings

STATE_KEY: Final = "conversation.binding"
TIMED_STREAM: Final = "worldinfo_timed"
TIMED_OWNER: Final = "worldinfo-chat:"
"""The timed effects of chat `c` are the `worldinfo_timed` stream of run id `worldinfo-chat:c`."""
EVENTS: Final = "conversation"
"""The run event stream of the freezes."""


@dataclass(frozen=True, slots=True)
class Input:
    chat: Chat
    count: int
    """The frozen input message count: indexes 0 .. count-1 are readable."""


class RunConversation:
    def __init__(self, run: RunState) -> None:
        self.run = run
        self._frozen: dict[tuple[str, int], int] = {}
        self._activations: dict[tuple[Any, ...], list[Activated]] = {}
        self._read_events = False

    @classmethod
    def of(cls, ctx: CallContext) -> RunConversation:
        state = ctx.run.state
        found = state.get(STATE_KEY)
        if found is None:
            found = state[STATE_KEY] = cls(ctx.run)
        return found  # type: ignore[no-any-return]

    @property
    def source(self) -> ConversationSource:
        state = self.run.state
        found = state.get(SOURCE_KEY)
        if found is None:
            found = state[SOURCE_KEY] = DefaultSource(self.run.home, self.run.records)
        return found  # type: ignore[no-any-return]

    def _session(self) -> int:
        records = self.run.records
        if records is None:
            return 0
        return sum(1 for e in records.run_events(self.run.run_id, AGENT_STREAM) if e.get("type") == "run_started")

    def _persisted(self) -> None:
        """Load the freezes an earlier process recorded for this run (once)."""
        if self._read_events or self.run.records is None:
            return
        self._read_events = True
        for event in self.run.records.run_events(self.run.run_id, EVENTS):
            if event.get("type") == "input_frozen":
                self._frozen.setdefault((event["chat"], event["session"]), event["count"])
            elif event.get("type") == "worldinfo_activated":
                key = (event["session"], event["chat"], tuple(event["books"]), event["scan_depth"],
                       event.get("recursion"), event.get("budget"), event.get("min_activations", 0),
                       event.get("min_depth_max", 0))
                self._activations.setdefault(key, [Activated(**e) for e in event["entries"]])

    def _record(self, data: dict[str, Any]) -> None:
        if self.run.records is not None:
            self.run.records.append_run_event(self.run.run_id, EVENTS, data)

    def chat_id(self, settings: ConversationSettings) -> str:
        return settings.chat or self.run.run_id

    def input(self, settings: ConversationSettings) -> Input:
        chat_id = self.chat_id(settings)
        chat = self.source.load(chat_id)
        if chat is None:
            if settings.chat:
                raise ToolCallError(NOT_FOUND, f"the chat {chat_id!r} bound to this run (Profile conversation.chat) "
                                               "does not exist; import it with `tooldeck chat import`.")
            raise ToolCallError(NOT_FOUND, "this run has no conversation: it is not an agent run (or records are "
                                           "off) and the Profile binds no chat (conversation.chat).")
        self._persisted()
        key = (chat_id, self._session())
        count = self._frozen.get(key)
        if count is None:
            own = chat_id == self.run.run_id and chat.input_count is not None
            count = chat.input_count if own else len(chat)
            self._frozen[key] = count  # type: ignore[assignment]
            self._record({"type": "input_frozen", "chat": chat_id, "session": key[1], "count": count})
        if len(chat) < count:  # type: ignore[operator]
            raise HostFault(INPUT_HISTORY_CONFLICT,
                            f"the chat {chat_id!r} has {len(chat)} message(s) now, fewer than the {count} this run "
                            "started with (it was replaced or cut while the run was going); start a new run.")
        return Input(chat, count)  # type: ignore[arg-type]

    def activation(self, settings: ConversationSettings) -> list[Activated]:
        if not settings.worldinfo:
            raise ToolCallError(WI_UNAVAILABLE, "no world info is active in this run: the Profile names no world-info "
                                                "book (conversation.worldinfo).")
        self._persisted()
        chat_id = self.chat_id(settings)
        budget = budget_tokens(settings.worldinfo_budget)
        key = (self._session(), chat_id, tuple(settings.worldinfo), settings.scan_depth, settings.worldinfo_recursion,
               budget, settings.worldinfo_min_activations, settings.worldinfo_min_activations_depth_max)
        found = self._activations.get(key)
        if found is not None:
            return found
        try:
            books = [load_book(spec, self.run.home) for spec in settings.worldinfo]
        except TooldeckError as exc:
            raise ToolCallError(WI_UNAVAILABLE, f"the world info of this run cannot be activated: {exc.message}") \
                from None
        try:
            given: Input | None = self.input(settings)
        except ToolCallError:  # no chat: only constant entries activate, and no timed effect is kept
            given = None
        messages = given.chat.messages[:given.count] if given is not None else ()
        entries = [e for book in books for e in book.entries]
        # Read, activate and keep the chat's timed effects as one step between processes: two runs of one chat
        # activating at once would otherwise both start from the same effects, and the later one's would
        # replace the other's (a sticky entry of the first run lost).
        with self._timed_lock(chat_id if given is not None else None):
            stored = self._timed_state(chat_id) if given is not None else None
            timed = timed_effects.current(stored or timed_effects.TimedState(), entries, len(messages))
            found = activate(books, messages, settings.scan_depth, recursion=settings.worldinfo_recursion,
                             budget=budget, seed=self.run.run_id,  # the same run rolls the same in any process
                             min_activations=settings.worldinfo_min_activations,
                             min_depth_max=settings.worldinfo_min_activations_depth_max, timed=timed)
            self._activations[key] = found
            self._record({"type": "worldinfo_activated", "session": key[0], "chat": chat_id, "books": list(key[2]),
                          "scan_depth": key[3], "recursion": key[4], "budget": key[5], "min_activations": key[6],
                          "min_depth_max": key[7], "entries": [a.to_dict() for a in found]})
            if stored is not None:
                by_ref = {e.ref: e for e in entries}
                self._keep_timed(chat_id, stored, timed_effects.after(timed, (by_ref[a.ref] for a in found
                                                                             if a.skipped is None)), timed.count)
        return found

    def _timed_lock(self, chat_id: str | None) -> AbstractContextManager[None]:
        """The lock of a chat's timed effects between processes (`<home>/locks/worldinfo_timed-<hash>.lock`);
        none without a chat, records or a home, where no effect is kept or shared."""
        if chat_id is None or self.run.records is None or self.run.home is None:
            return nullcontext()
        digest = hashlib.sha256(chat_id.encode("utf-8")).hexdigest()[:32]
        return exclusive(self.run.home / "locks" / f"worldinfo_timed-{digest}.lock")

    def _keep_timed(self, chat_id: str, stored: timed_effects.TimedState, state: timed_effects.TimedState,
                    count: int) -> None:
        """Record the chat's timed effects after an activation with `count` messages, if they changed."""
        if self.run.records is not None and state != stored:  # a book without timed effects writes nothing
            self.run.records.append_run_event(TIMED_OWNER + chat_id, TIMED_STREAM, {
                "count": count, "run": self.run.run_id, "state": state.to_dict()})

    def _timed_state(self, chat_id: str) -> timed_effects.TimedState:
        """The chat's timed effects after its last activation (read anew: another run may have moved them)."""
        records = self.run.records
        events = records.run_events(TIMED_OWNER + chat_id, TIMED_STREAM) if records is not None else []
        return timed_effects.TimedState.from_dict(events[-1].get("state") if events else None)
