"""2026-07-28 clients: what an upstream server asks during a call reaches them as an `InputRequiredResult`.

A 2026-07-28 server cannot send its client a request mid-call (no back-channel); it answers the call with
`InputRequiredResult` (the questions, and a `requestState`) and the client retries the same call with its
answers (`inputResponses`). `tooldeck serve` relays an upstream `sampling/createMessage`, `elicitation/create`
or `roots/list` to such a client that way, while the upstream call keeps running:

- the served call runs in a task of its own (`HeldCall.task`), and the handler of the client's request waits
  for whichever comes first: the call's result, or a question from upstream;
- a question answers the request with `InputRequiredResult` (`requestState` = `held:<token>`, a server-side
  handle bound to this process, the tool name and the arguments); the call is held, waiting for the answer;
- the client's retry with that state finds the held call, hands it the answers and waits again (a question it
  did not answer is asked again), so the upstream tool gets the client's answer as if it had been asked
  directly. Its progress and log messages reach the client while one of its requests is open.

A retry whose state names no held call (expired, another process, other arguments) is an `isError` result
(`serve.input_state_unknown`) saying to call again from the start; nothing runs. A held call whose client
never comes back ends with the upstream call's own timeout; its result is kept for HELD_RESULT_TTL_S.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import logging
import secrets
from collections.abc import Coroutine
from typing import Any

import mcp_types as types
import orjson

logger = logging.getLogger("tooldeck.serve")

STATE_PREFIX = "held:"
"""`requestState` of a held call (the `ask` confirmation's own state has no prefix: server/confirm.py)."""
STATE_UNKNOWN = "serve.input_state_unknown"
HELD_RESULT_TTL_S = 120.0
"""How long a held call's result waits for the client's retry after the call ended."""
MAX_HELD = 1_000
"""Held calls kept at once; past it the oldest finished ones are dropped first."""

_SECRET = secrets.token_bytes(32)


def _binding(name: str, arguments: Any) -> str:
    body = orjson.dumps([name, arguments], option=orjson.OPT_SORT_KEYS)
    return hmac.new(_SECRET, body, hashlib.sha256).hexdigest()[:32]


class HeldCall:
    """One served call of a 2026-07-28 client, and the questions its upstream server is waiting on."""

    def __init__(self, name: str, arguments: Any) -> None:
        self.token = f"{STATE_PREFIX}{secrets.token_urlsafe(18)}.{_binding(name, arguments)}"
        self.task: asyncio.Task[Any] | None = None
        self.peer: Any = None
        """The call's `DownstreamPeer` (re-pointed at each retry's request)."""
        self.attached = False
        """A request of the client is waiting on this call: notifications can reach it."""
        self._questions: dict[str, tuple[Any, asyncio.Future[Any]]] = {}
        self._keys = itertools.count(1)
        self._changed = asyncio.Event()

    async def ask(self, request: Any) -> Any:
        """From the upstream side: put `request` to the client and wait for its answer (a result or ErrorData)."""
        key = f"upstream_{next(self._keys)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._questions[key] = (request, future)
        self._changed.set()
        try:
            return await future
        finally:
            self._questions.pop(key, None)

    def answer(self, responses: dict[str, Any] | None) -> None:
        """The client's answers (`inputResponses` of its retry), by question key; others are ignored."""
        for key, response in (responses or {}).items():
            question = self._questions.get(key)
            if question is not None and not question[1].done():
                question[1].set_result(response)

    async def next(self) -> Any:
        """The call's result, or an `InputRequiredResult` with the questions still open. Cancelling the waiting
        request cancels the call unless the client was already given a question (then it comes back)."""
        task = self.task
        assert task is not None
        self.attached = True
        try:
            while True:
                if task.done():
                    return task.result()
                pending = {k: request for k, (request, future) in self._questions.items() if not future.done()}
                if pending:
                    return types.InputRequiredResult(input_requests=pending, request_state=self.token)
                self._changed.clear()
                changed = asyncio.ensure_future(self._changed.wait())
                try:
                    await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    changed.cancel()
        except asyncio.CancelledError:
            task.cancel()  # the client cancelled its call: the upstream call is stopped, as for any client
            raise
        finally:
            self.attached = False


class HeldCalls:
    """The held calls of one `tooldeck serve`, by `requestState`."""

    def __init__(self) -> None:
        self._calls: dict[str, HeldCall] = {}

    def start(self, held: HeldCall, run: Coroutine[Any, Any, Any]) -> None:
        """Run the call in a task of its own (it outlives a request answered with a question)."""
        if len(self._calls) >= MAX_HELD:
            for token in [t for t, h in self._calls.items() if h.task is not None and h.task.done()]:
                self._calls.pop(token, None)
        held.task = asyncio.get_running_loop().create_task(run)
        self._calls[held.token] = held
        held.task.add_done_callback(lambda _t: asyncio.get_running_loop().call_later(
            HELD_RESULT_TTL_S, self._calls.pop, held.token, None))

    def resume(self, state: str, name: str, arguments: Any) -> HeldCall | None:
        """The held call a retry names (same tool and arguments), or None."""
        held = self._calls.get(state)
        if held is None or not hmac.compare_digest(state.rsplit(".", 1)[-1], _binding(name, arguments)):
            return None
        return held

    def finished(self, held: HeldCall) -> None:
        """The client has the call's result: forget it."""
        if held.task is not None and held.task.done():
            self._calls.pop(held.token, None)

    def close(self) -> None:
        for held in self._calls.values():
            if held.task is not None and not held.task.done():
                held.task.cancel()
        self._calls.clear()


def unknown_state() -> types.CallToolResult:
    text = ("This call's `requestState` names no call waiting for input in this `tooldeck serve` (it ended more than "
            f"{HELD_RESULT_TTL_S:g} s ago, the server restarted, or the tool or arguments differ); nothing was run. "
            "Call the tool again from the start, without `requestState`.")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True,
                                meta={"tooldeck/error_code": STATE_UNKNOWN})

