"""The downstream end of what upstream MCP servers send during a call (`sources.mcp.callbacks`): the client of
the `tooldeck serve` session whose `tools/call` made the upstream call.

- `sampling/createMessage`, `elicitation/create` (form and URL), `roots/list`: sent to this client as a request
  related to its call (HTTP: on the call's stream), the answer returned upstream as it came. A client that
  did not declare the capability is not asked: the upstream request fails with an error naming it. A
  2026-07-28 client cannot be sent requests mid-call: it gets the request in an `InputRequiredResult` and
  answers it by retrying its call, which is held meanwhile (`held_calls.py`).
- `notifications/progress`: sent only when the client's call carried a progress token, with that token
  (the upstream hop has its own), so two calls' progress never cross.
- `notifications/message`: relayed on the call's stream, at the level the client set (`logging/setLevel`;
  a 2026-07-28 client gets what its request opted in to, as the SDK's sender decides).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger("tooldeck.serve")
T = TypeVar("T")

CAPABILITY_MISSING = "serve.capability_missing"
"""`data.code` of the error an upstream request gets when the client of the call cannot be asked."""

RELAYED_EVENT = "mcp_relayed_request"
"""Kind of the run event that records one relayed request and its answer."""
Record = Callable[[str, dict[str, Any]], None]

LEVELS: tuple[types.LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert",
                                          "emergency")


class DownstreamPeer:
    """One downstream `tools/call`: its session, request id, progress token and protocol version."""

    def __init__(self, session: Any, request_id: types.RequestId | None, progress_token: types.ProgressToken | None,
                 protocol_version: str | None, log_level: types.LoggingLevel | None = None,
                 request_log_level: types.LoggingLevel | None = None, record: Record | None = None,
                 held: Any = None) -> None:
        self.session = session
        self.held = held
        """The `HeldCall` of a 2026-07-28 client that can be asked (through `InputRequiredResult`); else None."""
        self.record = record
        """Records each relayed request and its answer (`exchange_event`); None with records off."""
        self.request_id = request_id
        self.progress_token = progress_token
        self.modern = protocol_version in MODERN_PROTOCOL_VERSIONS
        self.log_level = log_level
        self.upstream_log_level = request_log_level if self.modern else (log_level or "debug")
        """The lowest level to ask a 2026-07-28 upstream for: a 2026-07-28 client's own opt-in for this request; a
        handshake-era client gets every level until it sets one (as from a server of its own era)."""
        self.loop = asyncio.get_running_loop()
        """The server's loop: the session's streams belong to it, the upstream callbacks run on the MCP loop."""

    async def _home(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the server's loop (cancelling the caller cancels it)."""
        if asyncio.get_running_loop() is self.loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def _declared(self, capability: types.ClientCapabilities) -> bool:
        try:
            return bool(self.session.check_client_capability(capability))
        except Exception:  # a session shape we do not know: do not ask
            return False

    def rebind(self, session: Any, request_id: types.RequestId | None, token: types.ProgressToken | None) -> None:
        """A held call's later request (the client's retry): its notifications go there from now on."""
        self.session, self.request_id, self.progress_token = session, request_id, token

    def _refused(self, what: str, capability: str) -> types.ErrorData | None:
        declared = types.ClientCapabilities(**{capability: _CAPABILITIES[capability]()})
        if not self._declared(declared):
            return _refusal(what, capability, "the MCP client of this `tooldeck serve` session did not declare it")
        return None

    async def _ask(self, request: Any, result_type: type[Any]) -> Any:
        if self.held is not None:  # 2026-07-28: an InputRequiredResult to the client, answered by its retry
            return await self._home(self.held.ask(request))
        metadata = ServerMessageMetadata(related_request_id=self.request_id)
        try:
            return await self._home(self.session.send_request(request, result_type, metadata=metadata))
        except Exception as exc:  # the client's error (or its absence) goes upstream as an MCP error
            error = getattr(exc, "error", None)
            if isinstance(error, types.ErrorData):
                return error
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=f"the MCP client of this `tooldeck serve` session did not answer: {exc}")

    async def _relay(self, request: Any, capability: str, result_type: type[Any]) -> Any:
        """Ask the client (unless it cannot be asked) and record the exchange, whatever its outcome."""
        answer = self._refused(request.method, capability)
        if answer is None:
            answer = await self._ask(request, result_type)
        if self.record is not None:
            self._record(RELAYED_EVENT, exchange_event(request, answer))
        return answer

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        record = self.record
        assert record is not None

        def write() -> None:
            try:
                record(kind, data)
            except Exception:  # the request was relayed and answered; a failed record is logged, not undone
                logger.exception("recording a relayed %s failed", data.get("method"))

        # On the server's loop, where the session's other records are written (this runs on the MCP loop), and
        # before the call's own result gets there.
        if asyncio.get_running_loop() is self.loop:
            write()
        else:
            self.loop.call_soon_threadsafe(write)

    async def sampling(self, params: types.CreateMessageRequestParams) -> Any:
        return await self._relay(types.CreateMessageRequest(params=params), "sampling", types.CreateMessageResult)

    async def elicitation(self, params: types.ElicitRequestParams) -> Any:
        return await self._relay(types.ElicitRequest(params=params), "elicitation", types.ElicitResult)

    async def roots(self) -> Any:
        return await self._relay(types.ListRootsRequest(), "roots", types.ListRootsResult)

    def _detached(self) -> bool:
        """A held call between two requests of its client: nothing can carry a notification to it."""
        return self.held is not None and not self.held.attached

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.progress_token is None or self._detached():
            return  # the client asked for no progress on this call, or no request of it is open
        await self._home(self.session.send_progress_notification(self.progress_token, progress, total, message,
                                                                 related_request_id=self.request_id))

    async def log_message(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.log_level is not None and LEVELS.index(params.level) < LEVELS.index(self.log_level):
            return
        if self._detached():
            return
        await self._home(self._log(params))

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        # The SDK's sender applies a 2026-07-28 client's per-request opt-in (`_meta` log level); deprecated there.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self.session.send_log_message(params.level, params.data, params.logger,
                                                related_request_id=self.request_id)


