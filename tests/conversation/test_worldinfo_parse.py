"""The SillyTavern world-info import: every field the activation uses is mapped from a real export
entry, unknown fields are ignored, bad values are `worldinfo.book_invalid` naming the field; and a
hypothesis test: any JSON either parses or is `worldinfo.book_invalid`, and the activation of what
parses never raises, is the same for the same seed, and stays within its budget."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo import activate, estimate_tokens, parse_book
from tooldeck.core.errors import TooldeckError

# An entry as SillyTavern 1.12+ exports it (the editor's template, filled in).
ST_ENTRY: dict[str, Any] = {
    "uid": 7, "key": ["dragon", "/wyrms?/i"], "keysecondary": ["gold"], "comment": "Dragons",
    "content": "Dragons hoard gold.", "constant": False, "vectorized": False, "selective": True, "selectiveLogic": 3,
    "addMemo": True, "order": 250, "position": 4, "disable": False, "ignoreBudget": True, "excludeRecursion": True,
    "preventRecursion": True, "matchPersonaDescription": False, "matchCharacterDescription": False,
    "delayUntilRecursion": 2, "probability": 35, "useProbability": True, "depth": 4, "outletName": "",
    "group": "beasts, lore ,", "groupOverride": True, "groupWeight": 60, "scanDepth": 5, "caseSensitive": True,
    "matchWholeWords": True, "useGroupScoring": None, "automationId": "", "role": 0, "sticky": 2, "cooldown": None,
    "delay": None, "triggers": [], "displayIndex": 3, "characterFilter": {"isExclude": False, "names": [], "tags": []},
    "extensions": {"anything": 1}, "a_field_from_the_future": [1, 2],
}


def test_every_field_the_activation_uses_is_mapped_and_the_rest_ignored() -> None:
    [entry] = parse_book("beasts", {"name": "Beasts", "extensions": {}, "entries": {"7": ST_ENTRY}}).entries
    assert (entry.ref, entry.comment, entry.content, entry.order, entry.scan_depth) == (
        "worldinfo:beasts#7", "Dragons", "Dragons hoard gold.", 250, 5)
    assert [k.text for k in entry.keys] == ["dragon", "/wyrms?/i"] and [k.text for k in entry.secondary] == ["gold"]
    assert (entry.constant, entry.selective, entry.logic, entry.disabled) == (False, True, 3, False)
    assert (entry.probability, entry.groups, entry.group_override, entry.group_weight) == (
        35.0, ("beasts", "lore"), True, 60.0)
    assert (entry.exclude_recursion, entry.prevent_recursion, entry.delay_level, entry.ignore_budget) == (
        True, True, 2, True)
    assert entry.keys[0].case_sensitive is False and entry.keys[0].regex is not None  # whole word: a pattern


def test_defaults_and_use_probability_off() -> None:
    [bare] = parse_book("b", {"entries": [{"key": "a, b"}]}).entries
    assert (bare.probability, bare.groups, bare.group_weight, bare.delay_level, bare.selective, bare.order) == (
        100.0, (), 100.0, 0, True, 100)
    [off] = parse_book("b", {"entries": [{"probability": 0, "useProbability": False, "delayUntilRecursion": True}]}) \
        .entries
    assert (off.probability, off.delay_level) == (100.0, 1)


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("probability", 150, "probability must be a number from 0 to 100"),
    ("probability", "50", "probability must be a number from 0 to 100"),
    ("groupWeight", -1, "groupWeight must be a number from 0"),
    ("group", ["a"], "group must be a string of comma-separated group names"),
    ("delayUntilRecursion", "yes", "delayUntilRecursion must be an integer"),
    ("delayUntilRecursion", -2, "delayUntilRecursion must be true, false or a level from 0 to 1000"),
    ("excludeRecursion", "true", "excludeRecursion must be true, false or null"),
    ("useProbability", 1, "useProbability must be true, false or null"),
    ("constant", "yes", "constant must be true, false or null"),
    ("uid", [1], "uid must be a number or a string"),
    ("comment", 3, "comment must be a string"),
    ("content", 5, "content must be a string"),
    ("order", float("inf"), "order must be an integer"),
    ("key", ["\ud800"], "not valid Unicode text"),
])
def test_bad_values_name_the_entry_and_the_field(field: str, value: Any, problem: str) -> None:
    with pytest.raises(TooldeckError) as caught:
        parse_book("lore", {"entries": {"3": {"key": ["x"], field: value}}})
    assert caught.value.code == "worldinfo.book_invalid"
    assert "world info 'lore' entry 3" in caught.value.message and problem in caught.value.message


def test_a_lone_surrogate_in_the_chat_does_not_break_regex_keys() -> None:
    book = parse_book("lore", {"entries": {"1": {"key": ["/wolf/"]}, "2": {"key": ["cat"], "matchWholeWords": True}}})
    assert [a.uid for a in activate([book], [Message(0, "user", "a wolf \ud800 and a cat")], 1)] == ["1", "2"]


# -- hypothesis ----------------------------------------------------------------------------------------

WORDS = st.sampled_from(["dragon", "gold", "cat", "Cat", "x", "", " ", "/g.ld/i", "/(/", "a,b", "dragon gold"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.floats(allow_nan=True), st.text(max_size=5))
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                    max_leaves=12)
ENTRY = st.fixed_dictionaries({}, optional={
    "uid": st.one_of(st.integers(0, 6), st.text(max_size=2), JSON),
    "key": st.one_of(st.lists(WORDS, max_size=3), WORDS, JSON),
    "keysecondary": st.one_of(st.lists(WORDS, max_size=3), WORDS),
    "content": st.one_of(st.lists(WORDS, max_size=4).map(" ".join), SCALARS),
    "constant": st.one_of(st.booleans(), SCALARS), "selective": st.booleans(),
    "selectiveLogic": st.one_of(st.integers(-1, 4), SCALARS), "order": st.one_of(st.integers(-5, 300), SCALARS),
    "disable": st.booleans(), "scanDepth": st.one_of(st.none(), st.integers(-1, 4)),
    "probability": st.one_of(st.integers(-1, 101), st.floats(allow_nan=True)), "useProbability": st.booleans(),
    "group": st.one_of(st.sampled_from(["g", "g, h", "h", ""]), SCALARS), "groupOverride": st.booleans(),
    "groupWeight": st.one_of(st.integers(-1, 200), SCALARS),
    "excludeRecursion": st.booleans(), "preventRecursion": st.booleans(), "ignoreBudget": st.booleans(),
    "delayUntilRecursion": st.one_of(st.booleans(), st.integers(-1, 3), SCALARS),
    "caseSensitive": st.one_of(st.none(), st.booleans()), "matchWholeWords": st.one_of(st.none(), st.booleans()),
    "sticky": st.one_of(st.integers(-1, 3), SCALARS), "cooldown": st.one_of(st.integers(-1, 3), SCALARS),
    "delay": st.one_of(st.integers(-1, 3), SCALARS),
})
GOOD_WORDS = st.sampled_from(["dragon", "gold", "cat", "Cat", "x", "/g.ld/i", "dragon gold"])
GOOD_ENTRY = st.fixed_dictionaries({"key": st.lists(GOOD_WORDS, min_size=1, max_size=2)}, optional={
    "keysecondary": st.lists(GOOD_WORDS, max_size=2), "content": st.lists(GOOD_WORDS, max_size=4).map(" ".join),
    "constant": st.booleans(), "selectiveLogic": st.integers(0, 3), "order": st.integers(0, 5),
    "probability": st.integers(0, 100), "group": st.sampled_from(["g", "g, h", "h", ""]),
    "groupOverride": st.booleans(), "groupWeight": st.integers(0, 3), "excludeRecursion": st.booleans(),
    "preventRecursion": st.booleans(), "ignoreBudget": st.booleans(), "delayUntilRecursion": st.integers(0, 2),
    "scanDepth": st.integers(0, 3), "matchWholeWords": st.booleans(),
})
BOOKS = st.one_of(
    JSON,
    st.fixed_dictionaries({"entries": st.one_of(st.dictionaries(st.text(max_size=2), ENTRY, max_size=6),
                                                st.lists(ENTRY, max_size=6))}),
    st.fixed_dictionaries({"entries": st.lists(GOOD_ENTRY, max_size=8)}),
)


@settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(book=BOOKS, chat=st.lists(st.lists(WORDS, max_size=4).map(" ".join), max_size=4),
       depth=st.integers(0, 3), recursion=st.integers(0, 4), budget=st.one_of(st.none(), st.integers(1, 12)),
       seed=st.text(max_size=4))
def test_any_json_parses_or_is_book_invalid_and_activation_is_deterministic(
        book: Any, chat: list[str], depth: int, recursion: int, budget: int | None, seed: str) -> None:
    data = json.loads(json.dumps(book))  # what a JSON file can hold
    try:
        parsed = parse_book("lore", data)
    except TooldeckError as exc:
        assert exc.code == "worldinfo.book_invalid" and exc.message
        return
    messages = [Message(i, "user", text) for i, text in enumerate(chat)]
    first = activate([parsed], messages, depth, recursion=recursion, budget=budget, seed=seed)
    assert activate([parsed], messages, depth, recursion=recursion, budget=budget, seed=seed) == first
    refs = [a.ref for a in first]
    assert len(refs) == len(set(refs))
    by_ref = {e.ref: e for e in parsed.entries}
    active = [by_ref[a.ref] for a in first if a.skipped is None]
    assert not any(e.disabled for e in active)
    if budget is not None:
        assert sum(estimate_tokens(e.content) for e in active if not e.ignore_budget) < budget
    groups = [g for e in active for g in e.groups]
    assert len(groups) == len(set(groups))  # at most one active entry per inclusion group
    assert all(e.probability > 0 for e in active)
    PARSED.append(len(active))


PARSED: list[int] = []


def test_the_hypothesis_test_reached_the_activation() -> None:
    """Guards the strategy: many generated books parse, and many of those activate entries."""
    PARSED.clear()
    test_any_json_parses_or_is_book_invalid_and_activation_is_deterministic()
    assert len(PARSED) > 120 and sum(1 for n in PARSED if n > 1) >= 15, (len(PARSED), sorted(PARSED)[-10:])
