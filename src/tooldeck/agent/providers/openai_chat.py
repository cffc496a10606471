"""OpenAI Chat Completions (and every OpenAI-compatible server: Ollama, vLLM, llama.cpp …).

Streaming sends `stream_options.include_usage`, so the last chunk carries the usage (cached tokens in
`prompt_tokens_details.cached_tokens`). Tool-call deltas are assembled by their `index` (a delta
without one continues the last call unless it brings a new id), so parallel calls and a call split
over many chunks come out whole; the assembled message is decoded by `protocols.openai_chat`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any

import httpx

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers.common import HttpModelClient, arguments_text, default_key, load_json, replay_calls
from tooldeck.agent.providers.reasoning import effort_of
from tooldeck.agent.transport import Transport, join_url
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, OnEvent, StopReason, StreamEvent, Usage
from tooldeck.core.errors import TooldeckError
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols import openai_chat as chat_protocol
from tooldeck.protocols import runtime_calls

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("OPENAI_API_KEY",)
STOP_REASONS: dict[str, StopReason] = {"stop": "end_turn", "tool_calls": "tool_calls", "function_call": "tool_calls",
                                       "length": "length", "content_filter": "content_filter"}


def usage_of(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(_int(data.get("prompt_tokens")), _int(data.get("completion_tokens")), _int(cached))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list (some compatible servers)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


class _Calls:
    """Tool-call deltas assembled by index."""

    def __init__(self, on_event: OnEvent | None) -> None:
        self.calls: dict[int, dict[str, Any]] = {}
        self.last: int | None = None
        self.on_event = on_event

    def add(self, delta: Mapping[str, Any]) -> None:
        index = delta.get("index")
        call_id = delta.get("id")
        if not isinstance(index, int) or isinstance(index, bool):
            known = {c.get("id") for c in self.calls.values()}
            index = len(self.calls) if self.last is None or (call_id and call_id not in known) else self.last
        fn = delta.get("function") if isinstance(delta.get("function"), Mapping) else {}
        call = self.calls.get(index)
        started = call is None
        if call is None:
            call = self.calls[index] = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        self.last = index
        if isinstance(call_id, str) and call_id:
            call["id"] = call_id
        name = fn.get("name")
        if isinstance(name, str) and name and name != call["function"]["name"]:
            call["function"]["name"] += name
        args = fn.get("arguments")
        if isinstance(args, str):
            call["function"]["arguments"] += args
        elif isinstance(args, Mapping):  # a server that sends an object instead of a string
            call["function"]["arguments"] = args
        if self.on_event is not None:
            if started:
                self.on_event(StreamEvent("tool_call_started", index=index, call_id=call["id"],
                                          name=call["function"]["name"] or None))
            if isinstance(args, str) and args:
                self.on_event(StreamEvent("tool_call_arguments", args, index, call["id"]))

    def message(self) -> list[dict[str, Any]]:
        return [self.calls[i] for i in sorted(self.calls)]


def decode_calls(message: Mapping[str, Any], model: str) -> list[dict[str, Any]]:
    """The runtime calls of an (assembled) assistant message, through `protocols.openai_chat`."""
    try:
        return runtime_calls(message, "openai")
    except TooldeckError as exc:
        raise ModelError(exc.code, f"model {model!r}: {exc.message}") from None


def stop_reason(reason: Any) -> StopReason:
    return STOP_REASONS.get(reason, "other") if isinstance(reason, str) else "other"


class ChatStream:
    """The chunks of one streamed answer → its `ModelTurn` (pure: `feed` each decoded chunk, then `turn`)."""

    def __init__(self, model: str, on_event: OnEvent | None = None) -> None:
        self.model = model
        self.on_event = on_event
        self.text: list[str] = []
        self.calls = _Calls(on_event)
        self.usage: Usage | None = None
        self.finish: Any = None
        self.chunks: list[Any] = []

    def feed(self, chunk: Any) -> None:
        self.chunks.append(chunk)
        if not isinstance(chunk, Mapping):
            return
        if isinstance(chunk.get("error"), Mapping):  # an error sent inside a 200 stream
            raise ModelError(errors.HTTP_ERROR, f"model {self.model!r} sent an error in its stream: "
                             f"{chunk['error'].get('message', chunk['error'])}")
        self.usage = usage_of(chunk.get("usage")) or self.usage
        on_event = self.on_event
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), Mapping) else {}
            piece = _text(delta.get("content")) or _text(delta.get("refusal"))
            if piece:
                self.text.append(piece)
                if on_event is not None:
                    on_event(StreamEvent("text", piece))
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if on_event is not None and isinstance(reasoning, str) and reasoning:
                on_event(StreamEvent("reasoning", reasoning))
            for tc in delta.get("tool_calls") or ():
                if isinstance(tc, Mapping):
                    self.calls.add(tc)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def turn(self) -> ModelTurn:
        if self.finish is None:
            raise ModelError(errors.BAD_RESPONSE, f"model {self.model!r}: the stream ended without a "
                             f"finish_reason after {len(self.chunks)} chunk(s); run again")
        text = "".join(self.text)
        return ModelTurn(text, decode_calls({"tool_calls": self.calls.message()}, self.model),
                         chat_protocol.items({"content": text}), self.usage or Usage(), stop_reason(self.finish),
                         self.chunks)


class OpenAIChatClient(HttpModelClient):
    """A `ModelClient` for `/chat/completions`."""

    format = "openai"

    def __init__(self, config: ModelConfig, *, client: httpx.AsyncClient | None = None,
                 transport: Transport | None = None) -> None:
        self.config = config
        key = default_key(config.api_key, *KEY_VARIABLES)
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self.transport = transport or Transport(config, headers, client=client)
        self.url = join_url(config.base_url or DEFAULT_BASE_URL, "chat/completions")

    # -- the request ------------------------------------------------------------------------------
    def body(self, request: ModelRequest) -> dict[str, Any]:
        messages = request.messages
        if request.instructions:
            messages = [{"role": "system", "content": request.instructions}, *messages]
        body: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if request.tools:
            body["tools"] = list(request.tools)
            choice = request.tool_choice
            if isinstance(choice, Mapping):
                body["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
            elif choice != "auto":
                body["tool_choice"] = choice
        limit = request.max_output_tokens or self.config.max_output_tokens
        if limit:
            body["max_completion_tokens"] = limit
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        effort = effort_of(request.reasoning) if self.config.reasoning else None
        if effort:
            body["reasoning_effort"] = effort
        return self.with_options(body, request)

    # -- the answer -------------------------------------------------------------------------------
    def decode(self, data: Any) -> ModelTurn:
        """A non-streamed answer."""
        choices = data.get("choices") if isinstance(data, Mapping) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ModelError(errors.BAD_RESPONSE, f"model {self.config.name!r} answered without choices: "
                             f"{str(data)[:200]}")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
        text = _text(message.get("content")) or _text(message.get("refusal"))
        return ModelTurn(text, decode_calls({"tool_calls": message.get("tool_calls") or []}, self.config.name),
                         chat_protocol.items(message), usage_of(data.get("usage")) or Usage(),
                         stop_reason(choice.get("finish_reason")), data)

    async def _stream(self, body: dict[str, Any], on_event: OnEvent | None) -> ModelTurn:
        stream = ChatStream(self.config.name, on_event)
        async with aclosing(self.transport.stream_sse(self.url, body)) as events:
            async for event in events:
                stream.feed(load_json(event.data, f"model {self.config.name!r}"))
        return stream.turn()

    # -- the conversation --------------------------------------------------------------------------
    def user_message(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": text}]

    def assistant_message(self, turn: ModelTurn) -> list[dict[str, Any]]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": arguments_text(c)}}
                                     for c in turn.calls]
        elif not turn.text:
            message["content"] = ""
        return [message]

    def tool_results(self, turn: ModelTurn, results: Sequence[AgentToolResult],
                     notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        if len(results) != len(turn.calls):
            raise ValueError(f"{len(results)} results for {len(turn.calls)} calls; every call needs exactly one")
        out: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": c["id"], "content": r.model_text()}
                                     for c, r in zip(turn.calls, results, strict=True)]
        if any(r.images for r in results):  # tool messages take text: the images follow in a user message
            shown = chat_protocol.image_message(replay_calls(turn, results))
            if shown is not None:
                out.append(shown)
        out.extend({"role": "user", "content": note} for note in notes)
        return out

