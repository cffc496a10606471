"""Records of what `tooldeck serve` relays (issue 12, Tests: records): a sampling and an elicitation exchange relayed
from an upstream server to the client during a call, and a resource read, are recorded without secrets, are shown by
`tooldeck records show` / `tooldeck records events`, and the calls still replay. Real processes: the official client
(handshake protocol, with sampling and elicitation) → a real `tooldeck serve --http --token` → the conformance fixture
(`conformance_content_server.py`, stdio, 2026-07-28: its requests come as `InputRequiredResult` rounds), and the
`tooldeck` CLI reading the records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.server.support import TOOLDECK, http_server

FIXTURE = Path(__file__).resolve().with_name("conformance_content_server.py")
TOKEN = "s3cret-token-6f1d8a"


async def _sampling(_ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    prompt = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(role="assistant", model="downstream-model", stop_reason="endTurn",
                                     content=types.TextContent(type="text", text=f"echo {prompt}"))


async def _elicitation(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


def _cli(home: Path, *args: str) -> Any:
    out = subprocess.run([TOOLDECK, *args, "--home", str(home)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if "--json" in args or args[0] == "replay" else out.stdout


async def test_relayed_exchanges_and_reads_are_recorded_shown_and_replayable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"conf": {"command": sys.executable,
                                                                       "args": [str(FIXTURE)]}}}))
    with http_server(home, "--names", "original", env={"TOOLDECK_TOKEN": TOKEN}) as served:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with http, Client(streamable_http_client(served.url, http_client=http), mode="legacy",
                                read_timeout_seconds=30, sampling_callback=_sampling,
                                elicitation_callback=_elicitation) as client:
            sampled = await client.call_tool("test_sampling", {"prompt": "say hi"})
            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            read = await client.read_resource("test://static-text")
    assert sampled.content[0].text == "LLM response: echo say hi"  # type: ignore[union-attr]
    assert "ada@example.com" in elicited.content[0].text  # type: ignore[union-attr]
    assert read.contents[0].text.startswith("This is the content")  # type: ignore[union-attr]

    invocations = _cli(home, "records", "list", "--json")
    [run_id] = {s["run_id"] for s in invocations if s["calls"]}
    shown = {}
    for summary in (s for s in invocations if s["calls"]):
        history = _cli(home, "records", "show", summary["invocation_id"], "--json")
        [call] = history["calls"]
        shown[call["name"]] = (summary["invocation_id"], call)

    inv, call = shown["test_sampling"]
    [exchange] = call["relayed"]
    assert exchange["method"] == "sampling/createMessage" and exchange["outcome"] == "ok"
    assert exchange["call_id"] == call["call_id"] and exchange["invocation_id"] == inv
    assert exchange["request"]["messages"][0]["content"]["text"] == "say hi"
    assert exchange["request"]["maxTokens"] == 100
    assert exchange["result"]["model"] == "downstream-model"
    assert exchange["result"]["content"]["text"] == "echo say hi"
    text = _cli(home, "records", "show", inv)
    assert "relayed    sampling/createMessage ok:" in text

    _, call = shown["test_elicitation"]
    [exchange] = call["relayed"]
    assert exchange["method"] == "elicitation/create" and exchange["outcome"] == "ok"
    assert exchange["request"]["message"] == "Who are you?"
    assert exchange["request"]["requestedSchema"]["required"] == ["username", "email"]
    assert exchange["result"] == {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}

    events = _cli(home, "records", "events", run_id, "--json")
    kinds = [e["kind"] for e in events]
    assert kinds == ["mcp_relayed_request", "mcp_relayed_request", "mcp_resource_read"]
    assert events[2]["data"]["uri"] == "test://static-text" and events[2]["data"]["outcome"] == "ok"
    assert "text" not in events[2]["data"]  # a read is recorded without its contents
    assert "mcp_resource_read" in _cli(home, "records", "events", run_id)

    # No secret of the transport anywhere in the records: not the token, not a header.
    raw = (home / "records.sqlite").read_bytes() + b"".join(
        p.read_bytes() for p in home.glob("records.sqlite-*") if p.is_file())
    assert TOKEN.encode() not in raw
    assert b"authorization" not in raw.lower()

    # The calls still replay, as the provider's messages of the call and its result.
    inv, call = shown["test_sampling"]
    messages = _cli(home, "replay", inv, "--provider", "openai")
    assert messages[0]["tool_calls"][0]["function"]["name"] == "test_sampling"
    assert messages[1]["role"] == "tool" and messages[1]["content"] == "LLM response: echo say hi"
