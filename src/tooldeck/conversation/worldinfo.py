"""World info (lore): SillyTavern world-info books, and which of their entries the recent messages
activate. The public face of three modules with one job each:

- `worldinfo_parse`: a book's JSON → `Book` / `Entry` (`parse_book`, `load_book`; bad values are
  `worldinfo.book_invalid`);
- `worldinfo_activate`: the activation (`activate`): keys and secondary-key logic, constant entries,
  scan depth, recursive scanning, min activations, inclusion groups, probability, the token budget;
- `worldinfo_settings`: the Profile's budget shapes (`conversation.worldinfo_budget`);

and two helpers: `worldinfo_scan` (the scanned text, kept per message so that no key matches across
two) and `worldinfo_timed` (the timed effects `sticky`, `cooldown`, `delay`, state of a chat).

docs/conversation.md#world-info-worldinfo_read_activated describes the whole behaviour.
"""

from __future__ import annotations

from tooldeck.conversation.worldinfo_activate import Activated, activate, estimate_tokens, match, unit
from tooldeck.conversation.worldinfo_parse import (
    AND_ALL,
    AND_ANY,
    DEFAULT_ORDER,
    DEFAULT_WEIGHT,
    LOGIC_NAMES,
    NOT_ALL,
    NOT_ANY,
    Book,
    Entry,
    Key,
    compile_key,
    load_book,
    parse_book,
    parse_entry,
    split_keys,
)
from tooldeck.conversation.worldinfo_settings import DEFAULT_RECURSION, BudgetShare, budget_tokens
from tooldeck.conversation.worldinfo_timed import Effect, Timed, TimedState

__all__ = [
    "AND_ALL",
    "AND_ANY",
    "DEFAULT_ORDER",
    "DEFAULT_RECURSION",
    "DEFAULT_WEIGHT",
    "LOGIC_NAMES",
    "NOT_ALL",
    "NOT_ANY",
    "Activated",
    "Book",
    "BudgetShare",
    "Effect",
    "Entry",
    "Key",
    "Timed",
    "TimedState",
    "activate",
    "budget_tokens",
    "compile_key",
    "estimate_tokens",
    "load_book",
    "match",
    "parse_book",
    "parse_entry",
    "split_keys",
    "unit",
]
