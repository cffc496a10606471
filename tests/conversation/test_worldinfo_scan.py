"""What a world-info key scans: never across two messages (or two entry contents of the recursion
buffer), a `/regex/` with commas kept whole in a comma-separated key string, and the recursion fast
path (only the text added since the previous pass) giving the same activation as a full rescan."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo import activate, parse_book
from tooldeck.conversation.worldinfo_parse import split_keys


def msgs(*texts: str) -> list[Message]:
    return [Message(i, "user", t) for i, t in enumerate(texts)]


def active(entries: dict[str, Any], *texts: str, **options: Any) -> list[str]:
    result = activate([parse_book("lore", {"entries": entries})], msgs(*texts), options.pop("depth", 5), **options)
    return [a.uid for a in result if a.skipped is None]


# -- 1. keys never match across two messages ----------------------------------------------------------

def test_a_regex_key_does_not_match_across_two_messages() -> None:
    entries = {"1": {"key": [r"/red\s+dragon/i"], "content": "x"}, "2": {"key": ["/red[^x]dragon/"], "content": "y"}}
    assert active(entries, "I saw the red", "dragon sleeps") == []  # the old `\n` join matched both
    assert active(entries, "I saw the red\ndragon sleep") == ["1", "2"]  # within one message it does


def test_a_key_with_a_newline_does_not_match_across_two_messages() -> None:
    entries = {"1": {"key": ["red\ndragon"], "content": "x"}, "2": {"key": ["red\n"], "content": "y"}}
    assert active(entries, "the red", "dragon") == []
    assert active(entries, "the red\ndragon") == ["1", "2"]


def test_a_key_does_not_match_across_two_entry_contents_in_recursion() -> None:
    entries = {"a": {"key": ["alpha"], "content": "ends with red", "order": 2},  # higher order: first in the buffer
               "b": {"key": ["beta"], "content": "dragon starts this", "order": 1},
               "c": {"key": [r"/red\s+dragon/"], "content": "found"}}
    assert active(entries, "alpha beta") == ["b", "a"]
    assert active({**entries, "b": {**entries["b"], "content": "red dragon"}}, "alpha beta") == ["b", "a", "c"]


def test_secondary_keys_may_still_be_in_another_message() -> None:
    entries = {"1": {"key": ["dragon"], "keysecondary": ["gold"], "selectiveLogic": 0, "content": "x"}}
    assert active(entries, "a dragon", "some gold") == ["1"]


# -- 2. a comma inside a /regex/ key -------------------------------------------------------------------

def test_a_regex_with_a_comma_in_a_key_string_is_kept_whole() -> None:
    entries = {"1": {"key": "/dragons{1,2}/i, wyrm", "content": "x"}}
    book = parse_book("lore", {"entries": entries})
    assert [k.text for k in book.entries[0].keys] == ["/dragons{1,2}/i", "wyrm"]
    assert active(entries, "DRAGONSS") == ["1"]  # the old split made `/dragons{1` and `2}/i` substrings
    assert active(entries, "a wyrm") == ["1"]


def test_split_keys_examples() -> None:
    assert split_keys(" a, b,,c ,") == ["a", "b", "c"]
    assert split_keys("/x/, /y,z/gi ,w") == ["/x/", "/y,z/gi", "w"]
    assert split_keys(r"/a\/,b/") == [r"/a\/,b/"]  # an escaped slash does not close it
    assert split_keys("/a, b") == ["/a", "b"]  # never closed: plain keys
    assert split_keys("//,a") == ["//", "a"]


PLAIN = st.text(st.characters(blacklist_characters=",", blacklist_categories=("Cs",)), min_size=1, max_size=8) \
    .map(str.strip).filter(lambda k: bool(k) and not k.startswith("/"))
REGEX = st.builds(lambda body, flags: f"/{body}/{flags}",
                  st.text(st.characters(blacklist_characters="/\\", blacklist_categories=("Cs",)), min_size=1,
                          max_size=8),
                  st.sampled_from(["", "i", "gi", "s"])).filter(lambda k: k == k.strip())


@settings(derandomize=True, max_examples=300, deadline=None)
@given(keys=st.lists(st.one_of(PLAIN, REGEX), max_size=5), spaces=st.sampled_from([",", ", ", " , "]))
def test_split_keys_gives_back_the_keys_it_was_given(keys: list[str], spaces: str) -> None:
    assert split_keys(spaces.join(keys)) == keys


@settings(derandomize=True, max_examples=300, deadline=None)
@given(value=st.text(st.sampled_from("ab/,\\ i"), max_size=14))
def test_split_keys_of_any_text(value: str) -> None:
    keys = split_keys(value)
    assert all(k and k == k.strip() for k in keys)
    assert "".join(keys).replace(" ", "") == value.replace(",", "").replace(" ", "") or \
        sum(k.count(",") for k in keys) > 0  # only a regex key keeps commas; nothing else is lost
    if "/" not in value:
        assert keys == [k.strip() for k in value.split(",") if k.strip()]


# -- 3. the recursion fast path ------------------------------------------------------------------------

WORDS = st.sampled_from(["dragon", "gold", "cat", "Cat", "wolf", "x", "/g.ld/i", r"/cat\s+wolf/", "dragon gold"])
ENTRY = st.fixed_dictionaries({"key": st.lists(WORDS, min_size=1, max_size=2)}, optional={
    "keysecondary": st.lists(WORDS, max_size=2), "content": st.lists(WORDS, max_size=4).map(" ".join),
    "constant": st.booleans(), "selectiveLogic": st.integers(0, 3), "order": st.integers(0, 5),
    "probability": st.integers(0, 100), "group": st.sampled_from(["g", "g, h", "h", ""]),
    "groupOverride": st.booleans(), "groupWeight": st.integers(0, 3), "excludeRecursion": st.booleans(),
    "preventRecursion": st.booleans(), "ignoreBudget": st.booleans(), "delayUntilRecursion": st.integers(0, 2),
    "scanDepth": st.integers(0, 3), "matchWholeWords": st.booleans(), "caseSensitive": st.booleans(),
})
FAST_PATH: list[int] = []
DEEPER: list[int] = []


@settings(derandomize=True, max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(ENTRY, max_size=10), chat=st.lists(st.lists(WORDS, max_size=4).map(" ".join), max_size=4),
       depth=st.integers(0, 3), recursion=st.integers(0, 5), budget=st.one_of(st.none(), st.integers(1, 30)),
       least=st.sampled_from([0, 0, 2, 5]), deepest=st.integers(0, 4))
def test_the_recursion_fast_path_activates_as_a_full_rescan(entries: list[dict[str, Any]], chat: list[str],
                                                            depth: int, recursion: int, budget: int | None,
                                                            least: int, deepest: int) -> None:
    book = parse_book("lore", {"entries": entries})
    messages = msgs(*chat)
    options: dict[str, Any] = {"recursion": recursion, "budget": budget, "seed": "s", "min_activations": least,
                               "min_depth_max": deepest}
    fast = activate([book], messages, depth, **options)
    assert fast == activate([book], messages, depth, **options, incremental=False)
    FAST_PATH.append(sum(1 for a in fast if ", recursion" in a.reason))
    DEEPER.append(sum(1 for a in fast if ", min activations" in a.reason))


def test_the_fast_path_test_reached_recursion() -> None:
    FAST_PATH.clear()
    DEEPER.clear()
    test_the_recursion_fast_path_activates_as_a_full_rescan()
    assert sum(1 for n in FAST_PATH if n >= 2) >= 20, sorted(FAST_PATH)[-10:]
    assert sum(1 for n in DEEPER if n >= 1) >= 10, sorted(DEEPER)[-10:]  # min-activations passes too
