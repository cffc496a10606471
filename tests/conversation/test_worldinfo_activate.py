"""World-info activation beyond keys: recursive scanning (chains, cycles, excludeRecursion,
preventRecursion, delayUntilRecursion and its levels), the token budget (priority order, overflow,
ignoreBudget, direct mentions before recursion, the percent form), seeded probability (reproducible
in another process) and inclusion groups (weights, groupOverride, a group already active)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from typing import Any

from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo import Activated, BudgetShare, activate, budget_tokens, estimate_tokens, parse_book


def msgs(*texts: str) -> list[Message]:
    return [Message(i, "user", t) for i, t in enumerate(texts)]


def run(entries: dict[str, Any], *texts: str, **options: Any) -> list[Activated]:
    return activate([parse_book("lore", {"entries": entries})], msgs(*texts), options.pop("depth", 2), **options)


def on(result: list[Activated]) -> list[str]:
    return [a.uid for a in result if a.skipped is None]


def off(result: list[Activated]) -> dict[str, str]:
    return {a.uid: a.skipped for a in result if a.skipped is not None}


# -- recursion -----------------------------------------------------------------------------------------

CYCLE = {  # bessie → rufus → cat → bessie: a cycle
    "a": {"key": ["bessie"], "content": "Bessie is a cow, friends with Rufus.", "order": 10},
    "b": {"key": ["rufus"], "content": "Rufus is a dog who chases the cat.", "order": 20},
    "c": {"key": ["cat"], "content": "The cat is afraid of Bessie.", "order": 30},
}


def test_a_recursion_chain_with_a_cycle_ends_and_says_which_pass() -> None:
    result = run(CYCLE, "I saw Bessie today", recursion=100)
    assert [(a.uid, a.reason) for a in result] == [
        ("a", "key 'bessie'"), ("b", "key 'rufus', recursion 1"), ("c", "key 'cat', recursion 2")]


def test_the_recursion_limit_counts_passes_after_the_first() -> None:
    assert on(run(CYCLE, "I saw Bessie", recursion=0)) == ["a"]
    assert on(run(CYCLE, "I saw Bessie", recursion=1)) == ["a", "b"]
    assert on(run(CYCLE, "I saw Bessie", recursion=2)) == ["a", "b", "c"]
    assert on(run(CYCLE, "I saw Bessie")) == ["a", "b", "c"]  # the default: 3


def test_exclude_recursion_is_only_activated_by_the_chat() -> None:
    entries = {**CYCLE, "b": {**CYCLE["b"], "excludeRecursion": True}}
    assert on(run(entries, "I saw Bessie")) == ["a"]
    assert on(run(entries, "I saw Bessie and Rufus")) == ["a", "b", "c"]


def test_prevent_recursion_content_activates_nothing() -> None:
    entries = {**CYCLE, "a": {**CYCLE["a"], "preventRecursion": True}}
    assert on(run(entries, "I saw Bessie")) == ["a"]
    # its content is not scanned, but others' still are
    assert on(run(entries, "I saw Bessie and the cat")) == ["a", "c"]


def test_delay_until_recursion_waits_for_a_recursion_pass() -> None:
    delayed = {"d": {"key": ["bessie"], "content": "Bessie is old.", "delayUntilRecursion": True, "order": 5}}
    assert on(run(delayed, "I saw Bessie")) == []  # nothing recursed: never scanned
    result = run({**CYCLE, **delayed}, "I saw Bessie")
    assert on(result) == ["d", "a", "b", "c"] and result[0].reason == "key 'bessie', recursion 1"
    assert on(run({**CYCLE, **delayed}, "I saw Bessie", recursion=0)) == ["a"]


def test_delay_levels_open_one_after_another() -> None:
    entries = {
        "a": {"key": ["bessie"], "content": "plain words"},
        "d1": {"key": ["bessie"], "content": "more words", "delayUntilRecursion": 1},
        "d2": {"key": ["bessie"], "content": "last words", "delayUntilRecursion": 2},
    }
    result = run(entries, "Bessie", recursion=5)
    assert [(a.uid, a.reason) for a in result] == [
        ("a", "key 'bessie'"), ("d1", "key 'bessie', recursion 1"), ("d2", "key 'bessie', recursion 3")]
    assert on(run(entries, "Bessie", recursion=2)) == ["a", "d1"]


# -- token budget ---------------------------------------------------------------------------------------

def test_the_token_estimate_is_chars_over_four_rounded_up() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_budget_takes_constants_then_higher_order_and_stops_at_the_first_overflow() -> None:
    entries = {
        "lo": {"key": ["x"], "order": 100, "content": "x" * 4},        # 1 token: would fit, comes after the overflow
        "const": {"constant": True, "order": 1, "content": "c" * 16},  # 4 tokens
        "mid": {"key": ["x"], "order": 150, "content": "m" * 12},      # 3 tokens: 4 + 4 + 3 ≥ 10
        "hi": {"key": ["x"], "order": 200, "content": "h" * 16},       # 4 tokens
        "free": {"key": ["x"], "order": 50, "content": "f" * 40, "ignoreBudget": True},
    }
    result = run(entries, "x", budget=10)
    assert on(result) == ["const", "free", "hi"]  # listed by order ascending
    assert off(result) == {"lo": "budget: the budget of 10 overflowed before it (8 used)",
                           "mid": "budget: 8 + 3 tokens reach the budget of 10"}
    assert [a.content for a in result if a.skipped] == ["", ""]  # skipped entries keep no content
    assert on(run(entries, "x", budget=11)) == ["const", "free", "hi"]  # reaching the budget is over (as in ST)
    assert on(run(entries, "x", budget=12)) == ["const", "free", "mid", "hi"]
    assert on(run(entries, "x", budget=13)) == ["const", "free", "lo", "mid", "hi"]
    assert on(run(entries, "x")) == ["const", "free", "lo", "mid", "hi"]  # no budget


def test_direct_mentions_come_before_recursion_and_an_overflow_stops_recursion() -> None:
    entries = {
        "a": {"key": ["bessie"], "order": 10, "content": "Bessie knows Rufus."},  # 5 tokens
        "l": {"key": ["hay"], "order": 5, "content": "Hay is dry."},              # 3 tokens
        "r": {"key": ["rufus"], "order": 999, "content": "Rufus barks."},         # 3 tokens, found by recursion
        "i": {"key": ["rufus"], "order": 0, "content": "The cat.", "ignoreBudget": True},
        "c": {"key": ["cat"], "order": 1, "content": "Cat."},
    }
    result = run(entries, "Bessie eats hay", budget=10)
    assert on(result) == ["i", "l", "a"] and off(result) == {"r": "budget: 8 + 3 tokens reach the budget of 10"}
    assert result[0].reason == "key 'rufus', recursion 1"
    assert "c" not in {a.uid for a in result}  # the pass that overflowed was the last
    assert on(run(entries, "Bessie eats hay")) == ["i", "c", "l", "a", "r"]  # without a budget: c by recursion 2


def test_budget_as_a_share_of_a_context_size() -> None:
    assert budget_tokens(BudgetShare(percent=25, context_size=8192)) == 2048
    assert budget_tokens(BudgetShare(percent=0.001, context_size=10)) == 1  # at least one token
    assert budget_tokens(300) == 300 and budget_tokens(None) is None


# -- probability ----------------------------------------------------------------------------------------

HALF = {str(i): {"uid": i, "constant": True, "probability": 50, "content": f"entry {i}"} for i in range(40)}


def test_probability_edges_and_use_probability() -> None:
    entries = {"never": {"key": ["x"], "probability": 0}, "always": {"key": ["x"], "probability": 100},
               "ignored": {"key": ["x"], "probability": 0, "useProbability": False}}
    result = run(entries, "x", seed="r1")
    assert on(result) == ["always", "ignored"] and off(result)["never"].startswith("probability 0%: rolled")


def test_probability_is_seeded_by_the_run_and_the_entry() -> None:
    first = on(run(HALF, seed="run-1"))
    assert 5 < len(first) < 35  # a real draw, not all or nothing
    assert on(run(HALF, seed="run-1")) == first
    assert on(run(HALF, seed="run-2")) != first
    assert all("probability 50% (rolled" in a.reason for a in run(HALF, seed="run-1") if a.skipped is None)


def test_probability_is_the_same_in_another_process() -> None:
    code = ("import json, sys; from tooldeck.conversation.worldinfo import activate, parse_book; "
            "book = parse_book('lore', json.loads(sys.argv[1])); "
            "print(json.dumps([a.uid for a in activate([book], [], 2, seed='run-1') if a.skipped is None]))")
    outputs = [subprocess.run([sys.executable, "-c", code, json.dumps({"entries": HALF})], capture_output=True,
                              text=True, check=True).stdout for _ in range(2)]
    assert json.loads(outputs[0]) == json.loads(outputs[1]) == on(run(HALF, seed="run-1"))


def test_a_failed_roll_is_out_for_the_whole_activation() -> None:
    entries = {"a": {"key": ["bessie"], "content": "rufus"}, "r": {"key": ["rufus"], "probability": 50}}
    seed = next(s for s in (f"s{i}" for i in range(100)) if off(run(entries, "rufus bessie", seed=s)))
    assert off(run(entries, "rufus bessie", seed=seed))["r"].startswith("probability 50%")  # not retried in pass 1


# -- inclusion groups -----------------------------------------------------------------------------------

def weather(weights: tuple[float, float, float]) -> dict[str, Any]:
    return {name: {"key": ["weather"], "group": "weather", "groupWeight": w, "content": name}
            for name, w in zip(("rain", "sun", "snow"), weights, strict=True)}


def test_one_winner_per_group_seeded_and_following_the_weights() -> None:
    result = run(weather((100, 100, 100)), "the weather", seed="r1")
    assert len(on(result)) == 1 and len(off(result)) == 2
    winner = on(result)[0]
    assert all(why.startswith(f"group 'weather': worldinfo:lore#{winner} won by groupWeight") for why in
               off(result).values())
    assert on(run(weather((100, 100, 100)), "the weather", seed="r1")) == [winner]
    wins = Counter(on(run(weather((1, 1, 98)), "the weather", seed=f"run-{i}"))[0] for i in range(200))
    assert wins["snow"] > 170 and wins["rain"] + wins["sun"] > 0
    assert Counter(on(run(weather((0, 1, 0)), "the weather", seed=f"run-{i}"))[0] for i in range(50)) == {"sun": 50}


def test_group_override_takes_the_highest_order() -> None:
    entries = weather((100, 100, 100))
    entries["rain"] |= {"groupOverride": True, "order": 300}
    entries["sun"] |= {"groupOverride": True, "order": 400}
    entries["snow"] |= {"order": 900}
    for seed in ("a", "b", "c"):
        result = run(entries, "weather", seed=seed)
        assert on(result) == ["sun"] and off(result)["snow"] == \
            "group 'weather': worldinfo:lore#sun won by groupOverride and order"


def test_several_groups_a_single_member_and_a_group_already_active() -> None:
    entries = {
        "a": {"key": ["x"], "group": "one, two", "groupOverride": True, "content": "bessie"},
        "b": {"key": ["x"], "group": "two", "content": "b"},
        "c": {"key": ["x"], "group": "three", "content": "c"},  # alone in its group: no contest
        "d": {"key": ["bessie"], "group": "one", "content": "d"},  # matched in recursion: group one is taken
    }
    result = run(entries, "x", seed="s")
    assert on(result) == ["a", "c"]
    assert off(result) == {"b": "group 'two': worldinfo:lore#a won by groupOverride and order",
                           "d": "group 'one' has an active entry already"}


def test_group_losers_of_a_pass_may_win_later_when_the_winner_failed_its_roll() -> None:
    entries = {"w": {"key": ["x"], "group": "g", "groupOverride": True, "probability": 0, "content": "y"},
               "l": {"key": ["x"], "group": "g", "content": "l"},
               "z": {"key": ["x"], "content": "something to recurse on"}}
    result = run(entries, "x", seed="s")
    assert on(result) == ["l", "z"] and off(result)["w"].startswith("probability 0%")
    assert result[0].reason == "key 'x', recursion 1"
    assert on(run(entries, "x", seed="s", recursion=0)) == ["z"]
