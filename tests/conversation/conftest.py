"""Helpers of the conversation tests: SillyTavern chat logs on disk, and a runtime whose Profile allows
the conversation tools and binds a chat."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tooldeck.conversation.chat_store import ChatStore
from tooldeck.conversation.importer import parse_jsonl

ALLOW = ["builtin:chat.search", "builtin:chat.read_messages", "builtin:chat_history",
         "builtin:worldinfo.read_activated"]


def st_log(texts: Iterable[str], *, title: str = "Seraphina") -> str:
    """A SillyTavern JSONL chat: a header line, then user and character turns in turn."""
    lines = [json.dumps({"user_name": "User", "character_name": title, "create_date": "2024-05-04@22h19m",
                         "chat_metadata": {}})]
    for i, text in enumerate(texts):
        user = i % 2 == 0
        lines.append(json.dumps({"name": "User" if user else title, "is_user": user, "is_system": False,
                                 "send_date": f"May 4, 2024 10:{i % 60:02d}pm", "mes": text, "extra": {}}))
    return "\n".join(lines) + "\n"


def import_chat(home: Path, chat_id: str, texts: Iterable[str], *, replace: bool = False) -> int:
    parsed = parse_jsonl(st_log(texts))
    return ChatStore(home / "records.sqlite").save(chat_id, parsed.title, parsed.messages, replace=replace).messages


Call = Callable[..., Any]


@pytest.fixture
def chat_runtime(make_runtime: MakeRuntime) -> Callable[..., tooldeck.Runtime]:
    def make(conversation: dict[str, Any] | None = None, **keys: Any) -> tooldeck.Runtime:
        return make_runtime(allow=ALLOW, conversation=conversation or {}, **keys)

    return make


def caller(rt: tooldeck.Runtime, run_id: str = "r1") -> Call:
    """`call(name, **args)` → the one result of a one-call turn in run `run_id` (a new invocation each time)."""
    def call(name: str, **args: Any) -> Any:
        [result] = rt.invocation(run_id=run_id).run([{"id": "c", "name": name, "arguments": args}])
        return result

    return call
