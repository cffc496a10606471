"""The data of a conversation: `Message` (one floor of a chat) and `Chat` (a chat's messages in order,
with the lowered text index that `search.py` scans), and the conversation tools' error codes."""

from __future__ import annotations

from bisect import bisect_right
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

SEPARATOR: Final = "\x00"
"""Between two messages' texts in the search blob: no query term contains it, so no match spans two."""


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
    _blob: str | None = field(default=None, repr=False)
    _starts: list[int] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.messages)

    def index(self) -> tuple[str, list[int]]:
        """Every message's lowered text joined by SEPARATOR, and where each starts (built once per Chat)."""
        if self._blob is None:
            lowered = [m.text.replace(SEPARATOR, " ").lower() for m in self.messages]
            starts, pos = [], 0
            for text in lowered:
                starts.append(pos)
                pos += len(text) + 1
            self._starts = starts
            self._blob = SEPARATOR.join(lowered)
        return self._blob, self._starts

    def lowered(self, i: int) -> str:
        blob, starts = self.index()
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(blob)
        return blob[starts[i]:end]

    def message_at(self, offset: int) -> int:
        """The index of the message whose text holds blob offset `offset`."""
        return bisect_right(self.index()[1], offset) - 1