_CAPABILITIES: dict[str, type[Any]] = {
    "sampling": types.SamplingCapability,
    "elicitation": types.ElicitationCapability,
    "roots": types.RootsCapability,
}


def _refusal(what: str, capability: str, why: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, data={"code": CAPABILITY_MISSING}, message=(
        f"tooldeck serve cannot relay {what} to its client: {why} (capability `{capability}` missing)."))


_ASKABLE = tuple(types.ClientCapabilities(**{capability: kind()}) for capability, kind in _CAPABILITIES.items())
"""One capability set per kind of request, built once: `can_be_asked` runs on every call of a 2026-07-28 client."""


def can_be_asked(session: Any) -> bool:
    """Whether the client declared any of sampling, elicitation, roots (then a 2026-07-28 call is held so that
    upstream requests can reach it)."""
    for capabilities in _ASKABLE:
        try:
            if session.check_client_capability(capabilities):
                return True
        except Exception:  # a session shape we do not know: do not ask
            return False
    return False


def progress_token(params: Any) -> types.ProgressToken | None:
    """The progress token the client put in the call's `_meta` (typed params or the raw mapping), if any."""
    if isinstance(params, dict):  # the raw mapping (wire names)
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
    else:  # typed params: `meta` is a TypedDict with Python names
        meta = getattr(params, "meta", None)
        token = meta.get("progress_token") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def request_log_level(params: Any) -> types.LoggingLevel | None:
    """The log level a 2026-07-28 client opted in to for this request (`_meta`), if any."""
    meta = params.get("_meta") if isinstance(params, dict) else getattr(params, "meta", None)
    level = meta.get(LOG_LEVEL_META_KEY) if isinstance(meta, dict) else None
    return level if level in LEVELS else None


def exchange_event(request: Any, answer: Any) -> dict[str, Any]:
    """What the records keep of one relayed request: the method, the request and the answer as the client gave them
    (sampling messages and the model's reply; an elicitation's message, schema and the user's form content, which is
    user data), or the error. Never `_meta`, and of a URL elicitation only the URL without its query and fragment,
    which may carry one-time codes."""
    params = getattr(request, "params", None)
    asked = params.model_dump(mode="json", by_alias=True, exclude_none=True) if params is not None else {}
    asked.pop("_meta", None)
    if isinstance(asked.get("url"), str):
        parts = urlsplit(asked["url"])
        asked["url"] = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    event: dict[str, Any] = {"method": request.method, "request": asked}
    if isinstance(answer, types.ErrorData):
        data = answer.data if isinstance(answer.data, dict) else {}
        event.update(outcome="error", error={"code": answer.code, "message": answer.message,
                                             "data_code": data.get("code")})
    else:
        result = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        result.pop("_meta", None)
        event.update(outcome="ok", result=result)
    return event
