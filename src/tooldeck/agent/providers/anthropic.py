"""Anthropic Messages (`/v1/messages`), streaming and not.

`base_url` is the API root without `/v1` (default `https://api.anthropic.com`, as the Anthropic SDK
and `ANTHROPIC_BASE_URL` have it); the key goes in `x-api-key` with `anthropic-version: 2023-06-01`.
`max_tokens` is required by the API: the request's or the model's limit, else `DEFAULT_MAX_TOKENS`.

Streaming assembles the content blocks by their `index`: `content_block_start` opens a block (text,
tool_use, thinking, redacted_thinking), `content_block_delta` grows it (`text_delta`,
`input_json_delta` — a tool_use's arguments as JSON text in pieces —, `thinking_delta`,
`signature_delta`), `content_block_stop` closes it; `message_start` / `message_delta` bring the usage
and the stop reason. A tool_use's arguments are the JSON text as it streamed (verbatim in the
records; empty means `{}`), the whole object when nothing streamed.

The turn's thinking, redacted_thinking and text blocks are its provider items: they go back first in
the assistant content, thinking blocks with their signatures unchanged (`protocols.anthropic`).
Usage: `input_tokens` is every input token (the uncached ones plus `cache_read_input_tokens` plus
`cache_creation_input_tokens`), `cached_tokens` the cache reads, `cache_write_tokens` the writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any

import httpx

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers.common import HttpModelClient, default_key, load_json
from tooldeck.agent.providers.reasoning import effort_of, thinking_budget
from tooldeck.agent.providers.wire import model_error, replay_turn, sendable, usage_int
from tooldeck.agent.transport import Transport, join_url
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, OnEvent, StopReason, StreamEvent, Usage
from tooldeck.core.errors import TooldeckError
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols import anthropic, decode_items, runtime_calls

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
KEY_VARIABLES = ("ANTHROPIC_API_KEY",)
FAMILY = anthropic.FAMILY
STOP_REASONS: dict[str, StopReason] = {"end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_calls",
                                       "max_tokens": "length", "model_context_window_exceeded": "length",
                                       "refusal": "content_filter"}
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def usage_of(data: Mapping[str, Any]) -> Usage:
    uncached = usage_int(data.get("input_tokens"))
    read = usage_int(data.get("cache_read_input_tokens"))
    written = usage_int(data.get("cache_creation_input_tokens"))
    return Usage(uncached + read + written, usage_int(data.get("output_tokens")), read, written)


class _Blocks:
    """Content blocks of a streamed message, assembled by index."""

    def __init__(self, on_event: OnEvent | None) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json: dict[int, list[str]] = {}
        """A tool_use block's input_json_delta pieces."""
        self.calls: dict[int, int] = {}
        self.on_event = on_event

    def start(self, index: int, block: Mapping[str, Any]) -> None:
        self.blocks[index] = dict(block)
        if block.get("type") == "tool_use":
            self.calls[index] = len(self.calls)
            if self.on_event is not None:
                self.on_event(StreamEvent("tool_call_started", index=self.calls[index], call_id=block.get("id"),
                                          name=block.get("name")))

    def delta(self, index: int, delta: Mapping[str, Any]) -> str | None:
        """Apply a delta; the text it adds to the answer, if any."""
        block = self.blocks.get(index)
        if block is None:
            return None
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = str(block.get("text") or "") + delta["text"]
            return delta["text"]
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self.json.setdefault(index, []).append(delta["partial_json"])
            if self.on_event is not None and delta["partial_json"]:
                self.on_event(StreamEvent("tool_call_arguments", delta["partial_json"], self.calls.get(index, 0),
                                          block.get("id")))
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"] = str(block.get("thinking") or "") + delta["thinking"]
            if self.on_event is not None and delta["thinking"]:
                self.on_event(StreamEvent("reasoning", delta["thinking"]))
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = str(block.get("signature") or "") + delta["signature"]
        return None

    def content(self) -> list[dict[str, Any]]:
        out = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            pieces = self.json.get(index)
            if block.get("type") == "tool_use" and pieces is not None:
                block = {**block, "input": "".join(pieces)}  # the arguments as they streamed, verbatim
            out.append(block)
        return out


