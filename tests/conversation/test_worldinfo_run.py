"""The new world-info behaviour through a real Runtime: the Profile's recursion and budget keys, the
entries skipped for the budget in the tool's list and when read, the frozen activation (skips
included) seen by a second runtime, probability drawn from the run id the same in two processes,
bad Profile values refused with `profile.invalid`, and any tool arguments answered or refused with a
listed code (hypothesis)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conversation.conftest import ALLOW, caller, import_chat
from tooldeck.catalog.profile import Profile, ProfileError

BOOK = {"entries": {
    "0": {"uid": 0, "key": ["bessie"], "comment": "Bessie", "content": "Bessie is a cow, friends with Rufus.",
          "order": 10},                                                                          # 9 tokens
    "1": {"uid": 1, "key": ["rufus"], "comment": "Rufus", "content": "Rufus is a dog.", "order": 20},  # 4 tokens
    "2": {"uid": 2, "constant": True, "comment": "World", "content": "A farm.", "order": 1},           # 2 tokens
    "3": {"uid": 3, "key": ["farm"], "comment": "Farm", "content": "The farm is old.", "order": 5},   # 4 tokens
}}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "worldinfo").mkdir()
    (tmp_path / "worldinfo" / "lore.json").write_text(json.dumps(BOOK), encoding="utf-8")
    import_chat(tmp_path, "c", ["hello", "I saw Bessie"])
    return tmp_path


def listing(chat_runtime: Any, **conversation: Any) -> Any:
    r = caller(chat_runtime({"chat": "c", "worldinfo": ["lore"], **conversation}))("worldinfo_read_activated")
    assert not r.is_error, r.content
    return r


def test_recursion_from_the_profile(chat_runtime: Any, home: Path) -> None:
    r = listing(chat_runtime)
    assert [(e["ref"], e["reason"]) for e in r.structured["entries"]] == [
        ("worldinfo:lore#2", "constant"), ("worldinfo:lore#3", "key 'farm', recursion 1"),
        ("worldinfo:lore#0", "key 'bessie'"), ("worldinfo:lore#1", "key 'rufus', recursion 1")]
    assert "skipped" not in r.structured
    r = listing(chat_runtime, worldinfo_recursion=0)
    assert [e["ref"] for e in r.structured["entries"]] == ["worldinfo:lore#2", "worldinfo:lore#0"]


def test_budget_skips_are_listed_and_cannot_be_read(chat_runtime: Any, home: Path) -> None:
    r = listing(chat_runtime, worldinfo_budget=14)  # World 2 + Bessie 9 = 11; Rufus (4) would make 15
    assert [e["ref"] for e in r.structured["entries"]] == ["worldinfo:lore#2", "worldinfo:lore#0"]
    after = "budget: the budget of 14 overflowed before it (11 used)"
    assert r.structured["skipped"] == [  # Farm (order 5) comes after the overflow in the same pass: skipped too
        {"ref": "worldinfo:lore#3", "book": "lore", "uid": "3", "comment": "Farm", "order": 5,
         "reason": "key 'farm', recursion 1", "skipped": after},
        {"ref": "worldinfo:lore#1", "book": "lore", "uid": "1", "comment": "Rufus", "order": 20,
         "reason": "key 'rufus', recursion 1", "skipped": "budget: 11 + 4 tokens reach the budget of 14"},
    ]
    assert f"Matched but skipped (2):\nworldinfo:lore#3 · Farm · order 5 · {after}" in r.content
    call = caller(chat_runtime({"chat": "c", "worldinfo": ["lore"], "worldinfo_budget": 14}))
    read = call("worldinfo_read_activated", entries=[{"ref": "worldinfo:lore#1"}])
    assert read.error_code == "worldinfo.entry_not_found" and "it matched but was skipped (budget" in read.content


def test_a_percent_budget(chat_runtime: Any, home: Path) -> None:
    r = listing(chat_runtime, worldinfo_budget={"percent": 25, "context_size": 48})  # 12 tokens
    assert [e["ref"] for e in r.structured["entries"]] == ["worldinfo:lore#2", "worldinfo:lore#0"]


def test_the_frozen_activation_keeps_its_skips_for_another_runtime(chat_runtime: Any, home: Path) -> None:
    conversation = {"chat": "c", "worldinfo": ["lore"], "worldinfo_budget": 14}
    before = caller(chat_runtime(conversation))("worldinfo_read_activated").structured
    (home / "worldinfo" / "lore.json").write_text(json.dumps({"entries": {}}), encoding="utf-8")
    after = caller(chat_runtime(conversation))("worldinfo_read_activated").structured  # same home: same records
    assert after == before and len(after["skipped"]) == 2


def test_min_activations_from_the_profile(chat_runtime: Any, home: Path) -> None:
    import_chat(home, "c", ["the farm", "hello", "nothing"], replace=True)  # scan_depth 1 reads "nothing"
    quiet = {"scan_depth": 1, "worldinfo_recursion": 0}  # no recursion: the constant entry names the farm
    assert [e["ref"] for e in listing(chat_runtime, **quiet).structured["entries"]] == ["worldinfo:lore#2"]
    r = listing(chat_runtime, **quiet, worldinfo_min_activations=2)  # another activation: depth 3 finds farm
    assert [(e["ref"], e["reason"]) for e in r.structured["entries"]] == [
        ("worldinfo:lore#2", "constant"), ("worldinfo:lore#3", "key 'farm', min activations (depth 3)")]
    r = listing(chat_runtime, **quiet, worldinfo_min_activations=2, worldinfo_min_activations_depth_max=2)
    assert [e["ref"] for e in r.structured["entries"]] == ["worldinfo:lore#2"]


def test_changing_the_budget_activates_anew(chat_runtime: Any, home: Path) -> None:
    caller(chat_runtime({"chat": "c", "worldinfo": ["lore"], "worldinfo_budget": 14}))("worldinfo_read_activated")
    r = listing(chat_runtime)  # no budget: another activation of the same run and session
    assert len(r.structured["entries"]) == 4


CHANCE = {"entries": {str(i): {"uid": i, "constant": True, "probability": 50, "content": f"fact {i}"}
                      for i in range(30)}}
SCRIPT = """
import json, sys, tooldeck
home, book, run_id, allow = sys.argv[1:]
profile = {"allow": json.loads(allow), "conversation": {"worldinfo": [book]}}
rt = tooldeck.Runtime(home, profile=profile, records=False)
[r] = rt.invocation(run_id=run_id).run([{"id": "c", "name": "worldinfo_read_activated", "arguments": {}}])
print(json.dumps([e["ref"] for e in r.structured["entries"]]))
rt.close()
"""


def test_probability_follows_the_run_id_in_two_processes(tmp_path: Path) -> None:
    book = tmp_path / "chance.json"
    book.write_text(json.dumps(CHANCE), encoding="utf-8")

    def active(home: str, run_id: str) -> list[str]:
        (tmp_path / home).mkdir(exist_ok=True)
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / home), str(book), run_id,
                               json.dumps(ALLOW)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    first = active("a", "run-1")
    assert 3 < len(first) < 27
    assert active("b", "run-1") == first  # another process, another home, no records: the same draw
    assert active("a", "run-2") != first


@pytest.mark.parametrize(("conversation", "problem"), [
    ({"worldinfo_budget": 0}, "conversation.worldinfo_budget: should be a number of tokens from 1"),
    ({"worldinfo_budget": "25%"}, "conversation.worldinfo_budget: should be a number of tokens or a table"),
    ({"worldinfo_budget": {"percent": 150, "context_size": 8192}}, "percent: should be less than or equal to 100"),
    ({"worldinfo_budget": {"percent": 25}}, "context_size: missing"),
    ({"worldinfo_recursion": -1}, "conversation.worldinfo_recursion: should be greater than or equal to 0"),
    ({"worldinfo_recursion": 101}, "conversation.worldinfo_recursion: should be less than or equal to 100"),
    ({"worldinfo_min_activations": -1}, "conversation.worldinfo_min_activations: should be greater than or equal"),
    ({"worldinfo_min_activations_depth_max": 1001},
     "conversation.worldinfo_min_activations_depth_max: should be less than or equal to 1000"),
])
def test_bad_profile_values(conversation: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProfileError) as caught:
        Profile.parse({"conversation": conversation})
    assert caught.value.code == "profile.invalid" and problem in caught.value.message, caught.value.message


REF = st.sampled_from(["worldinfo:lore#0", "worldinfo:lore#1", "worldinfo:lore#2", "worldinfo:lore#3",
                       "worldinfo:lore#9", "", "worldinfo:lore#0:L1-L1"])
ITEM = st.fixed_dictionaries({"ref": st.one_of(REF, st.integers())}, optional={
    "start_line": st.one_of(st.integers(-1, 4), st.text(max_size=2)), "line_count": st.integers(-1, 4),
    "offset": st.integers(0, 2)})
CODES = {"worldinfo.entry_not_found", "worldinfo.invalid_entry_range", "worldinfo.read_too_large",
         "tool.invalid_arguments"}


@settings(derandomize=True, max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(args=st.one_of(st.just({}), st.fixed_dictionaries({"entries": st.lists(ITEM, max_size=4)}),
                      st.dictionaries(st.sampled_from(["entries", "ref", "x"]), st.integers(), max_size=2)))
def test_any_arguments_answer_or_give_a_listed_code(chat_runtime: Any, home: Path, args: dict[str, Any]) -> None:
    call = CALLS.get(str(home)) or CALLS.setdefault(str(home), caller(chat_runtime(
        {"chat": "c", "worldinfo": ["lore"], "worldinfo_budget": 14})))
    r = call("worldinfo_read_activated", **args)
    if r.is_error:
        assert r.error_code in CODES, (r.error_code, r.content)
    else:
        read = {e["ref"].split(":L")[0] for e in r.structured["entries"]}
        assert read <= {"worldinfo:lore#0", "worldinfo:lore#2"}  # only the active entries are ever read


CALLS: dict[str, Any] = {}
