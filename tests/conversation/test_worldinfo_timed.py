"""World-info timed effects (sticky, cooldown, delay) and min activations: the pure activation chat
length by chat length, then across two runs of one chat and across two processes (the effects live
in the records, per chat)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conversation.conftest import ALLOW, caller, import_chat
from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo import Activated, activate, parse_book
from tooldeck.conversation.worldinfo_timed import Effect, TimedState, after, current
from tooldeck.core.errors import TooldeckError


class Chat:
    """One book and one chat growing message by message; each `turn` activates as the binding does."""

    def __init__(self, entries: dict[str, Any], **options: Any) -> None:
        self.book = parse_book("lore", {"entries": entries})
        self.state = TimedState()
        self.messages: list[str] = []
        self.options = options

    def turn(self, text: str) -> list[Activated]:
        self.messages.append(text)
        return self.again()

    def again(self) -> list[Activated]:
        """Activate anew with the same messages (a regenerated turn)."""
        timed = current(self.state, self.book.entries, len(self.messages))
        found = activate([self.book], [Message(i, "user", t) for i, t in enumerate(self.messages)],
                         self.options.get("depth", 1), seed="s", timed=timed)
        by_ref = {e.ref: e for e in self.book.entries}
        self.state = after(timed, (by_ref[a.ref] for a in found if a.skipped is None))
        return found


def on(found: list[Activated]) -> dict[str, str]:
    return {a.uid: a.reason for a in found if a.skipped is None}


def off(found: list[Activated]) -> dict[str, str]:
    return {a.uid: a.skipped or "" for a in found if a.skipped is not None}


def test_sticky_keeps_an_entry_for_n_messages() -> None:
    chat = Chat({"1": {"key": ["dragon"], "content": "Dragons.", "sticky": 3}})
    assert on(chat.turn("hello")) == {}
    assert on(chat.turn("a dragon")) == {"1": "key 'dragon'"}  # 2 messages: sticky until 5
    assert on(chat.turn("nothing")) == {"1": "sticky (activated with 2 messages, until 5)"}
    assert on(chat.turn("nothing")) == {"1": "sticky (activated with 2 messages, until 5)"}
    assert on(chat.turn("nothing")) == {}  # 5 messages: ended
    assert on(chat.turn("dragon again")) == {"1": "key 'dragon'"}  # and it can start anew


def test_cooldown_blocks_an_entry_for_n_messages() -> None:
    chat = Chat({"1": {"key": ["dragon"], "content": "Dragons.", "cooldown": 2}})
    assert on(chat.turn("a dragon")) == {"1": "key 'dragon'"}  # 1 message: cooling until 3
    found = chat.turn("the dragon")
    assert on(found) == {} and off(found) == {"1": "cooldown until the chat has 3 messages (it has 2)"}
    assert on(chat.turn("the dragon")) == {"1": "key 'dragon'"}


def test_delay_waits_for_n_messages() -> None:
    chat = Chat({"1": {"key": ["dragon"], "content": "Dragons.", "delay": 3}, "2": {"constant": True, "delay": 2}})
    found = chat.turn("a dragon")
    assert on(found) == {} and off(found) == {"1": "delay: the chat has 1 of the 3 messages it waits for",
                                              "2": "delay: the chat has 1 of the 2 messages it waits for"}
    assert on(chat.turn("the dragon")) == {"2": "constant"}
    assert on(chat.turn("the dragon")) == {"1": "key 'dragon'", "2": "constant"}


def test_a_sticky_entry_goes_on_cooldown_when_it_ends() -> None:
    chat = Chat({"1": {"key": ["dragon"], "content": "Dragons.", "sticky": 2, "cooldown": 2}})
    assert on(chat.turn("a dragon")) == {"1": "key 'dragon'"}  # sticky until 3
    assert on(chat.turn("x")) == {"1": "sticky (activated with 1 messages, until 3)"}
    found = chat.turn("dragon")  # 3: the sticky effect ends and its cooldown starts, until 5
    assert on(found) == {} and off(found) == {"1": "cooldown until the chat has 5 messages (it has 3)"}
    assert on(chat.turn("dragon")) == {}
    assert on(chat.turn("dragon")) == {"1": "key 'dragon'"}


def test_a_regenerated_turn_sets_its_effects_anew() -> None:
    chat = Chat({"1": {"key": ["dragon"], "content": "Dragons.", "sticky": 5}})
    assert on(chat.turn("a dragon")) == {"1": "key 'dragon'"}
    chat.messages[-1] = "no lizard"  # the same turn, another text: the effect set by it is dropped
    assert on(chat.again()) == {}
    assert on(chat.turn("x")) == {}


def test_sticky_beats_its_group_and_is_not_rolled_again() -> None:
    entries = {"a": {"key": ["storm"], "content": "Storm.", "group": "weather", "sticky": 3, "probability": 60},
               "b": {"key": ["storm"], "content": "Rain.", "group": "weather", "groupOverride": True, "order": 500}}
    chat = Chat(entries)
    chat.state, chat.messages = TimedState(sticky={"worldinfo:lore#a": Effect(1, 4)}), ["earlier"]
    found = chat.turn("a storm")  # 2 messages
    assert on(found) == {"a": "sticky (activated with 1 messages, until 4)"}
    assert off(found) == {"b": "group 'weather': worldinfo:lore#a is sticky"}


@pytest.mark.parametrize("field,value", [("sticky", -1), ("cooldown", 1.5), ("delay", "2"), ("sticky", True)])
def test_bad_timed_values_are_book_invalid(field: str, value: Any) -> None:
    with pytest.raises(TooldeckError) as caught:
        parse_book("lore", {"entries": {"0": {"key": ["a"], field: value}}})
    assert caught.value.code == "worldinfo.book_invalid" and f"entry 0.{field}" in caught.value.message


@settings(derandomize=True, max_examples=200, deadline=None)
@given(data=st.one_of(st.none(), st.dictionaries(st.sampled_from(["sticky", "cooldown", "x"]), st.one_of(
    st.dictionaries(st.text(max_size=3), st.one_of(st.lists(st.one_of(st.integers(), st.booleans()), max_size=4),
                                                   st.integers(), st.none()), max_size=3), st.integers()))))
def test_any_stored_state_reads_back_or_is_dropped(data: Any) -> None:
    state = TimedState.from_dict(data)
    assert TimedState.from_dict(json.loads(json.dumps(state.to_dict()))) == state


# -- min activations -----------------------------------------------------------------------------------

MIN = {"a": {"key": ["apple"], "content": "Apples grow.", "order": 3},
       "b": {"key": ["bread"], "content": "Bread and cheese.", "order": 2},
       "c": {"key": ["cheese"], "content": "Cheese.", "order": 1}}


def test_min_activations_scans_deeper_until_enough_are_active() -> None:
    book = parse_book("lore", {"entries": MIN})
    messages = [Message(i, "user", t) for i, t in enumerate(["apple", "bread", "nothing", "nothing"])]
    assert on(activate([book], messages, 1)) == {}
    found = activate([book], messages, 1, min_activations=2)  # depth 2, 3: bread; recursion: cheese
    assert on(found) == {"b": "key 'bread', min activations (depth 3)", "c": "key 'cheese', recursion 1"}
    found = activate([book], messages, 1, min_activations=3)  # depth 4: apple too
    assert on(found) == {"a": "key 'apple', min activations (depth 4)",
                         "b": "key 'bread', min activations (depth 3)", "c": "key 'cheese', recursion 1"}
    assert on(activate([book], messages, 1, min_activations=3, min_depth_max=3)) == {
        "b": "key 'bread', min activations (depth 3)", "c": "key 'cheese', recursion 1"}
    assert on(activate([book], messages, 1, min_activations=3, recursion=0)) == {
        "a": "key 'apple', min activations (depth 4)", "b": "key 'bread', min activations (depth 3)"}


def test_min_activations_stops_at_the_oldest_message() -> None:
    book = parse_book("lore", {"entries": MIN})
    messages = [Message(0, "user", "nothing"), Message(1, "user", "nothing")]
    assert on(activate([book], messages, 1, min_activations=5)) == {}


# -- across runs and processes -------------------------------------------------------------------------

STICKY = {"entries": {"0": {"uid": 0, "key": ["dragon"], "content": "Dragons hoard gold.", "sticky": 2},
                      "1": {"uid": 1, "key": ["wolf"], "content": "Wolves hunt.", "cooldown": 2},
                      "2": {"uid": 2, "key": ["ghost"], "content": "Ghosts wait.", "delay": 4}}}
SCRIPT = """
import json, sys, tooldeck
home, run_id, allow = sys.argv[1:]
profile = {"allow": json.loads(allow), "conversation": {"chat": "c", "worldinfo": ["lore"], "scan_depth": 1}}
rt = tooldeck.Runtime(home, profile=profile)
[r] = rt.invocation(run_id=run_id).run([{"id": "c", "name": "worldinfo_read_activated", "arguments": {}}])
print(json.dumps({"on": {e["uid"]: e["reason"] for e in r.structured["entries"]},
                  "off": {e["uid"]: e["skipped"] for e in r.structured.get("skipped", [])}}))