class AnthropicClient(HttpModelClient):
    """A `ModelClient` for the Messages API."""

    format = "anthropic"

    def __init__(self, config: ModelConfig, *, client: httpx.AsyncClient | None = None,
                 transport: Transport | None = None) -> None:
        self.config = config
        key = default_key(config.api_key, *KEY_VARIABLES)
        headers = {"anthropic-version": API_VERSION}
        if key:
            headers["x-api-key"] = key
        self.transport = transport or Transport(config, headers, client=client)
        self.url = join_url(config.base_url or DEFAULT_BASE_URL, "v1/messages")
        self.label = f"model {config.name!r}"

    # -- the request ------------------------------------------------------------------------------
    def body(self, request: ModelRequest) -> dict[str, Any]:
        limit = request.max_output_tokens or self.config.max_output_tokens or DEFAULT_MAX_TOKENS
        body: dict[str, Any] = {"model": self.config.model, "max_tokens": limit, "messages": request.messages}
        if request.instructions:
            body["system"] = request.instructions
        if request.tools:
            body["tools"] = list(request.tools)
            choice = request.tool_choice
            if isinstance(choice, Mapping):
                body["tool_choice"] = {"type": "tool", "name": choice.get("name")}
            elif choice == "required":
                body["tool_choice"] = {"type": "any"}
            elif choice == "none":
                body["tool_choice"] = {"type": "none"}
        if request.stream:
            body["stream"] = True
        effort = effort_of(request.reasoning) if self.config.reasoning else None
        if effort and body.get("tool_choice", {}).get("type") not in ("any", "tool"):
            budget = thinking_budget(effort)
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] = limit + budget
        return self.with_options(body, request)

    # -- the answer -------------------------------------------------------------------------------
    def decode(self, data: Any) -> ModelTurn:
        """A non-streamed answer (a Message)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            raise ModelError(errors.BAD_RESPONSE, f"{self.label} answered without a content list: {str(data)[:200]}")
        usage = data.get("usage")
        return self._turn(data["content"], usage_of(usage if isinstance(usage, Mapping) else {}),
                          data.get("stop_reason"), data)

    def _turn(self, content: list[Any], usage: Usage, reason: Any, raw: Any) -> ModelTurn:
        try:
            calls = runtime_calls(content, "anthropic")
        except TooldeckError as exc:
            raise model_error(exc, self.label) from None
        text = "".join(b["text"] for b in content
                       if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str))
        stop = STOP_REASONS.get(reason, "other") if isinstance(reason, str) else "other"
        items = sendable(decode_items(content, "anthropic"), FAMILY, self.label)
        return ModelTurn(text, calls, items, usage, stop, raw)

    async def _stream(self, body: dict[str, Any], on_event: OnEvent | None) -> ModelTurn:
        blocks = _Blocks(on_event)
        usage: dict[str, Any] = {}
        reason: Any = None
        stopped = False
        chunks: list[Any] = []
        async with aclosing(self.transport.stream_sse(self.url, body)) as events:
            async for event in events:
                data = load_json(event.data, self.label)
                chunks.append(data)
                if not isinstance(data, Mapping):
                    continue
                kind = data.get("type") or event.event
                index = data.get("index")
                if kind == "content_block_start" and isinstance(index, int):
                    block = data.get("content_block")
                    if isinstance(block, Mapping):
                        blocks.start(index, block)
                elif kind == "content_block_delta" and isinstance(index, int):
                    delta = data.get("delta")
                    piece = blocks.delta(index, delta) if isinstance(delta, Mapping) else None
                    if piece and on_event is not None:
                        on_event(StreamEvent("text", piece))
                elif kind == "message_start":
                    message = data.get("message")
                    if isinstance(message, Mapping) and isinstance(message.get("usage"), Mapping):
                        usage.update(message["usage"])
                elif kind == "message_delta":
                    if isinstance(data.get("usage"), Mapping):  # cumulative counts: the latest win
                        usage.update({k: v for k, v in data["usage"].items() if k in _USAGE_KEYS and v is not None})
                    delta = data.get("delta")
                    if isinstance(delta, Mapping) and delta.get("stop_reason"):
                        reason = delta["stop_reason"]
                elif kind == "message_stop":
                    stopped = True
                elif kind == "error":
                    err = data.get("error") if isinstance(data.get("error"), Mapping) else {}
                    raise ModelError(errors.HTTP_ERROR, f"{self.label} sent an error in its stream: "
                                     f"{err.get('message', data)} ({err.get('type', 'no type')}); run again")
        if not stopped and reason is None:
            raise ModelError(errors.BAD_RESPONSE, f"{self.label}: the stream ended without message_stop after "
                             f"{len(chunks)} event(s); run again")
        return self._turn(blocks.content(), usage_of(usage), reason, chunks)

    # -- the conversation --------------------------------------------------------------------------
    def user_message(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": text}]

    def assistant_message(self, turn: ModelTurn) -> list[dict[str, Any]]:
        """Thinking blocks (with their signatures), text, then the tool_use blocks, as replay renders them."""
        message = anthropic.render([replay_turn(turn, FAMILY)])[0]
        content = message["content"]
        if turn.text and not any(i.get("type") == "text" for i in turn.provider_items):
            at = next((k for k, b in enumerate(content) if b.get("type") == "tool_use"), len(content))
            content.insert(at, {"type": "text", "text": turn.text})
        return [message] if content else []

    def tool_results(self, turn: ModelTurn, results: Sequence[AgentToolResult],
                     notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        message = anthropic.render([replay_turn(turn, FAMILY, results)])[1]
        message["content"].extend({"type": "text", "text": note} for note in notes)
        return [message]

