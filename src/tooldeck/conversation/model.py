"""The data of a conversation: `Message` (one floor of a chat) and `Chat` (a chat's messages in order,
with the lowered texts and the token index that `search.py` uses), and the conversation tools' error
codes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from tooldeck.conversation import bitset
from tooldeck.conversation.index import TokenIndex

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
    stored_index: Callable[[], TokenIndex | None] | None = field(default=None, repr=False, compare=False)
    """Where the chat's token index was kept (chat_store.py), if anywhere: called once, on the first search;
    None (or an index of another length) → it is built from the texts."""
    _lowered: list[str] | None = field(default=None, repr=False)
    _index: TokenIndex | None = field(default=None, repr=False)
    _roles: dict[str, int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.messages)

    def lowered(self, i: int) -> str:
        return self._lowered[i] if self._lowered is not None else self.messages[i].text.lower()

    def lowered_texts(self) -> list[str]:
        if self._lowered is None:
            self._lowered = [m.text.lower() for m in self.messages]
        return self._lowered

    def lowered_of(self, ids: Sequence[int]) -> list[str]:
        """The lowered texts of messages `ids`: every text a search reads comes through here."""
        if self._lowered is None and len(ids) * 8 < len(self.messages):
            return [self.messages[i].text.lower() for i in ids]
        return list(map(self.lowered_texts().__getitem__, ids))

    def index(self) -> TokenIndex:
        """The token index (index.py): loaded from where it was kept, else built once per Chat."""
        if self._index is None:
            found = self.stored_index() if self.stored_index is not None else None
            self._index = found if found is not None and found.n == len(self.messages) \
                else TokenIndex.build(self.lowered_texts())
        return self._index

    def role_set(self, role: str) -> int:
        """The messages of `role` as a `bitset`."""
        found = self._roles.get(role)
        if found is None:
            found = self._roles[role] = bitset.from_ids([i for i, m in enumerate(self.messages) if m.role == role],
                                                        len(self.messages))
        return found
