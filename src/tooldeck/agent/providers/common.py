"""Pieces every provider module uses: a turn's calls as replay calls (the `protocols/` shapes), the
arguments a call is sent back with, and JSON decoding of a provider answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.transport import Transport
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, OnEvent
from tooldeck.core.arguments import MISSING, ToolArguments
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols.common import ReplayCall


def call_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments as an object; arguments that are not a JSON object become `{}`, as replay
    renders them (the paired result carries the `tool.invalid_arguments` error)."""
    value = ToolArguments.decode(call.get("arguments", MISSING)).value
    return value if isinstance(value, dict) else {}


def arguments_text(call: Mapping[str, Any]) -> str:
    """The arguments as the JSON text to send back: the model's own text when it is a JSON object
    (byte for byte), else the canonical text of `call_arguments`."""
    raw = call.get("arguments", MISSING)
    if isinstance(raw, str):
        try:
            if isinstance(orjson.loads(raw), dict):  # "" decodes to {} for the gate, but is no JSON text
                return raw
        except orjson.JSONDecodeError:
            pass
    return ReplayCall("", "", call_arguments(call), "").arguments_json()


def replay_calls(turn: ModelTurn, results: Sequence[AgentToolResult] | None = None) -> tuple[ReplayCall, ...]:
    """The turn's calls as `protocols` replay calls, each with its result (or an empty one)."""
    if results is not None and len(results) != len(turn.calls):
        raise ValueError(f"{len(results)} results for {len(turn.calls)} calls; every call needs exactly one")
    out = []
    for i, call in enumerate(turn.calls):
        result = results[i] if results is not None else None
        out.append(ReplayCall(str(call["id"]), str(call["name"]), call_arguments(call),
                              result.content if result is not None else "",
                              result.is_error if result is not None else False, None,
                              tuple(result.images) if result is not None else ()))
    return tuple(out)


def load_json(data: bytes | str, label: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ModelError(errors.BAD_RESPONSE, f"{label} sent a chunk that is not JSON: {str(data)[:200]!r}") from None


def default_key(config_key: str | None, *variables: str) -> str | None:
    """The configured key, else the first provider variable that is set (OPENAI_API_KEY …)."""
    if config_key:
        return config_key
    import os

    for name in variables:
        value = os.environ.get(name)
        if value:
            return value
    return None


class HttpModelClient:
    """What the four HTTP clients share: the config's and the request's options merged into the body last,
    the plain or the streamed answer, and closing the transport. A client supplies `body`, `decode` (a
    plain answer) and `_stream` (a streamed one)."""

    config: ModelConfig
    transport: Transport
    url: str

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def decode(self, data: Any) -> ModelTurn:
        raise NotImplementedError

    async def _stream(self, body: dict[str, Any], on_event: OnEvent | None) -> ModelTurn:
        raise NotImplementedError

    def with_options(self, body: dict[str, Any], request: ModelRequest) -> dict[str, Any]:
        """The model's `options`, then the request's, merged into the body: an object merges key by key into
        the object the adapter built (`generationConfig = { temperature = 0.2 }` keeps the output limit and
        thinking budget beside it); any other value replaces."""
        merge_options(body, self.config.options)
        merge_options(body, request.options)
        return body


    async def complete(self, request: ModelRequest, on_event: OnEvent | None = None) -> ModelTurn:
        body = self.body(request)
        if not request.stream:
            return self.decode(await self.transport.post_json(self.url, body))
        return await self._stream(body, on_event)

    async def aclose(self) -> None:
        await self.transport.aclose()


def merge_options(body: dict[str, Any], options: dict[str, Any]) -> None:
    for key, value in options.items():
        current = body.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged = dict(current)  # never write into an object the caller or the config still holds
            merge_options(merged, value)
            body[key] = merged
        else:
            body[key] = value