rt.close()
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "worldinfo").mkdir()
    (tmp_path / "worldinfo" / "lore.json").write_text(json.dumps(STICKY), encoding="utf-8")
    return tmp_path


def in_process(chat_runtime: Any, run_id: str) -> dict[str, Any]:
    rt = chat_runtime({"chat": "c", "worldinfo": ["lore"], "scan_depth": 1})
    r = caller(rt, run_id)("worldinfo_read_activated")
    assert not r.is_error, r.content
    return {"on": {e["uid"]: e["reason"] for e in r.structured["entries"]},
            "off": {e["uid"]: e["skipped"] for e in r.structured.get("skipped", [])}}


def in_a_process(home: Path, run_id: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(home), run_id, json.dumps(ALLOW)],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("where", ["runtime", "process"])
def test_timed_effects_carry_from_run_to_run_of_a_chat(chat_runtime: Any, home: Path, where: str) -> None:
    def run(run_id: str) -> dict[str, Any]:
        return in_process(chat_runtime, run_id) if where == "runtime" else in_a_process(home, run_id)

    texts = ["a dragon and a wolf"]
    import_chat(home, "c", texts)
    assert run("r1")["on"] == {"0": "key 'dragon'", "1": "key 'wolf'"}  # 1 message: sticky and cooling until 3
    texts.append("the wolf again, and a ghost")
    import_chat(home, "c", texts, replace=True)
    second = run("r2")
    assert second["on"] == {"0": "sticky (activated with 1 messages, until 3)"}
    assert second["off"] == {"1": "cooldown until the chat has 3 messages (it has 2)",
                             "2": "delay: the chat has 2 of the 4 messages it waits for"}
    texts.append("wolf")
    import_chat(home, "c", texts, replace=True)
    assert run("r3")["on"] == {"1": "key 'wolf'"}  # 3 messages: sticky over, cooldown over
    assert in_process(chat_runtime, "r2") == second  # a run's activation stays frozen


