"""The data of a conversation: `Message` (one floor of a chat) and `Chat` (a chat's messages in order,
with the lowered text index that `search.py` scans), and the conversation tools' error codes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final, Literal

Role = Literal["user", "assistant", "system", "tool"]
ROLES: Final = ("user", "assistant", "system", "tool")

# Recoverable results (docs/conversation.md#error-codes).
NOT_FOUND: Final = "chat.not_found"
MESSAGE_NOT_FOUND: Final = "chat.message_not_found"
INVALID_RANGE: Final = "chat.invalid_message_range"
READ_TOO_LARGE: Final = "chat.read_too_large"
INVALID_QUERY: Final = "chat.invalid_query"
UNKNOWN_MODE: Final = "chat.unknown_mode"
FIELD_REQUIRED: Final = "chat.field_required"
INVALID_TIME_RANGE: Final = "chat.invalid_time_range"
WI_NOT_FOUND: Final = "worldinfo.entry_not_found"
WI_INVALID_RANGE: Final = "worldinfo.invalid_entry_range"
WI_TOO_LARGE: Final = "worldinfo.read_too_large"
WI_UNAVAILABLE: Final = "worldinfo.activation_unavailable"
# Fatal (a HostFault: the run fails).
INPUT_HISTORY_CONFLICT: Final = "agent.input_history_conflict"
# Exceptions of the importer and the chat store (TooldeckError).
IMPORT_INVALID: Final = "chat.import_invalid"
INVALID_ID: Final = "chat.invalid_id"
EXISTS: Final = "chat.exists"
STORE_FAILED: Final = "chat.store_failed"
WI_BOOK_INVALID: Final = "worldinfo.book_invalid"



@dataclass(frozen=True, slots=True)
class Message:
    index: int
    role: Role
    text: str
    name: str | None = None
    sent: str | None = None
    """When it was sent, as the source gave it (an ISO time for the agent's own messages)."""


@dataclass(slots=True)
class Chat:
    """A chat's messages, index = position. `revision` changes whenever the source's copy changes."""

    chat_id: str
    messages: tuple[Message, ...]
    title: str | None = None
    revision: object = None
    input_count: int | None = None
    """For an agent run's own chat: the messages its latest session started with (the task included)."""
    _lowered: list[str] | None = field(default=None, repr=False)
    _postings: dict[str, list[int]] | None = field(default=None, repr=False)
    _vocabulary: tuple[str, list[int], list[str]] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.messages)

    def lowered(self, i: int) -> str:
        return self.lowered_texts()[i]

    def lowered_texts(self) -> list[str]:
        if self._lowered is None:
            self._lowered = [m.text.lower() for m in self.messages]
        return self._lowered

    def postings(self) -> dict[str, list[int]]:
        """Each whitespace-separated lowered token → the index of the message of each of its occurrences,
        ascending (a message holding the token twice is listed twice). Built once per Chat; a term
        without whitespace can only occur inside one token."""
        if self._postings is None:
            index: defaultdict[str, list[int]] = defaultdict(list)
            for i, text in enumerate(self.lowered_texts()):
                for token in text.split():
                    index[token].append(i)
            self._postings = dict(index)
        return self._postings

    def vocabulary(self) -> tuple[str, list[int], list[str]]:
        """The index's tokens joined by newlines (no token holds whitespace, so no term found in it spans
        two), where each starts, and the tokens in that order."""
        if self._vocabulary is None:
            tokens = list(self.postings())
            starts, pos = [], 0
            for token in tokens:
                starts.append(pos)
                pos += len(token) + 1
            self._vocabulary = ("\n".join(tokens), starts, tokens)
        return self._vocabulary
