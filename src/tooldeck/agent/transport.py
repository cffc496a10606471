"""HTTP to a model provider: the one place where HTTP errors become `model.*` codes.

`Transport` holds one `httpx.AsyncClient` per model configuration. `post_json` sends a JSON body
and returns the decoded JSON answer; `stream_sse` sends it and yields the server-sent events
(`agent/sse.py`). Both retry on 429, 408, 409 and 5xx statuses and on connection errors and
timeouts, with exponential backoff and jitter capped at `ModelConfig.retry_max_delay`, honouring
`retry-after-ms` / `retry-after` (seconds or an HTTP date): a wait the provider asks for that is
longer than the cap fails at once with `model.rate_limited` rather than hang the run. A stream is
retried only before its first event; a stream cut after that is `model.bad_response`.

Cancelling the awaiting task closes the HTTP request (the response's context exits), so the
provider sees the disconnect and stops generating.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Any

import httpx
import orjson

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.sse import SSEEvent, SSEParser, iter_sse
from tooldeck.agent.types import ModelConfig

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
ERROR_BODY_CHARS = 500

# A failure of the request itself → (code, what it means for the user); the first matching class wins.
_EXCEPTIONS: tuple[tuple[type[BaseException], str, str], ...] = (
    (httpx.TimeoutException, errors.TIMEOUT, "no answer within the timeout"),
    (httpx.ConnectError, errors.CONNECT_ERROR, "could not connect"),
    (httpx.RemoteProtocolError, errors.CONNECT_ERROR, "the connection was closed without a response"),
    (httpx.TransportError, errors.CONNECT_ERROR, "the request failed on the network"),
)


def classify(exc: BaseException) -> tuple[str, str] | None:
    for kind, code, what in _EXCEPTIONS:
        if isinstance(exc, kind):
            return code, what
    return None


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds: `retry-after-ms`, else `retry-after` as seconds or an
    HTTP date; None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
        return seconds if seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_detail(body: bytes) -> str:
    """The provider's own error message out of an error body (JSON `error.message`, `message`, or text)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return text[:ERROR_BODY_CHARS]
    if isinstance(data, list) and data and isinstance(data[0], dict):  # Gemini wraps errors in a list sometimes
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:ERROR_BODY_CHARS]
        if isinstance(err, str):
            return err[:ERROR_BODY_CHARS]
    return body.decode("utf-8", "replace")[:ERROR_BODY_CHARS]


def status_error(status: int, body: bytes, attempts: int, wait: float | None, label: str) -> ModelError:
    detail = error_detail(body)
    said = f": {detail}" if detail else ""
    if status in (401, 403):
        return ModelError(errors.AUTH_FAILED, f"{label} refused the API key (HTTP {status}){said}; check the key "
                          "variable of this model (e.g. OPENAI_API_KEY) and its access to the model",
                          status=status, attempts=attempts)
    if status == 429:
        return ModelError(errors.RATE_LIMITED, f"{label} is rate limiting (HTTP 429) after {attempts} attempt(s)"
                          f"{said}; wait and run again, or raise max_retries / retry_max_delay",
                          status=status, attempts=attempts, retry_after=wait)
    hint = "check the model name and options" if 400 <= status < 500 else "the provider failed; run again later"
    return ModelError(errors.HTTP_ERROR, f"{label} answered HTTP {status} after {attempts} attempt(s){said}; {hint}",
                      status=status, attempts=attempts)


