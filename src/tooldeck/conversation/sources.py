"""The default `ConversationSource`: the home's imported chat logs (chat_store.py) and the agent loop's
own runs, read from the records store.

An agent run's chat (its id is the run id) is rebuilt from the run's `agent` event stream
(agent/loop.py): `run_started` → the task as a user message; `model_turn` → an assistant message
(its text, then one `→ name {arguments}` line per call); each call's result → a `tool` message named
after the call (from the invocation's records); `background_reports` → a user message. A run resumed
with the same `run_id` continues the same chat. Chats are cached while unchanged (an imported chat's
revision, a run's last agent event), so repeated searches reuse one index; a turn's tool results join
the cached chat with the run's next agent event.
"""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tooldeck.conversation.chat_store import ChatStore
from tooldeck.conversation.model import Chat, Message
from tooldeck.conversation.port import ChatInfo

if TYPE_CHECKING:
    from tooldeck.records.port import Recorder

AGENT_STREAM = "agent"
"""The run event stream of the agent loop (agent/loop.py RUN_EVENTS)."""


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def _call_line(call: Any) -> str:
    args = call.arguments if call.arguments is not None else call.raw_arguments
    shown = args if isinstance(args, str) else orjson.dumps(args).decode() if args is not None else "{}"
    return f"→ {call.call_name} {shown}"


def run_messages(records: Recorder, log: list[Any]) -> tuple[list[Message], float | None, int]:
    """The messages of an agent run's conversation (its `agent` events, `log`), when it started (None:
    not an agent run), and how many messages its latest session started with (through its task)."""
    out: list[Message] = []
    started: float | None = None
    input_count = 0

    def add(role: str, text: str, at: float, name: str | None = None) -> None:
        out.append(Message(len(out), role, text, name, _iso(at)))  # type: ignore[arg-type]

    for event in log:
        data = event.data
        kind = data.get("type")
        if kind == "run_started":
            started = event.at if started is None else started
            add("user", str(data.get("task") or ""), event.at)
            input_count = len(out)
        elif kind == "model_turn":
            calls = []
            inv_id = data.get("invocation_id")
            if data.get("calls") and inv_id:
                with contextlib.suppress(Exception):  # a turn whose invocation is not (yet) recorded
                    calls = records.history(inv_id).calls  # type: ignore[attr-defined]
            text = str(data.get("text") or "")
            lines = [_call_line(c) for c in calls]
            add("assistant", "\n".join([text, *lines]) if text and lines else text or "\n".join(lines), event.at)
            for c in calls:
                if c.result is not None:
                    add("tool", c.result.content, c.result.recorded_at, c.call_name)
        elif kind == "background_reports":
            add("user", str(data.get("text") or ""), event.at)
    return out, started, input_count


class DefaultSource:
    """Imported chats by id, else the agent run with that id."""

    def __init__(self, home: Path | None, records: Recorder | None) -> None:
        self.store = ChatStore(home / "records.sqlite") if home is not None else None
        self.records = records
        self._cache: dict[str, Chat] = {}

    def load(self, chat_id: str) -> Chat | None:
        cached = self._cache.get(chat_id)
        if self.store is not None:
            head = self.store.revision(chat_id)
            if head is not None:
                revision = ("imported", head[0], head[1])
                if cached is not None and cached.revision == revision:
                    return cached
                chat = self.store.load(chat_id)
                if chat is not None:
                    self._cache[chat_id] = chat
                return chat
        if self.records is None or not hasattr(self.records, "run_event_log"):
            return None
        log = self.records.run_event_log(chat_id, AGENT_STREAM)  # type: ignore[attr-defined]
        revision = ("run", len(log), log[-1].seq if log else 0)
        if cached is not None and cached.revision == revision:  # the turns' records are read only on a change
            return cached
        messages, started, input_count = run_messages(self.records, log)
        if started is None:
            return None
        chat = Chat(chat_id, tuple(messages), None, revision, input_count)
        self._cache[chat_id] = chat
        return chat

    def chats(self, since: float | None, limit: int) -> list[ChatInfo]:
        found: list[ChatInfo] = []
        if self.store is not None:
            found += self.store.chats(since, limit)
        path = getattr(self.records, "path", None)
        if path is not None and Path(path).exists():
            flush = getattr(self.records, "flush", None)
            if callable(flush):
                flush()
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
            try:
                rows = conn.execute(
                    "SELECT run_id, min(at), json_extract(data, '$.task'), count(*) FROM events "
                    "WHERE kind = ? AND run_id IS NOT NULL GROUP BY run_id HAVING min(at) >= ? "
                    "ORDER BY min(at) DESC LIMIT ?", (AGENT_STREAM, since or 0.0, limit)).fetchall()
            finally:
                conn.close()
            found += [ChatInfo(r[0], (r[2] or "")[:200] or None, r[3], r[1], "run") for r in rows]
        found.sort(key=lambda c: c.started_at or 0.0, reverse=True)
        return found[:limit]
