"""The Profile's `conversation` table (docs/conversation.md#profile-keys)."""

from __future__ import annotations

from typing import Any

from tooldeck.conversation.worldinfo_settings import DEFAULT_RECURSION, BudgetShare, parse_budget
from tooldeck.core.typed_config import Config, Field, config_class, field_validator


@config_class
class ConversationSettings(Config):

    chat: str | None = None
    """The chat bound to the run: an imported chat's id (`tooldeck chat import`) or an agent run's id.
    None: the run's own conversation (the agent loop's messages of this run)."""
    worldinfo: list[str] = Field(default_factory=list)
    """World-info books: names of `<home>/worldinfo/<name>.json`, or paths."""
    scan_depth: int = Field(default=2, ge=0, le=1000)
    """How many of the newest input messages the world-info keys are looked for in (an entry's own
    `scanDepth` wins)."""
    worldinfo_recursion: int = Field(default=DEFAULT_RECURSION, ge=0, le=100)
    """Recursive world-info scanning: how many passes over the activated entries' content follow the first
    scan (0: none)."""
    worldinfo_min_activations: int = Field(default=0, ge=0, le=1000)
    """World-info min activations: while fewer entries are active, scan one message deeper (0: off)."""
    worldinfo_min_activations_depth_max: int = Field(default=0, ge=0, le=1000)
    """The deepest scan min activations reaches, in messages (0: the whole input)."""
    worldinfo_budget: Any = None
    """The world-info token budget: tokens (chars/4 estimate), or `{percent, context_size}`; None: none."""
    search_scan_limit: int = Field(default=10_000, ge=1, le=100_000)
    """`chat_search`'s `scan_limit` when the call gives none."""

    @field_validator("worldinfo_budget")
    @classmethod
    def _budget(cls, value: Any) -> int | BudgetShare | None:
        return parse_budget(value)
