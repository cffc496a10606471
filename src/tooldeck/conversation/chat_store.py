"""Imported chat logs, kept in the home's records database (`<home>/records.sqlite`) in tables of their
own beside the records schema (records/side_tables.py), so every process of a home sees them.
Re-importing a chat id (`replace=True`) bumps its revision: runs that froze its length notice a
shorter chat (`agent.input_history_conflict`).

Each chat's token index (index.py) is built when it is saved and kept beside it (`chat_index`, by
revision), so a process's first search loads it instead of a pass over every message. An index that
is missing (a chat saved before the table existed) or does not decode (logged as a warning) is rebuilt
from the texts by `Chat.index`: it is derived data, the messages stay the truth."""

from __future__ import annotations

import logging
import re
import time
from itertools import starmap
from pathlib import Path
from typing import Final

from tooldeck.conversation.index import IndexDecodeError, TokenIndex
from tooldeck.conversation.model import EXISTS, INVALID_ID, STORE_FAILED, Chat, Message
from tooldeck.conversation.port import ChatInfo
from tooldeck.core.errors import TooldeckError
from tooldeck.records.side_tables import side_table

logger = logging.getLogger("tooldeck.conversation")

CHAT_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_logs (
    chat_id     TEXT PRIMARY KEY,
    title       TEXT,
    source      TEXT,
    imported_at REAL NOT NULL,
    revision    INTEGER NOT NULL,
    n           INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_messages (
    chat_id TEXT NOT NULL,
    idx     INTEGER NOT NULL,
    role    TEXT NOT NULL,
    name    TEXT,
    text    TEXT NOT NULL,
    sent    TEXT,
    PRIMARY KEY (chat_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chat_index (
    chat_id  TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    data     BLOB NOT NULL
);
"""


def check_id(chat_id: str) -> str:
    if not isinstance(chat_id, str) or not CHAT_ID.fullmatch(chat_id):
        raise TooldeckError(INVALID_ID, f"chat id {chat_id!r} must be 1-64 letters, digits, `.`, `_` or `-`, "
                                        "starting with a letter or digit")
    return chat_id


def id_from_name(name: str) -> str:
    """A chat id from a file name: the unusable characters become `-`."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")[:64]
    return cleaned or "chat"


class ChatStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, chat_id: str, title: str | None, messages: tuple[Message, ...], source: str | None = None,
             *, replace: bool = False) -> ChatInfo:
        check_id(chat_id)
        index = TokenIndex.build([m.text.lower() for m in messages]).encode()  # before the write lock is taken
        now = time.time()
        with side_table(self.path, _SCHEMA, STORE_FAILED) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT revision FROM chat_logs WHERE chat_id = ?", (chat_id,)).fetchone()
                if row is not None and not replace:
                    raise TooldeckError(EXISTS, f"a chat {chat_id!r} was imported already; pass replace (`--replace`) "
                                                "to overwrite it or choose another id (`--id`)")
                revision = (row[0] + 1) if row else 1
                conn.execute("DELETE FROM chat_messages WHERE chat_id = ?", (chat_id,))
                conn.executemany("INSERT INTO chat_messages VALUES (?, ?, ?, ?, ?, ?)",
                                 ((chat_id, m.index, m.role, m.name, m.text, m.sent) for m in messages))
                conn.execute("INSERT OR REPLACE INTO chat_logs VALUES (?, ?, ?, ?, ?, ?)",
                             (chat_id, title, source, now, revision, len(messages)))
                conn.execute("INSERT OR REPLACE INTO chat_index VALUES (?, ?, ?)", (chat_id, revision, index))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return ChatInfo(chat_id, title, len(messages), now, "imported")

    def revision(self, chat_id: str) -> tuple[int, int] | None:
        """(revision, message count) of an imported chat, or None."""
        with side_table(self.path, _SCHEMA, STORE_FAILED) as conn:
            row = conn.execute("SELECT revision, n FROM chat_logs WHERE chat_id = ?", (chat_id,)).fetchone()
        return None if row is None else (row[0], row[1])

    def load(self, chat_id: str) -> Chat | None:
        with side_table(self.path, _SCHEMA, STORE_FAILED) as conn:
            head = conn.execute("SELECT title, revision FROM chat_logs WHERE chat_id = ?", (chat_id,)).fetchone()
            if head is None:
                return None
            rows = conn.execute("SELECT idx, role, text, name, sent FROM chat_messages WHERE chat_id = ? "
                                "ORDER BY idx", (chat_id,)).fetchall()
        return Chat(chat_id, tuple(starmap(Message, rows)), head[0], ("imported", head[1], len(rows)),
                    stored_index=lambda: self.load_index(chat_id, head[1], len(rows)))

    def load_index(self, chat_id: str, revision: int, n: int) -> TokenIndex | None:
        """The kept token index of that revision of the chat, or None (none kept, or one that does not decode)."""
        with side_table(self.path, _SCHEMA, STORE_FAILED) as conn:
            row = conn.execute("SELECT data FROM chat_index WHERE chat_id = ? AND revision = ?",
                               (chat_id, revision)).fetchone()
        if row is None:
            return None
        try:
            return TokenIndex.decode(row[0], n)
        except IndexDecodeError as exc:
            logger.warning("the kept token index of chat %r (revision %d) is unusable (%s); rebuilding it from the "
                           "messages for this process", chat_id, revision, exc)
            return None

    def chats(self, since: float | None, limit: int) -> list[ChatInfo]:
        with side_table(self.path, _SCHEMA, STORE_FAILED) as conn:
            rows = conn.execute("SELECT chat_id, title, n, imported_at FROM chat_logs WHERE imported_at >= ? "
                                "ORDER BY imported_at DESC LIMIT ?", (since or 0.0, limit)).fetchall()
        return [ChatInfo(r[0], r[1], r[2], r[3], "imported") for r in rows]
