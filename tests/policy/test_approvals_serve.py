"""Remembered approvals through `tooldeck serve` (issue 19 item 2): the confirmation form's `remember` field, in
both MCP eras, over the real SDK server and the official client."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from tooldeck.runtime import Runtime
from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer

ASK = {"permissions": {"builtin:dice.roll": "ask"}, "max_identical_calls": 0}


def server(home: Path) -> TooldeckMCPServer:
    return TooldeckMCPServer(Runtime(home, profile=ASK), ServeOptions(watch_interval_s=None))


def remembered(home: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(home / "records.sqlite") as conn:
        return conn.execute("SELECT decision, scope, confirmer FROM approvals ORDER BY created_at").fetchall()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(("remember", "approve"), [("run", True), ("always", True), ("run", False)])
async def test_a_remembered_form_answer_settles_the_next_calls(tmp_path: Path, mode: str, remember: str,
                                                               approve: bool) -> None:
    asked: list[Any] = []
    schemas: list[dict[str, Any]] = []

    async def reply(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        schemas.append(params.requested_schema)  # type: ignore[union-attr]
        return types.ElicitResult(action="accept", content={"approve": approve, "remember": remember})

    mcp = server(tmp_path)
    async with Client(mcp.server, mode=mode, elicitation_callback=reply) as client:
        results = [await client.call_tool("dice_roll", {"formula": f"{n}d1"}) for n in (1, 2, 3)]
    assert len(asked) == 1  # the first call asked; its answer settled the others
    assert schemas[0]["properties"]["remember"]["enum"] == ["once", "run", "always"]
    assert [r.is_error for r in results] == [not approve] * 3
    assert [r[:2] for r in remembered(tmp_path)] == [("allow" if approve else "deny", remember)]
    assert remembered(tmp_path)[0][2].startswith("mcp:")


@pytest.mark.parametrize("answer", [types.ElicitResult(action="accept", content={"approve": True}),
                                    types.ElicitResult(action="accept", content={"approve": True, "remember": "once"}),
                                    types.ElicitResult(action="decline", content={"remember": "always"})])
async def test_once_and_declined_forms_remember_nothing(tmp_path: Path, answer: types.ElicitResult) -> None:
    asked: list[str] = []

    async def reply(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return answer

    async with Client(server(tmp_path).server, mode="legacy", elicitation_callback=reply) as client:
        for n in (1, 2):
            await client.call_tool("dice_roll", {"formula": f"{n}d1"})
    assert len(asked) == 2
    assert remembered(tmp_path) == []
