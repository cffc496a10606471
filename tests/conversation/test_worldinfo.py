"""World info: activation rules (primary keys, the four secondary-key logics, constant, disabled, order,
scan depth and an entry's own, case, whole words, regex keys) on plain data, then
`worldinfo_read_activated` through a real Runtime: the list, reads and ranges, every error code, and
the activation frozen for the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conversation.conftest import caller, import_chat
from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo import activate, parse_book
from tooldeck.core.errors import TooldeckError


def msgs(*texts: str) -> list[Message]:
    return [Message(i, "user", t) for i, t in enumerate(texts)]


def active(entries: dict[str, Any], messages: list[Message], depth: int = 2) -> list[str]:
    return [a.uid for a in activate([parse_book("lore", {"entries": entries})], messages, depth)]


def test_primary_keys_any_of_them_case_insensitive() -> None:
    entries = {"1": {"key": ["dragon", "wyrm"], "content": "Dragons hoard gold."}, "2": {"key": ["elf"]}}
    assert active(entries, msgs("A WYRM flies over")) == ["1"]
    assert active(entries, msgs("nothing here")) == []


@pytest.mark.parametrize(("logic", "text", "on"), [
    (0, "dragon gold", True), (0, "dragon", False),                          # AND_ANY
    (1, "dragon gold", True), (1, "dragon gold cave", False),                # NOT_ALL
    (2, "dragon", True), (2, "dragon cave", False),                          # NOT_ANY
    (3, "dragon gold cave", True), (3, "dragon gold", False),                # AND_ALL
])
def test_secondary_key_logic(logic: int, text: str, on: bool) -> None:
    entry = {"key": ["dragon"], "keysecondary": ["gold", "cave"], "selective": True, "selectiveLogic": logic}
    assert active({"e": entry}, msgs(text)) == (["e"] if on else [])
    not_selective = {**entry, "selective": False}  # secondary keys are ignored then
    assert active({"e": not_selective}, msgs(text)) == ["e"]


def test_constant_disabled_and_order() -> None:
    entries = {
        "a": {"key": ["x"], "order": 300},
        "b": {"constant": True, "order": 10, "key": []},
        "c": {"key": ["x"], "order": 200},
        "d": {"key": ["x"], "order": 200, "disable": True},
        "e": {"key": ["x"]},  # order 100 by default
    }
    assert active(entries, msgs("x")) == ["b", "e", "c", "a"]
    assert active(entries, msgs("nothing")) == ["b"]


def test_scan_depth_and_an_entrys_own() -> None:
    history = msgs("the dragon appears", "talk", "more talk")
    entries = {"near": {"key": ["dragon"]}, "deep": {"key": ["dragon"], "scanDepth": 3}, "blind": {
        "key": ["talk"], "scanDepth": 0}}
    assert active(entries, history, depth=2) == ["deep"]
    assert active(entries, history, depth=3) == ["near", "deep"]
    assert active(entries, history, depth=50) == ["near", "deep"]  # deeper than the chat: all of it


def test_case_whole_words_and_regex_keys() -> None:
    entries = {"case": {"key": ["Rose"], "caseSensitive": True}, "word": {"key": ["cat"], "matchWholeWords": True},
               "rx": {"key": ["/gr[ae]y\\s+wolf/i"]}}
    assert active(entries, msgs("a rose, a catalog, a GREY  Wolf")) == ["rx"]
    assert active(entries, msgs("Rose saw the cat.")) == ["case", "word"]


@pytest.mark.parametrize(("book", "problem"), [
    ({}, "no `entries`"),
    ({"entries": {"1": {"key": "x", "selectiveLogic": 7}}}, "selectiveLogic must be"),
    ({"entries": {"1": {"key": ["/(/"]}}}, "not a valid regular expression"),
    ({"entries": {"1": {"key": [3]}}}, "list of strings"),
    ({"entries": [{"uid": 1}, {"uid": 1}]}, "same uid"),
    ({"entries": {"1": {"order": "high"}}}, "must be an integer"),
])
def test_bad_books(book: dict[str, Any], problem: str) -> None:
    with pytest.raises(TooldeckError) as caught:
        parse_book("lore", book)
    assert caught.value.code == "worldinfo.book_invalid" and problem in caught.value.message


BOOK = {"entries": {
    "0": {"uid": 0, "key": ["dragon"], "comment": "Dragons", "content": "Dragons hoard gold.\nThey sleep a lot.",
          "order": 50},
    "1": {"uid": 1, "constant": True, "comment": "World", "content": "The world is flat.", "order": 10},
    "2": {"uid": 2, "key": ["mill"], "comment": "Mill", "content": "An old mill.", "order": 20},
    "3": {"uid": 3, "key": ["huge"], "comment": "Huge", "content": "h" * 9_000},
}}


@pytest.fixture
def wi(chat_runtime: Any, tmp_path: Path) -> Any:
    (tmp_path / "worldinfo").mkdir()
    (tmp_path / "worldinfo" / "lore.json").write_text(json.dumps(BOOK), encoding="utf-8")
    import_chat(tmp_path, "c", ["the mill burned", "a dragon and something huge came", "we ran"])
    return caller(chat_runtime({"chat": "c", "worldinfo": ["lore"], "scan_depth": 2}))


def test_list_then_read(wi: Any) -> None:
    r = wi("worldinfo_read_activated")
    assert not r.is_error, r.content
    assert [(e["ref"], e["reason"]) for e in r.structured["entries"]] == [
        ("worldinfo:lore#1", "constant"), ("worldinfo:lore#0", "key 'dragon'"), ("worldinfo:lore#3", "key 'huge'")]
    assert "content" not in r.structured["entries"][0] and "Dragons hoard" not in r.content
    r = wi("worldinfo_read_activated", entries=[{"ref": "worldinfo:lore#0"},
                                                {"ref": "worldinfo:lore#0", "start_line": 2, "line_count": 1}])
    assert [(e["ref"], e["text"]) for e in r.structured["entries"]] == [
        ("worldinfo:lore#0", "Dragons hoard gold.\nThey sleep a lot."), ("worldinfo:lore#0:L2-L2", "They sleep a lot.")]


@pytest.mark.parametrize(("entries", "code"), [
    ([{"ref": "worldinfo:lore#2"}], "worldinfo.entry_not_found"),  # the mill is 3 messages back: not scanned
    ([{"ref": "worldinfo:lore#0", "start_line": 3}], "worldinfo.invalid_entry_range"),
    ([{"ref": "worldinfo:lore#0", "line_count": 1}], "worldinfo.invalid_entry_range"),
    ([{"ref": "worldinfo:lore#3"}], "worldinfo.read_too_large"),
    ([{"ref": "worldinfo:lore#1"}] * 21, "worldinfo.read_too_large"),
    ([], "tool.invalid_arguments"),
])
def test_read_errors(wi: Any, entries: list[dict[str, Any]], code: str) -> None:
    r = wi("worldinfo_read_activated", entries=entries)
    assert r.is_error and r.error_code == code, r.content


def test_activation_unavailable(chat_runtime: Any, tmp_path: Path) -> None:
    r = caller(chat_runtime({}))("worldinfo_read_activated")
    assert r.error_code == "worldinfo.activation_unavailable" and "conversation.worldinfo" in r.content
    r = caller(chat_runtime({"worldinfo": ["missing"]}))("worldinfo_read_activated")
    assert r.error_code == "worldinfo.activation_unavailable" and "cannot read world info 'missing'" in r.content


def test_the_activation_is_frozen_for_the_run(wi: Any, tmp_path: Path) -> None:
    before = wi("worldinfo_read_activated").structured["entries"]
    import_chat(tmp_path, "c", ["the mill burned", "a dragon and something huge came", "we ran", "to the mill"],
                replace=True)
    (tmp_path / "worldinfo" / "lore.json").write_text(json.dumps({"entries": {}}), encoding="utf-8")
    assert wi("worldinfo_read_activated").structured["entries"] == before
    assert wi("worldinfo_read_activated", entries=[{"ref": "worldinfo:lore#0"}]).structured["entries"][0]["text"] \
        .startswith("Dragons hoard gold.")


def test_only_constants_without_a_chat(chat_runtime: Any, tmp_path: Path) -> None:
    (tmp_path / "lore.json").write_text(json.dumps(BOOK), encoding="utf-8")
    r = caller(chat_runtime({"worldinfo": [str(tmp_path / "lore.json")]}))("worldinfo_read_activated")
    assert [e["ref"] for e in r.structured["entries"]] == ["worldinfo:lore#1"]