class Transport:
    """POST JSON to one provider with retries; `headers` are the provider's own (auth, version)."""

    def __init__(self, config: ModelConfig, headers: Mapping[str, str] | None = None, *,
                 client: httpx.AsyncClient | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 jitter: Callable[[], float] = random.random) -> None:
        self.config = config
        self.label = f"model {config.name!r} ({config.provider})"
        merged = {"content-type": "application/json", **dict(headers or {}), **dict(config.headers)}
        self.headers = merged
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout),
            limits=httpx.Limits(max_keepalive_connections=4, keepalive_expiry=60.0))
        self._own_client = client is None
        self._sleep = sleep
        self._jitter = jitter

    # -- retries ---------------------------------------------------------------------------------
    def backoff(self, attempt: int) -> float:
        """The wait before retry number `attempt` (0-based): exponential, capped, with jitter in its upper half."""
        cfg = self.config
        ceiling = min(cfg.retry_max_delay, cfg.retry_base_delay * (2 ** attempt))
        return ceiling * (0.5 + 0.5 * self._jitter())

    async def _wait(self, attempt: int, asked: float | None, fail: Callable[[], ModelError]) -> None:
        """Wait before the next attempt, or raise `fail()` when no attempt is left or the asked wait is too long."""
        if attempt >= self.config.max_retries:
            raise fail()
        if asked is not None and asked > self.config.retry_max_delay:
            raise fail()
        await self._sleep(asked if asked is not None else self.backoff(attempt))

    def _request_failed(self, exc: Exception, attempts: int) -> ModelError:
        code, what = classify(exc) or (errors.CONNECT_ERROR, "the request failed")
        where = self.config.base_url or "the provider's endpoint"
        return ModelError(code, f"{self.label}: {what} ({type(exc).__name__}: {exc}) after {attempts} attempt(s); "
                          f"check that {where} is reachable, or raise the model's timeout", attempts=attempts)

    def _encode(self, body: Mapping[str, Any]) -> bytes:
        return orjson.dumps(body)

    # -- requests --------------------------------------------------------------------------------
    async def post_json(self, url: str, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Any:
        content = self._encode(body)
        hdrs = {**self.headers, **dict(headers or {})}
        attempt = 0
        while True:
            try:
                response = await self.client.post(url, content=content, headers=hdrs)
            except httpx.TransportError as exc:
                await self._wait(attempt, None, lambda e=exc, n=attempt + 1: self._request_failed(e, n))
                attempt += 1
                continue
            if response.status_code >= 300:
                status, data = response.status_code, response.content
                wait = retry_after(response.headers)
                fail = lambda s=status, d=data, n=attempt + 1, w=wait: status_error(s, d, n, w, self.label)  # noqa: E731
                if status not in RETRY_STATUSES:
                    raise fail()
                await self._wait(attempt, wait, fail)
                attempt += 1
                continue
            try:
                return orjson.loads(response.content)
            except orjson.JSONDecodeError:
                raise ModelError(errors.BAD_RESPONSE, f"{self.label} answered with a body that is not JSON: "
                                 f"{response.content[:200]!r}", status=response.status_code,
                                 attempts=attempt + 1) from None

    async def stream_sse(self, url: str, body: Mapping[str, Any],
                         headers: Mapping[str, str] | None = None) -> AsyncIterator[SSEEvent]:
        """The events of a streamed answer. Retries happen before the first event only."""
        content = self._encode(body)
        hdrs = {**self.headers, "accept": "text/event-stream", **dict(headers or {})}
        attempt = 0
        while True:
            request = self.client.build_request("POST", url, content=content, headers=hdrs)
            try:
                response = await self.client.send(request, stream=True)
            except httpx.TransportError as exc:
                await self._wait(attempt, None, lambda e=exc, n=attempt + 1: self._request_failed(e, n))
                attempt += 1
                continue
            try:
                if response.status_code >= 300:
                    status = response.status_code
                    try:
                        data = await response.aread()
                    except httpx.TransportError:
                        data = b""
                    wait = retry_after(response.headers)
                    fail = lambda s=status, d=data, n=attempt + 1, w=wait: status_error(s, d, n, w, self.label)  # noqa: E731
                    if status not in RETRY_STATUSES:
                        raise fail()
                    await response.aclose()
                    await self._wait(attempt, wait, fail)
                    attempt += 1
                    continue
                try:  # closed explicitly: a generator left to the GC is closed by a task on a loop that may be gone
                    async with aclosing(response.aiter_text()) as chunks, aclosing(iter_sse(chunks)) as events:
                        async for event in events:
                            yield event
                except httpx.TransportError as exc:
                    code, what = classify(exc) or (errors.CONNECT_ERROR, "the stream failed")
                    if code == errors.CONNECT_ERROR:
                        code, what = errors.BAD_RESPONSE, "the stream was cut before its end"
                    raise ModelError(code, f"{self.label}: {what} ({type(exc).__name__}); run again",
                                     status=response.status_code, attempts=attempt + 1) from exc
                return
            finally:
                await response.aclose()

    async def aclose(self) -> None:
        if self._own_client:
            await self.client.aclose()


def join_url(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


__all__ = ["RETRY_STATUSES", "SSEEvent", "SSEParser", "Transport", "classify", "iter_sse", "join_url", "retry_after",
           "status_error"]