def test_a_second_session_of_the_same_run_is_not_counted_twice(chat_runtime: Any, home: Path) -> None:
    import_chat(home, "c", ["a dragon"])
    first = in_process(chat_runtime, "r1")
    assert in_process(chat_runtime, "r1") == first == in_a_process(home, "r1")  # read back, not activated anew


TIMED_ENTRY = st.fixed_dictionaries({"key": st.lists(st.sampled_from(["dragon", "wolf", "ghost"]), min_size=1,
                                                     max_size=2)}, optional={
    "sticky": st.integers(0, 4), "cooldown": st.integers(0, 4), "delay": st.integers(0, 5),
    "probability": st.integers(0, 100), "constant": st.booleans(), "content": st.sampled_from(["", "a wolf"])})
TIMED: list[int] = []


@settings(derandomize=True, max_examples=150, deadline=None)
@given(entries=st.lists(TIMED_ENTRY, min_size=1, max_size=5),
       turns=st.lists(st.sampled_from(["dragon", "wolf", "ghost", "x", "dragon wolf"]), min_size=1, max_size=10))
def test_timed_effects_hold_turn_after_turn(entries: list[dict[str, Any]], turns: list[str]) -> None:
    """A model of the effects: an entry activated afresh at `c` stays active until c + sticky, then
    cannot activate until c + sticky + cooldown (c + cooldown without sticky), and never before `delay`."""
    chat = Chat({str(i): e for i, e in enumerate(entries)})
    by_uid = {e.uid: e for e in chat.book.entries}
    sticky_until: dict[str, int] = {}
    cool_until: dict[str, int] = {}
    for count, text in enumerate(turns, 1):
        active = on(chat.turn(text))
        for uid, entry in by_uid.items():
            if count < sticky_until.get(uid, 0):
                assert uid in active, (uid, count)  # kept whatever its keys or its roll
                TIMED.append(count)
            elif uid in active:
                assert count >= entry.delay and count >= cool_until.get(uid, 0), (uid, count)
                sticky_until[uid] = count + entry.sticky
                cool_until[uid] = count + entry.sticky + entry.cooldown


def test_the_timed_hypothesis_test_reached_sticky_entries() -> None:
    TIMED.clear()
    test_timed_effects_hold_turn_after_turn()
    assert len(TIMED) >= 20


