"""`ConversationSource`: where the conversation tools read chats from. The default (`sources.py`)
serves the agent loop's own runs from the records store and the chat logs imported into the home; a
host can put its own source in a run's state (`run_state.state[SOURCE_KEY] = source`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from tooldeck.conversation.model import Chat

SOURCE_KEY: Final = "conversation.source"


@dataclass(frozen=True, slots=True)
class ChatInfo:
    chat_id: str
    title: str | None
    messages: int
    started_at: float | None
    kind: str
    """`run` (an agent run's own conversation) or `imported` (a host's chat log)."""


class ConversationSource(Protocol):
    def load(self, chat_id: str) -> Chat | None:
        """The chat as it is now (None when there is no such chat). A source may return the same Chat
        object while its copy is unchanged (its search index is then reused)."""
        ...

    def chats(self, since: float | None, limit: int) -> list[ChatInfo]:
        """The chats started at or after `since` (all with None), newest first, at most `limit`."""
        ...
