"""The world-info keys of the Profile's `conversation` table that need a shape of their own, and how the
budget is turned into tokens (docs/conversation.md#profile-keys). Imported with the Profile: no re2 here."""

from __future__ import annotations

from typing import Any, Final

from tooldeck.core.typed_config import Config, ConfigError, Field, config_class

DEFAULT_RECURSION: Final = 3
"""Recursive scanning passes after the first scan (`conversation.worldinfo_recursion`)."""
MAX_TOKENS: Final = 100_000_000


@config_class
class BudgetShare(Config):
    """A world-info token budget stated as a share of a context size: `{percent = 25, context_size = 8192}`
    is round(25 × 8192 / 100) = 2048 tokens (at least 1), SillyTavern's "Context %"."""

    percent: float = Field(gt=0, le=100)
    context_size: int = Field(ge=1, le=MAX_TOKENS)
    """The model's context window in tokens, as the host states it."""


def parse_budget(value: Any) -> int | BudgetShare | None:
    """`conversation.worldinfo_budget`: tokens (an integer ≥ 1), `{percent, context_size}`, or none;
    raises ValueError saying what is wrong (the Profile reports it as `profile.invalid`)."""
    if value is None or isinstance(value, BudgetShare):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_TOKENS:
            raise ValueError(f"should be a number of tokens from 1 to {MAX_TOKENS}, got {value!r}")
        return value
    if isinstance(value, dict):
        try:
            return BudgetShare.from_mapping(value)
        except ConfigError as exc:
            raise ValueError(f"{{percent, context_size}}: {exc.summary()}") from None
    raise ValueError(f"should be a number of tokens or a table {{percent = 1-100, context_size = tokens}}, "
                     f"got {value!r}")


def budget_tokens(budget: int | BudgetShare | None) -> int | None:
    """The budget in (estimated) tokens; None: no budget."""
    if budget is None or isinstance(budget, int):
        return budget
    return max(1, round(budget.percent * budget.context_size / 100))
