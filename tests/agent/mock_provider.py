"""A loopback mock model provider: a real HTTP server on 127.0.0.1 (an ephemeral port) that records
every request and answers from a per-test script. It knows no wire format; the tests build the
bodies in the provider's own shape, so it serves OpenAI Chat, Responses, Anthropic and Gemini alike.

Use it as the `mock_provider` fixture (tests/agent/conftest.py) or as a context manager:

    with MockProvider() as mock:
        mock.script(
            Reply.error(429, {"error": {"message": "slow down"}}, headers={"retry-after": "1"}),
            Reply.json({"choices": [...], "usage": {...}}),               # a plain JSON answer
            Reply.sse([{"choices": [...]}, {"choices": [...]}]),          # `data: <json>` events + [DONE]
            Reply.sse([("message_start", {...}), ...], done=False),       # `event: <name>` + data (Anthropic)
            Reply.sse(chunks, delay=0.05, hang=True),                     # slow, then never ends
        )
        mock.reject_if(lambda req: "thoughtSignature" not in req.text,    # refuse a request that drops
                       400, {"error": {"message": "missing signature"}})  # what must come back
        ... point a client at mock.url (e.g. base_url = mock.url + "/v1") ...
        mock.requests[0].json            # the decoded body of the first request (also .path, .headers, .text)
        mock.wait_for(lambda: mock.disconnects)   # poll until the client closed a streaming answer

Script entries are consumed one per request in order (a rejected request consumes none); a callable
entry `fn(request) -> Reply` decides on the request itself; `mock.always(reply)` answers every
request once the script is used up (else the mock answers 500 `mock script exhausted` and notes it
in `mock.unexpected`). `requests` keeps every request, rejected ones too (`rejected=True`);
`disconnects` lists the numbers (1-based) of requests whose client went away before the answer
ended. `app` is the bare ASGI app, for in-process use with `httpx.ASGITransport`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn

Chunk = Mapping[str, Any] | str | tuple[str, Any]
"""An SSE chunk: a JSON object (sent as `data: <json>`), a `(event, object)` pair (`event:` + `data:`
lines), or a str sent verbatim (for malformed or hand-written streams: end it with a blank line)."""


def sse_text(chunk: Chunk) -> str:
    if isinstance(chunk, str):
        return chunk
    if isinstance(chunk, tuple):
        name, data = chunk
        return f"event: {name}\ndata: {orjson.dumps(data).decode()}\n\n"
    return f"data: {orjson.dumps(chunk).decode()}\n\n"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: tuple[str, ...] | None = None
    """SSE texts: the answer is streamed, one write per chunk."""
    delay: float = 0.0
    """Seconds before each chunk (and before a JSON body)."""
    hang: bool = False
    """After the chunks, keep the response open until the client disconnects."""

    @classmethod
    def json(cls, body: Any, status: int = 200, headers: Mapping[str, str] | None = None,
             delay: float = 0.0, hang: bool = False) -> Reply:
        return cls(status, {"content-type": "application/json", **(headers or {})}, orjson.dumps(body),
                   delay=delay, hang=hang)

    @classmethod
    def error(cls, status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Reply:
        if body is None:
            body = {"error": {"message": f"mock error {status}", "type": "mock"}}
        if isinstance(body, str | bytes):
            raw = body.encode() if isinstance(body, str) else body
            return cls(status, {"content-type": "text/plain", **(headers or {})}, raw)
        return cls.json(body, status, headers)

    @classmethod
    def sse(cls, chunks: Iterable[Chunk], *, done: bool | None = None, delay: float = 0.0, hang: bool = False,
            status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
        texts = [sse_text(c) for c in chunks]
        if done if done is not None else not hang:  # a hanging stream has no end marker unless asked
            texts.append("data: [DONE]\n\n")
        return cls(status, {"content-type": "text/event-stream", "cache-control": "no-cache", **(headers or {})},
                   chunks=tuple(texts), delay=delay, hang=hang)


@dataclass
class Request:
    number: int
    """1-based, in arrival order."""
    method: str
    path: str
    query: str
    headers: dict[str, str]
    raw: bytes
    at: float
    """time.monotonic() when the body had arrived."""
    rejected: bool = False

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def json(self) -> Any:
        return orjson.loads(self.raw) if self.raw else None


Script = Reply | Callable[[Request], Reply]


class MockProvider:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.disconnects: list[int] = []
        self.unexpected: list[str] = []
        self._script: deque[Script] = deque()
        self._always: Script | None = None
        self._rejects: list[tuple[Callable[[Request], bool], Reply]] = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- the script -------------------------------------------------------------------------------
    def script(self, *replies: Script) -> MockProvider:
        with self._lock:
            self._script.extend(replies)
        return self

    def always(self, reply: Script | None) -> MockProvider:
        self._always = reply
        return self

    def reject_if(self, predicate: Callable[[Request], bool], status: int = 400, body: Any = None) -> MockProvider:
        """Answer `status` with `body` (an error JSON by default) to every request `predicate` accepts."""
        self._rejects.append((predicate, Reply.error(status, body)))
        return self

    def bodies(self) -> list[Any]:
        """The decoded JSON body of every request, in order."""
        return [r.json for r in self.requests]

    def wait_for(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Poll `condition` until it is truthy (returns it) or fail after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"mock provider: condition not met within {timeout} s")
            time.sleep(0.01)

    async def await_for(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        """`wait_for` for async tests (does not block the event loop)."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"mock provider: condition not met within {timeout} s")
            await asyncio.sleep(0.01)

    def _choose(self, request: Request) -> Reply:
        with self._lock:
            for predicate, reply in self._rejects:
                if predicate(request):
                    request.rejected = True
                    return reply
            entry = self._script.popleft() if self._script else self._always
        if entry is None:
            self.unexpected.append(f"request {request.number} {request.path}: script exhausted")
            return Reply.error(500, {"error": {"message": "mock script exhausted"}})
        return entry(request) if callable(entry) else entry

    # -- ASGI -------------------------------------------------------------------------------------
    async def app(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        with self._lock:
            number = len(self.requests) + 1
            request = Request(number, scope["method"], scope["path"], scope.get("query_string", b"").decode(),
                              {k.decode().lower(): v.decode() for k, v in scope["headers"]}, bytes(body),
                              time.monotonic())
            self.requests.append(request)
        reply = self._choose(request)
        gone = asyncio.Event()

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        listener = asyncio.ensure_future(listen())
        try:
            headers = [(k.encode(), v.encode()) for k, v in reply.headers.items()]
            if reply.chunks is None:
                if reply.delay and await _wait(gone, reply.delay):
                    self.disconnects.append(number)
                    return
                if reply.hang:
                    headers.append((b"content-length", str(len(reply.body) + 1).encode()))
                await send({"type": "http.response.start", "status": reply.status, "headers": headers})
                await send({"type": "http.response.body", "body": reply.body, "more_body": reply.hang})
            else:
                await send({"type": "http.response.start", "status": reply.status, "headers": headers})
                for text in reply.chunks:
                    if reply.delay and await _wait(gone, reply.delay):
                        self.disconnects.append(number)
                        return
                    if gone.is_set():
                        self.disconnects.append(number)
                        return
                    await send({"type": "http.response.body", "body": text.encode(), "more_body": True})
            if reply.hang:
                await gone.wait()
                self.disconnects.append(number)
                return
            if reply.chunks is not None:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.cancel()

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> MockProvider:
        config = uvicorn.Config(self.app, host="127.0.0.1", log_level="warning", lifespan="off", interface="asgi3",
                                timeout_graceful_shutdown=1, access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True,
                                        name=f"mock-provider-{self.port}")
        self._thread.start()
        self.wait_for(lambda: self._server is not None and self._server.started, timeout=20)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        self._sock.close()

    def __enter__(self) -> MockProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _wait(gone: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds`; True when the client disconnected meanwhile."""
    try:
        await asyncio.wait_for(gone.wait(), seconds)
    except TimeoutError:
        return False
    return True
