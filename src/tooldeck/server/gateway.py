"""The ASGI layer in front of the MCP app of `tooldeck serve --http`, in this order:

1. the size of the request line and headers (431 `serve.headers_too_large`), then the request checks of
   `security.HttpGuard` (one value per deciding header, the target, Host, Origin,
   token); a refusal is answered here and the MCP app never sees the request;
2. the body: a `POST` must be `application/json` (415 `serve.content_type_invalid`); its body is read
   here, at most `max_body_bytes` (413 `serve.body_too_large`, judged on Content-Length before reading when
   it is declared), and handed on: a 2026-07-28 `tools/call` to the HTTP lane (`http_lane.py`), which serves
   it beside the SDK's handler, everything else to the MCP app;
3. the session cap (`session_cap.SessionCap`): a request that opens a session (`initialize` without a
   session id, handshake era) first closes the least recently used idle session when the cap is reached,
   or is refused with 503 `serve.session_limit` when every session is busy; requests of a session keep
   its place in the LRU order; a session that ends (`DELETE`, or 404 from the SDK) is forgotten;
4. error answers the app gives without a body (the SDK's 2026-era 405 and 406) get one that says what
   was wrong (`serve.method_not_allowed`, `serve.not_acceptable`, ...);
5. a last net: an exception that escapes the app becomes a JSON 500 `serve.internal_error` (logged with
   its traceback) instead of uvicorn's text page.

Every answer given here is `{"error": {"code": ..., "message": ...}}` with a stable code.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tooldeck.server.address import MCP_PATH
from tooldeck.server.http_lane import HttpLane
from tooldeck.server.security import HttpGuard, Refusal
from tooldeck.server.session_cap import SESSION_LIMIT, SessionCap

logger = logging.getLogger("tooldeck.serve")

BODY_TOO_LARGE = "serve.body_too_large"
HEADERS_TOO_LARGE = "serve.headers_too_large"
CONTENT_TYPE_INVALID = "serve.content_type_invalid"
EMPTY_ERRORS: dict[int, tuple[str, str]] = {
    400: ("serve.bad_request", "The MCP transport refused this request."),
    404: ("serve.not_found", "Nothing is served here; MCP is at /mcp (an unknown session id is 404 too)."),
    405: ("serve.method_not_allowed", "This method is not allowed here; the `Allow` header lists the ones that are."),
    406: ("serve.not_acceptable", "Send `Accept: application/json, text/event-stream` (both; a 2026-07-28 request "
                                  "needs at least application/json)."),
}
_KEPT_ON_ERRORS = frozenset({b"allow", b"www-authenticate", b"retry-after", b"mcp-session-id"})
INTERNAL_ERROR = "serve.internal_error"
_OPENING_VERSIONS = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


async def respond(send: Send, status: int, code: str, message: str,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def opens_session(headers: dict[str, str], body: bytes) -> bool:
    """A handshake-era `initialize` without a session id: the SDK would open a session for it."""
    version = headers.get("mcp-protocol-version")
    if (version is not None and version not in _OPENING_VERSIONS) or b'"initialize"' not in body:
        return False
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    messages = message if isinstance(message, list) else [message]
    return any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)


class HttpGateway:
    def __init__(self, app: ASGIApp, guard: HttpGuard, max_body_bytes: int, max_header_bytes: int = 16 * 1024,
                 sessions: SessionCap | None = None,
                 on_session_end: Callable[[str], Awaitable[None] | None] | None = None,
                 lane: HttpLane | None = None) -> None:
        self.app = app
        self.lane = lane
        self.guard = guard
        self.max_body_bytes = max_body_bytes
        self.max_header_bytes = max_header_bytes
        self.sessions = sessions
        self.on_session_end = on_session_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = False  # something reached the client
        held: Message | None = None  # an error start without a body type, waiting for its body

        async def forward(message: Message) -> None:
            nonlocal sent
            sent = True
            await send(message)

        async def fill(start: Message) -> None:
            status = start["status"]
            code, text = EMPTY_ERRORS.get(status, (f"serve.http_{status}", "The request was refused."))
            kept = tuple((k, v) for k, v in start.get("headers", ()) if k.lower() in _KEPT_ON_ERRORS)
            await respond(forward, status, code, text, kept)

        async def watched(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and message["status"] >= 400 and not any(
                    k.lower() == b"content-type" for k, _ in message.get("headers", ())):
                held = message
                return
            if held is not None:
                start, held = held, None
                if message["type"] == "http.response.body" and not message.get("body") \
                        and not message.get("more_body"):
                    await fill(start)
                    return
                await forward(start)
            await forward(message)

        try:
            await self._handle(scope, receive, watched)
            if held is not None:  # the app ended after a start without a body
                await fill(held)
        except Exception:
            logger.exception("HTTP request failed inside tooldeck serve: %s %s", scope.get("method"),
                             str(scope.get("path"))[:200])
            if not sent:
                await respond(send, 500, INTERNAL_ERROR,
                              "tooldeck serve failed on this request; the details are in the server log.")

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        # h11's own limit holds only while headers are still arriving; a block that came whole is measured here.
        size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        for name, value in scope["headers"]:
            size += len(name) + len(value) + 4
        if size > self.max_header_bytes:
            await self._refuse(scope, send, Refusal(
                431, HEADERS_TOO_LARGE, f"The request line and headers are over {self.max_header_bytes} bytes "
                                        "([serve] max_header_bytes). Send smaller headers."))
            return
        refused, headers, path = self.guard.request_refusal(scope["headers"], scope.get("raw_path") or b"")
        if refused is not None:
            await self._refuse(scope, send, refused)
            return
        if path is not None:  # an absolute-form target that names this server
            scope = {**scope, "path": path, "raw_path": path.encode()}
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(scope, send)
            return
        body = b""
        if scope["method"] == "POST":
            if not headers.get("content-type", "").lower().lstrip().startswith("application/json"):
                await self._refuse(scope, send, Refusal(
                    415, CONTENT_TYPE_INVALID,
                    f"Content-Type {headers.get('content-type', '')[:100]!r} is not JSON. POST one JSON-RPC message "
                    "with `Content-Type: application/json`."))
                return
            read = await self._read_body(receive)
            if read is None:
                return  # the client went away (or its body timed out): nobody to answer
            if read is False:
                await self._too_large(scope, send)
                return
            body = read
            receive = _replay(body, receive)
            if self.lane is not None and (call := self.lane.prepare(scope, receive, body)) is not None:
                await self.lane.run(call, scope, send)
                return
        session_id = headers.get("mcp-session-id")
        if self.sessions is None:
            await self.app(scope, receive, send)
        elif session_id is not None:
            await self._in_session(session_id, scope, receive, send)
        elif scope["method"] == "POST" and opens_session(headers, body):
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    # -- sessions -----------------------------------------------------------------------------------
    async def _in_session(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        sessions = self.sessions
        assert sessions is not None
        tracked = sessions.begin(session_id)
        gone = scope["method"] == "DELETE"

        async def watch(message: Message) -> None:
            nonlocal gone
            if message["type"] == "http.response.start" and message["status"] == 404:
                gone = True  # the SDK no longer knows it (idle timeout, or closed)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if tracked:
                sessions.end(session_id)
        if gone:
            sessions.drop(session_id)
            await self._ended(session_id)

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        sessions = self.sessions
        assert sessions is not None
        victims = sessions.admit()
        if victims is None:
            logger.warning("refused a new MCP session: all %d sessions are busy", sessions.max_sessions)
            await respond(send, 503, SESSION_LIMIT,
                          f"tooldeck serve has {sessions.max_sessions} MCP sessions open and every one is in use. "
                          "Retry later, end a session you no longer need (HTTP DELETE), or raise "
                          "[serve] max_sessions.", ((b"retry-after", b"5"),))
            return
        for victim in victims:
            await self._close_session(victim)
        opened: str | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400 and opened is None:
                opened = next((v.decode("latin-1") for k, v in message.get("headers", ())
                               if k.lower() == b"mcp-session-id"), None)
                if opened is not None:
                    sessions.opened(opened)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if opened is None:
                sessions.not_opened()
            else:
                sessions.end(opened)

    async def _close_session(self, session_id: str) -> None:
        """End a session as the client's own `DELETE` would (through the MCP app, so the SDK closes it)."""
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": "DELETE", "scheme": "http", "path": MCP_PATH, "raw_path": MCP_PATH.encode(),
            "root_path": "", "query_string": b"", "headers": [(b"mcp-session-id", session_id.encode())],
            "client": None, "server": None, "state": {},
        }

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(_message: Message) -> None:
            return None

        await self.app(scope, receive, discard)
        logger.info("closed idle MCP session %s to make room (max_sessions %d)", session_id,
                    self.sessions.max_sessions if self.sessions else 0)
        await self._ended(session_id)

    async def _ended(self, session_id: str) -> None:
        if self.on_session_end is not None:
            done = self.on_session_end(session_id)
            if done is not None:
                await done

    # -- helpers --------------------------------------------------------------------------------------
    async def _read_body(self, receive: Receive) -> bytes | bool | None:
        """The whole body; False past the limit; None when the client disconnected first."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return False
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _too_large(self, scope: Scope, send: Send) -> None:
        await self._refuse(scope, send, Refusal(
            413, BODY_TOO_LARGE,
            f"The request body is larger than {self.max_body_bytes} bytes ([serve] max_body_bytes). Send a "
            "smaller request."))

    async def _refuse(self, scope: Scope, send: Send, refused: Refusal) -> None:
        logger.warning("refused %s %s: %s", scope.get("method"), str(scope.get("path"))[:200], refused.code)
        extra = ((b"www-authenticate", b'Bearer realm="tooldeck"'),) if refused.status == 401 else ()
        await respond(send, refused.status, refused.code, refused.message, extra)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the already-read body once, then whatever the client sends next (disconnect)."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
