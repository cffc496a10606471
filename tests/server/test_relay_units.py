"""The parts of the request relay that read what a client sent: the progress token of a `tools/call`, and the
log-level filter. Any `_meta` shape is read without raising; only a string or integer token is taken."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import mcp_types as types
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import LOG_LEVEL_META_KEY

from tooldeck.runtime import Runtime
from tooldeck.server.relay_requests import LEVELS, exchange_event, progress_token, request_log_level
from tooldeck.server.upstream import UpstreamRelay

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=3), max_leaves=8)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["_meta", "name", "arguments"]),
                       _JSON | st.dictionaries(st.sampled_from(["progressToken", "x"]), _JSON, max_size=2),
                       max_size=3))
def test_any_raw_params_give_a_token_or_none(params: dict[str, Any]) -> None:
    token = progress_token(params)
    meta = params.get("_meta")
    raw = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(raw, str | int) and not isinstance(raw, bool):
        assert token == raw
    else:
        assert token is None


@settings(derandomize=True, max_examples=100, deadline=None)
@given(st.one_of(st.text(max_size=10), st.integers()))
def test_typed_params_give_the_clients_token(token: str | int) -> None:
    params = types.CallToolRequestParams.model_validate({"name": "t", "_meta": {"progressToken": token}})
    assert progress_token(params) == token
    assert progress_token(types.CallToolRequestParams(name="t")) is None


def test_levels_are_the_spec_order() -> None:
    assert LEVELS == ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=20), st.sampled_from(LEVELS),
                 st.dictionaries(st.text(max_size=40), st.one_of(st.sampled_from(LEVELS), st.text(max_size=10),
                                                                 st.integers(), st.none()), max_size=4)))
def test_request_log_level_of_any_meta_is_a_level_or_none(meta: Any) -> None:
    for params in ({"_meta": meta}, {"_meta": {LOG_LEVEL_META_KEY: meta}}, {}, meta):
        level = request_log_level(params)
        assert level is None or level in LEVELS
    assert request_log_level({"_meta": {LOG_LEVEL_META_KEY: "notice"}}) == "notice"


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.text(max_size=60), st.text(max_size=30), st.text(max_size=30))
def test_a_recorded_url_elicitation_keeps_no_query_nor_fragment(path: str, query: str, fragment: str) -> None:
    url = f"https://auth.example/{path}?{query}#{fragment}"
    params = types.ElicitRequestURLParams(message="Sign in", url=url, elicitation_id="el-1")
    event = exchange_event(types.ElicitRequest(params=params), types.ElicitResult(action="accept"))
    recorded = event["request"]["url"]
    assert "?" not in recorded and "#" not in recorded and recorded.startswith("https://auth.example/")
    assert event["outcome"] == "ok" and event["result"] == {"action": "accept"}


def test_a_refused_request_is_recorded_with_its_code() -> None:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=5,
                                                                                 _meta={"progressToken": "t"}))
    refused = types.ErrorData(code=types.INVALID_REQUEST, message="no", data={"code": "serve.capability_missing"})
    event = exchange_event(request, refused)
    assert event == {"method": "sampling/createMessage", "outcome": "error",
                     "request": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                                 "maxTokens": 5},
                     "error": {"code": types.INVALID_REQUEST, "message": "no", "data_code": "serve.capability_missing"}}


class _SlowSubscriber:
    """A subscribed client slow to take `resources/updated` (each send waits for `release`)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.sends: list[str] = []
        self.in_flight = 0
        self.peak = 0

    async def send_resource_updated(self, uri: str) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.release.wait()
            self.sends.append(uri)
        finally:
            self.in_flight -= 1


async def test_a_flood_of_resource_updates_costs_one_pending_send_and_the_last_one_is_told(tmp_path: Path) -> None:
    relay = UpstreamRelay(Runtime(tmp_path, builtins=[], records=False))
    slow, quick = _SlowSubscriber(), _SlowSubscriber()
    quick.release.set()
    key = ("fx", "file:///a")
    relay.subscribers[key] = {("s1", "file:///a"): slow, ("s2", "file:///a"): quick}
    updated = relay._updated(key)  # what the upstream subscription calls for each notification
    for _ in range(1_000):
        updated("file:///a")
        await asyncio.sleep(0)
    assert slow.peak == 1 and len(relay._pending) <= 2
    slow.release.set()
    for _ in range(20):
        await asyncio.sleep(0)
    # the slow client hears of the first update and once more of those that came while it was told of it
    assert slow.sends == ["file:///a", "file:///a"]
    assert 2 <= len(quick.sends) <= 1_000 and quick.peak == 1
    assert relay._pending == set() and relay._in_flight == {}
    relay.runtime.close()
