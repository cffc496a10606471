"""A 2026-07-28 client of `tooldeck serve` gets an upstream server's sampling, elicitation and roots requests mid-call
as an `InputRequiredResult`, and its retry carries the answers back while the upstream call waits
(server/held_calls.py). Real processes: official SDK client (`mode="auto"`, which drives the retries) →
`tooldeck serve` (stdio and streamable HTTP) → the SDK fixture server (`--relay`, handshake era upstream)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.server.support import http_server, stdio_params
from tests.server.test_relayed_requests import (
    DEADLINE_S,
    Downstream,
    Named,
    _home,
    _text,
    _two_sampling_calls,
    _upstream_http,
)
from tooldeck.records.store import SqliteRecorder


async def _listed(client: Client) -> None:
    with anyio.fail_after(DEADLINE_S):
        while not any(t.name == "mcp__fx__ask_model" for t in (await client.list_tools()).tools):
            await anyio.sleep(0.2)


def _callbacks(seen: Downstream) -> dict[str, Any]:
    return {"sampling_callback": seen.sampling, "elicitation_callback": seen.elicitation,
            "list_roots_callback": seen.roots}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_upstream_requests_reach_a_2026_client_and_its_answers_go_back(tmp_path: Path, transport: str) -> None:
    seen = Downstream()
    home = _home(tmp_path)
    with http_server(home) if transport == "http" else _nothing() as served:
        target = served.url if served is not None else stdio_params(home)
        async with Client(target, mode="auto", read_timeout_seconds=DEADLINE_S, **_callbacks(seen)) as client:
            assert client.protocol_version == "2026-07-28"
            await _listed(client)
            with anyio.fail_after(DEADLINE_S):
                sampled = await client.call_tool("mcp__fx__ask_model", {"prompt": "what is 2+2"})
                form = await client.call_tool("mcp__fx__ask_user", {"question": "Your name?"})
                url = await client.call_tool("mcp__fx__ask_url", {"url": "https://example.test/login"})
                roots = await client.call_tool("mcp__fx__roots", {})
    assert _text(sampled) == "model downstream-model said: echo what is 2+2"
    assert _text(form) == "accept: {'name': 'Ada'}"
    assert _text(url) == "url decline"
    assert _text(roots) == "roots: project=file:///work/project"
    assert [m.content.text for m in seen.sampled[0].messages] == ["what is 2+2"]  # type: ignore[union-attr]
    form_params, url_params = seen.elicited
    assert isinstance(form_params, types.ElicitRequestFormParams) and form_params.message == "Your name?"
    assert isinstance(url_params, types.ElicitRequestURLParams) and url_params.url == "https://example.test/login"
    assert url_params.elicitation_id is None  # removed from the wire at 2026-07-28
    assert seen.roots_asked == 1
    # recorded as for a handshake-era client: each exchange, and one call per tools/call (the retries are the
    # same call, not new ones)
    store = SqliteRecorder(home / "records.sqlite")
    try:
        calls = [c for s in store.list_invocations(50) for c in store.history(s.invocation_id).calls]
        assert sorted(c.call_name for c in calls) == sorted(["mcp__fx__ask_model", "mcp__fx__ask_user",
                                                        "mcp__fx__ask_url", "mcp__fx__roots"])
        assert all(c.status == "completed" for c in calls)
        [run] = {s.run_id for s in store.list_invocations(50)}
        methods = [e["method"] for e in store.run_events(run, "mcp_relayed_request")]
        assert sorted(methods) == sorted(["sampling/createMessage", "elicitation/create", "elicitation/create",
                                          "roots/list"])
    finally:
        store.close()


async def test_two_2026_clients_in_flight_at_once_each_answer_their_own_call(tmp_path: Path) -> None:
    """Over an HTTP upstream (a handshake-era stdio upstream cannot tell two calls' requests apart: refused)."""
    alice, bob = Named("alice-model"), Named("bob-model")
    async with _upstream_http(tmp_path) as home:
        await _two_clients(home, alice, bob, tmp_path / "gate")
    assert [p.messages[0].content.text for p in alice.sampled] == ["one"]  # type: ignore[union-attr]
    assert [p.messages[0].content.text for p in bob.sampled] == ["two"]  # type: ignore[union-attr]


async def _two_clients(home: Path, alice: Named, bob: Named, gate: Path) -> None:
    with http_server(home) as served:
        async with (Client(served.url, mode="auto", read_timeout_seconds=DEADLINE_S,
                           sampling_callback=alice.sampling) as first,
                    Client(served.url, mode="auto", read_timeout_seconds=DEADLINE_S,
                           sampling_callback=bob.sampling) as second):
            await _listed(first)
            one, two = await _two_sampling_calls(first, second, gate)
    assert (one, two) == ("model alice-model said: echo one", "model bob-model said: echo two")


async def test_a_2026_client_without_the_capability_gets_the_upstream_a_clear_error(tmp_path: Path) -> None:
    with http_server(_home(tmp_path)) as served:
        async with Client(served.url, mode="auto", read_timeout_seconds=DEADLINE_S) as client:
            await _listed(client)
            with anyio.fail_after(DEADLINE_S):
                sampled = await client.call_tool("mcp__fx__ask_model", {"prompt": "hi"})
    assert "did not declare it (capability `sampling` missing)" in _text(sampled)


async def test_a_retry_naming_no_held_call_runs_nothing_and_says_to_call_again(tmp_path: Path) -> None:
    seen = Downstream()
    with http_server(_home(tmp_path)) as served:
        async with Client(served.url, mode="auto", read_timeout_seconds=DEADLINE_S, **_callbacks(seen)) as client:
            await _listed(client)
            result = await client.session.call_tool(
                "mcp__fx__ask_model", {"prompt": "hi"}, request_state="held:nosuchcall.0000",
                input_responses={}, allow_input_required=True)
    assert result.is_error and (result.meta or {}).get("tooldeck/error_code") == "serve.input_state_unknown"
    assert "Call the tool again from the start" in _text(result)
    assert seen.sampled == []


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


async def test_a_held_call_whose_client_never_answers_ends_with_the_upstream_timeout(tmp_path: Path) -> None:
    home = _home(tmp_path)
    entry = json.loads((home / "mcp.json").read_text())
    entry["mcpServers"]["fx"]["call_timeout_s"] = 2.0
    (home / "mcp.json").write_text(json.dumps(entry))
    seen = Downstream()
    with http_server(home) as served:
        async with Client(served.url, mode="auto", read_timeout_seconds=DEADLINE_S, **_callbacks(seen)) as client:
            await _listed(client)
            first = await client.session.call_tool("mcp__fx__ask_model", {"prompt": "hi"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and list(first.input_requests or {}) == ["upstream_1"]
            state = first.request_state
            assert state is not None and state.startswith("held:")
            # The client never answers: the upstream call ends with its own timeout, and so does the held call.
            store = SqliteRecorder(home / "records.sqlite")
            try:
                with anyio.fail_after(DEADLINE_S):
                    while not [c for s in store.list_invocations(50) for c in store.history(s.invocation_id).calls
                               if c.status != "started"]:
                        await anyio.sleep(0.2)
                [call] = [c for s in store.list_invocations(50) for c in store.history(s.invocation_id).calls]
                assert call.status == "outcome_unknown" and call.result is not None
                # the SDK's timeout, or (on a loaded machine) tooldeck's own one a grace second later
                assert call.result.error_code in ("mcp.call_timeout", "mcp.call_outcome_unknown")
                recorded = call.result.error_code
            finally:
                store.close()
            late = await client.session.call_tool("mcp__fx__ask_model", {"prompt": "hi"}, request_state=state,
                                                  input_responses={}, allow_input_required=True)
    assert isinstance(late, types.CallToolResult) and late.is_error  # the timeout, kept for the late retry
    assert (late.meta or {}).get("tooldeck/error_code") == recorded
    assert seen.sampled == []