def timed_events(home: Path) -> list[tuple[str, dict[str, Any]]]:
    with sqlite3.connect(home / "records.sqlite") as conn:
        rows = conn.execute("SELECT run_id, data FROM events WHERE kind = 'worldinfo_timed' ORDER BY seq").fetchall()
    return [(run_id, json.loads(data)) for run_id, data in rows]


def test_the_effects_are_recorded_per_chat_and_only_when_they_change(chat_runtime: Any, home: Path) -> None:
    import_chat(home, "c", ["nothing here"])
    in_process(chat_runtime, "r1")
    assert timed_events(home) == []  # nothing set: nothing written
    import_chat(home, "c", ["nothing here", "a dragon"], replace=True)
    in_process(chat_runtime, "r2")
    [(owner, event)] = timed_events(home)
    assert owner == "worldinfo-chat:c" and event == {
        "count": 2, "run": "r2", "state": {"sticky": {"worldinfo:lore#0": [2, 4, False]}, "cooldown": {}}}


def test_a_delay_holds_with_no_chat(chat_runtime: Any, home: Path) -> None:
    book = {"entries": {"0": {"constant": True, "content": "Always.", "delay": 1}, "1": {"constant": True}}}
    (home / "worldinfo" / "lore.json").write_text(json.dumps(book), encoding="utf-8")
    r = caller(chat_runtime({"worldinfo": ["lore"]}), "r1")("worldinfo_read_activated")  # no chat: 0 messages
    assert [e["uid"] for e in r.structured["entries"]] == ["1"]
    assert r.structured["skipped"][0]["skipped"] == "delay: the chat has 0 of the 1 messages it waits for"
    assert timed_events(home) == []


PAUSED = """
import json, os, pathlib, sys, time
import tooldeck.conversation.binding as binding
home, run_id, allow, marks = sys.argv[1:]
marks = pathlib.Path(marks)
original_after, original_read = binding.timed_effects.after, binding.RunConversation._timed_state

def after(*args, **kwargs):  # between reading the chat's effects and keeping the new ones
    (marks / f"{run_id}.in_after").touch()
    deadline = time.monotonic() + 60
    while not (marks / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return original_after(*args, **kwargs)

def read(self, chat_id):
    (marks / f"{run_id}.read").touch()
    return original_read(self, chat_id)

binding.timed_effects.after = after
binding.RunConversation._timed_state = read
import tooldeck
profile = {"allow": json.loads(allow), "conversation": {"chat": "c", "worldinfo": ["lore"], "scan_depth": 1}}
rt = tooldeck.Runtime(home, profile=profile)
[r] = rt.invocation(run_id=run_id).run([{"id": "c", "name": "worldinfo_read_activated", "arguments": {}}])
print(json.dumps({"on": {e["uid"]: e["reason"] for e in r.structured["entries"]}}))
rt.close()
"""


def _waits_on_a_flock(pid: int) -> bool:
    """Whether `pid` is blocked waiting for a `flock` (/proc/locks lists a blocked waiter after `->`)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and "FLOCK" in fields and str(pid) in fields:
            return True
    return False


def test_two_processes_activating_one_chat_at_once_take_turns(home: Path, tmp_path: Path) -> None:
    """Run r1 is held between reading the chat's effects and keeping its own (it activates `dragon`, sticky
    until 3 messages) while the chat grows and run r2 activates it: r2 must start from r1's effects (the dragon
    sticky), not from the same empty effects r1 read (then r2's write replaced r1's and the sticky was lost)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    import_chat(home, "c", ["a dragon"])

    def start(run_id: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", PAUSED, str(home), run_id, json.dumps(ALLOW), str(marks)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = start("r1")
    second: subprocess.Popen[str] | None = None
    try:
        _poll(lambda: (marks / "r1.in_after").exists() or first.poll() is not None)
        assert first.poll() is None, first.communicate()
        import_chat(home, "c", ["a dragon", "nothing"], replace=True)
        second = start("r2")
        # r2 either reads the effects while r1 holds its own (the race) or waits for r1's lock
        _poll(lambda: (marks / "r2.read").exists() or _waits_on_a_flock(second.pid) or second.poll() is not None)
        (marks / "go").touch()
        out1, err1 = first.communicate(timeout=120)
        out2, err2 = second.communicate(timeout=120)
    finally:
        (marks / "go").touch()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert json.loads(out1)["on"] == {"0": "key 'dragon'"}  # 1 message: sticky until 3
    assert json.loads(out2)["on"] == {"0": "sticky (activated with 1 messages, until 3)"}


def _poll(condition: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
