"""`ask_user` under `tooldeck serve` for a 2026-07-28 client: no request can reach it mid-call, so the form goes out
as an `InputRequiredResult` of the held call (server/held_calls.py) and the client's retry carries the answer to the
tool. Real processes: the official SDK client (`mode="auto"`, which negotiates 2026-07-28 and drives the retries)
→ `tooldeck serve` over stdio and streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.server.support import ElicitingUser as User
from tests.server.support import http_server, stdio_params
from tooldeck.records.store import SqliteRecorder

DEADLINE_S = 60
ARGS = {"questions": [{"question": "Which city?", "options": ["Paris", "Rome"]},
                      {"question": "Extras?", "options": ["hotel", "car"], "multi_select": True},
                      {"question": "Any note?"}],
        "state": {"objective": "Book the trip", "completed": ["Compared fares"], "next_steps": ["Book it"]}}


@contextmanager
def _target(home: Path, transport: str) -> Iterator[Any]:
    if transport == "http":
        with http_server(home, "--loading", "deferred") as served:
            yield served.url
    else:
        yield stdio_params(home, default_loading=True)


async def _ask(home: Path, transport: str, user: User) -> types.CallToolResult:
    with _target(home, transport) as target:
        async with Client(target, mode="auto", read_timeout_seconds=DEADLINE_S, elicitation_callback=user) as client:
            assert client.protocol_version == "2026-07-28"
            with anyio.fail_after(DEADLINE_S):
                return await client.call_tool("ask_user", ARGS)


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _relayed(home: Path) -> list[dict[str, Any]]:
    store = SqliteRecorder(home / "records.sqlite")
    try:
        return [e for s in {s.run_id for s in store.list_invocations(50)}
                for e in store.run_events(s, "mcp_relayed_request")]
    finally:
        store.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_2026_client_gets_the_form_and_its_answer_reaches_the_tool(tmp_path: Path, transport: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    user = User(types.ElicitResult(action="accept", content={"q1": "Rome", "q2": ["car"], "q3": "aisle"}))
    result = await _ask(home, transport, user)
    assert result.is_error is not True, _text(result)
    assert json.loads(_text(result)) == {"answers": ["Rome", ["car"], "aisle"]}
    [form] = user.asked
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.message == "The assistant needs 3 answers to continue: Book the trip"
    assert form.requested_schema["properties"]["q1"] == {"type": "string", "enum": ["Paris", "Rome"],
                                                         "title": "Which city?"}
    [event] = _relayed(home)
    assert event["method"] == "elicitation/create" and event["outcome"] == "ok"
    assert event["result"]["content"] == {"q1": "Rome", "q2": ["car"], "q3": "aisle"}


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_2026_client_that_declines_or_cancels(tmp_path: Path, action: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    user = User(types.ElicitResult(action=action))  # type: ignore[arg-type]
    result = await _ask(home, "stdio", user)
    assert len(user.asked) == 1
    assert result.is_error is True and _text(result).startswith("the user declined to answer."), _text(result)
    [event] = _relayed(home)
    assert event["outcome"] == "ok" and event["result"]["action"] == action


async def test_a_2026_client_without_elicitation_is_not_asked(tmp_path: Path) -> None:
    """No `elicitation` capability: the call is not held for it and nothing is sent; the tool says why."""
    home = tmp_path / "home"
    home.mkdir()
    async with Client(stdio_params(home, default_loading=True), mode="auto", read_timeout_seconds=DEADLINE_S) as client:
        assert client.protocol_version == "2026-07-28"
        with anyio.fail_after(DEADLINE_S):
            result = await client.call_tool("ask_user", ARGS)
    assert result.is_error is True
    assert "the user could not be asked" in _text(result) and "elicitation" in _text(result)
