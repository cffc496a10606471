"""Transport: retries with backoff and retry-after, error codes, timeouts, cancellation (against the mock)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time
from contextlib import aclosing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.agent.mock_provider import MockProvider, Reply
from tooldeck.agent.errors import ModelError
from tooldeck.agent.transport import Transport, error_detail, retry_after
from tooldeck.agent.types import ModelConfig

OK = {"ok": True}


def config(mock: MockProvider, **kw: object) -> ModelConfig:
    base = {"retry_base_delay": 0.01, "retry_max_delay": 5.0, "timeout": 10.0}
    return ModelConfig("m", "openai", "mock-model", base_url=mock.url, **{**base, **kw})  # type: ignore[arg-type]


async def post(mock: MockProvider, **kw: object) -> object:
    transport = Transport(config(mock, **kw), {"authorization": "Bearer sk-test"})
    try:
        return await transport.post_json(mock.url + "/v1/x", {"a": 1})
    finally:
        await transport.aclose()


async def test_429_with_retry_after_seconds_waits_then_succeeds(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(429, headers={"retry-after": "1"}), Reply.json(OK))
    assert await post(mock_provider) == OK
    first, second = mock_provider.requests
    assert second.at - first.at >= 0.9  # the asked second, not the 10 ms backoff
    assert first.json == second.json == {"a": 1}
    assert second.headers["authorization"] == "Bearer sk-test"


async def test_429_with_retry_after_http_date(mock_provider: MockProvider) -> None:
    # a date is whole seconds: rounded up, the wait is 2 s less however late the first request arrives
    # (truncated, a first request 0.4 s late on a loaded machine left less than 0.9 s)
    when = email.utils.formatdate(math.ceil(time.time()) + 2, usegmt=True)
    mock_provider.script(Reply.error(429, headers={"retry-after": when}), Reply.json(OK))
    assert await post(mock_provider) == OK
    first, second = mock_provider.requests
    assert second.at - first.at >= 0.9


async def test_retry_after_longer_than_the_cap_fails_at_once(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(429, {"error": {"message": "quota"}}, headers={"retry-after": "120"}))
    with pytest.raises(ModelError) as info:
        await post(mock_provider)
    assert info.value.code == "model.rate_limited"
    assert info.value.retry_after == 120
    assert "quota" in info.value.message
    assert len(mock_provider.requests) == 1


async def test_500_then_success(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(500), Reply.error(503, "upstream down"), Reply.json(OK))
    assert await post(mock_provider) == OK
    assert len(mock_provider.requests) == 3


async def test_5xx_until_the_retries_run_out(mock_provider: MockProvider) -> None:
    mock_provider.script(*[Reply.error(502, {"error": {"message": "bad gateway"}})] * 3)
    with pytest.raises(ModelError) as info:
        await post(mock_provider, max_retries=2)
    assert info.value.code == "model.http_error"
    assert info.value.status == 502 and info.value.attempts == 3
    assert "bad gateway" in info.value.message and "3 attempt" in info.value.message
    assert len(mock_provider.requests) == 3


async def test_400_is_not_retried_and_says_what_the_provider_said(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(400, {"error": {"message": "Unknown parameter: 'foo'."}}))
    with pytest.raises(ModelError) as info:
        await post(mock_provider)
    assert info.value.code == "model.http_error"
    assert "Unknown parameter: 'foo'." in info.value.message
    assert len(mock_provider.requests) == 1


async def test_401_is_auth_failed_and_never_shows_the_key(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(401, {"error": {"message": "Incorrect API key provided"}}))
    with pytest.raises(ModelError) as info:
        await post(mock_provider)
    assert info.value.code == "model.auth_failed"
    assert "sk-test" not in str(info.value)
    assert "sk-test" not in repr(config(mock_provider, api_key="sk-test"))


async def test_a_body_that_is_not_json(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply(200, {"content-type": "text/html"}, b"<html>"))
    with pytest.raises(ModelError) as info:
        await post(mock_provider)
    assert info.value.code == "model.bad_response"


async def test_connect_errors_are_retried_then_reported() -> None:
    mock = MockProvider()  # bound but never started: nothing listens... close it so the port refuses
    mock.stop()
    transport = Transport(ModelConfig("m", "openai", "x", base_url=mock.url, max_retries=2, retry_base_delay=0.01))
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    transport._sleep = sleep
    with pytest.raises(ModelError) as info:
        await transport.post_json(mock.url + "/v1/x", {})
    await transport.aclose()
    assert info.value.code == "model.connect_error"
    assert info.value.attempts == 3
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1] * 2  # exponential, jittered in the upper half
    assert 0.005 <= sleeps[0] <= 0.01 and 0.01 <= sleeps[1] <= 0.02


async def test_a_read_timeout_is_model_timeout(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.json(OK, delay=5), Reply.json(OK, delay=5))
    with pytest.raises(ModelError) as info:
        await post(mock_provider, timeout=0.3, max_retries=1)
    assert info.value.code == "model.timeout"
    assert len(mock_provider.requests) == 2
    await mock_provider.await_for(lambda: len(mock_provider.disconnects) == 2)  # both requests really closed


def test_backoff_is_capped() -> None:
    transport = Transport(ModelConfig("m", "openai", "x", retry_base_delay=1, retry_max_delay=4), jitter=lambda: 1.0)
    assert [transport.backoff(n) for n in range(5)] == [1, 2, 4, 4, 4]


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after": "3"}) == 3
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10
    assert retry_after({}) is None


async def test_cancelling_a_stream_closes_the_request(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.sse([{"n": 1}], hang=True))
    transport = Transport(config(mock_provider))
    got: list[str] = []

    async def consume() -> None:
        async with aclosing(transport.stream_sse(mock_provider.url + "/v1/x", {})) as events:
            async for event in events:
                got.append(event.data)

    task = asyncio.ensure_future(consume())
    await mock_provider.await_for(lambda: got)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await mock_provider.await_for(lambda: mock_provider.disconnects == [1])  # the server saw the client leave
    await transport.aclose()


async def test_stream_retries_an_error_status_before_the_first_event(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(429, headers={"retry-after-ms": "50"}),
                         Reply.sse([{"n": 1}, {"n": 2}]))
    transport = Transport(config(mock_provider))
    async with aclosing(transport.stream_sse(mock_provider.url + "/v1/x", {"q": 1})) as events:
        data = [e.data async for e in events]
    await transport.aclose()
    assert data == ['{"n":1}', '{"n":2}']
    assert [r.json for r in mock_provider.requests] == [{"q": 1}, {"q": 1}]
    assert mock_provider.requests[1].headers["accept"] == "text/event-stream"


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["retry-after", "retry-after-ms", "x"]),
                       st.text(max_size=40) | st.floats(allow_nan=True).map(str) | st.integers().map(str)))
def test_retry_after_never_raises_and_is_never_negative(headers: dict[str, str]) -> None:
    value = retry_after(headers, now=1e9)
    assert value is None or value >= 0


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.builds(lambda m: json.dumps({"error": {"message": m}}).encode(), st.text()))
def test_error_detail_of_any_body(body: bytes) -> None:
    detail = error_detail(body)
    assert isinstance(detail, str) and len(detail) <= 500
