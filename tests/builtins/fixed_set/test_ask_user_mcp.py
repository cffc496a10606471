"""ask_user through `tooldeck serve`: the official MCP client (its elicitation callback answering) → the
real `tooldeck serve` process over stdio → the form comes back to that client, and its answers to the tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.server.support import ElicitingUser as User
from tests.server.support import stdio_params
from tooldeck.records.store import SqliteRecorder

DEADLINE_S = 30
ARGS = {"questions": [{"question": "Which city?", "options": ["Paris", "Rome"]},
                      {"question": "Extras?", "options": ["hotel", "car"], "multi_select": True},
                      {"question": "Any note?", "detail": "Seat or meal."}],
        "state": {"objective": "Book the trip", "completed": ["Compared fares"], "next_steps": ["Book it"]}}


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _call(home: Path, user: User | None, args: dict[str, Any]) -> tuple[list[str], types.CallToolResult]:
    callbacks = {"elicitation_callback": user} if user is not None else {}
    async with Client(stdio_client(stdio_params(home, default_loading=True)), mode="legacy",
                      read_timeout_seconds=DEADLINE_S, **callbacks) as client:
        with anyio.fail_after(DEADLINE_S):
            listed = [t.name for t in (await client.list_tools()).tools]
            return listed, await client.call_tool("ask_user", args)


async def test_the_client_answers_through_elicitation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    user = User(types.ElicitResult(action="accept", content={"q1": "Rome", "q2": ["car"], "q3": "aisle"}))
    listed, result = await _call(home, user, ARGS)
    # deferred serving: the fixed tools sit beside find_tools / run_tool, ask_user among them
    assert listed == ["find_tools", "run_tool", "reasoning_guide", "write_todo", "chat_history",
                      "ask_user", "write_result"]
    assert result.is_error is not True, _text(result)
    assert json.loads(_text(result)) == {"answers": ["Rome", ["car"], "aisle"]}
    [form] = user.asked
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.message == "The assistant needs 3 answers to continue: Book the trip"
    assert form.requested_schema["properties"]["q2"] == {"type": "array", "title": "Extras?",
                                                         "items": {"type": "string", "enum": ["hotel", "car"]}}
    assert form.requested_schema["properties"]["q3"]["description"] == "Seat or meal."
    store = SqliteRecorder(home / "records.sqlite")
    try:
        [run] = [p.name for p in (home / "workspaces").iterdir()]
        [relayed] = store.run_events(run, "mcp_relayed_request")
        assert relayed["method"] == "elicitation/create" and relayed["outcome"] == "ok"
    finally:
        store.close()


async def test_a_decline_and_a_client_that_cannot_be_asked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _, declined = await _call(home, User(types.ElicitResult(action="decline")), ARGS)
    assert declined.is_error is True and _text(declined).startswith("the user declined to answer.")
    _, unasked = await _call(home, None, ARGS)
    assert unasked.is_error is True
    assert "the user could not be asked" in _text(unasked) and "elicitation" in _text(unasked)
    secret = {**ARGS, "questions": [{"question": "Token?", "secret": True}]}
    user = User(types.ElicitResult(action="accept", content={"q1": "x"}))
    _, refused = await _call(home, user, secret)
    assert refused.is_error is True and "MCP specification forbids" in _text(refused) and user.asked == []
