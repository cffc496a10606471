"""OpenAI Responses (`/responses`), streaming and not.

Requests are stateless: the whole conversation goes in `input` each turn, with `store: false` and
`include: ["reasoning.encrypted_content"]` (both overridable by the model's options), so a reasoning
model's `reasoning` items come back with their `encrypted_content` and are sent back before the
function calls they produced. With `store: false` the items go back without their `id`s (the API
cannot look up what it did not store); with `store: true` they keep them. The records keep them
verbatim either way (`protocols/items.py`).

The snapshot's tools are Chat-shaped (`{"type": "function", "function": {…}}`); the request carries a
flat copy (`{"type": "function", "name", "description", "parameters"}`), made once per tools array.

Streaming: output items are assembled by `output_index` (and by `item_id` for deltas):
`response.output_item.added` opens an item, `response.function_call_arguments.delta` / `.done` build
a call's arguments, `response.output_text.delta` a message's text part, `response.output_item.done`
replaces the item with the finished one (reasoning items get their `encrypted_content` there), and
`response.completed` / `response.incomplete` bring the status and the usage (cached tokens in
`input_tokens_details.cached_tokens`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any

import httpx

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers.common import HttpModelClient, default_key, load_json
from tooldeck.agent.providers.reasoning import effort_of
from tooldeck.agent.providers.wire import model_error, replay_turn, sendable, usage_int
from tooldeck.agent.transport import Transport, join_url
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, OnEvent, StopReason, StreamEvent, Usage
from tooldeck.core.errors import TooldeckError
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols import decode_items, openai_responses, runtime_calls

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("OPENAI_API_KEY",)
FAMILY = openai_responses.FAMILY
INCOMPLETE: dict[str, StopReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}
_TEXT_PARTS = ("output_text", "refusal")


def usage_of(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    details = data.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(usage_int(data.get("input_tokens")), usage_int(data.get("output_tokens")), usage_int(cached))


def flat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat-shaped function tool as the Responses API takes it (other tools pass as they are)."""
    fn = tool.get("function")
    if tool.get("type") != "function" or not isinstance(fn, Mapping):
        return dict(tool)
    return {"type": "function", **fn}


def output_text(items: Sequence[Any]) -> str:
    """The text of the assistant message items (output_text and refusal parts)."""
    out = []
    for item in items:
        if not isinstance(item, Mapping) or item.get("type") != "message":
            continue
        for part in item.get("content") or ():
            if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
                text = part.get("text", part.get("refusal"))
                if isinstance(text, str):
                    out.append(text)
    return "".join(out)


class _Output:
    """Output items of a streamed response, assembled by output_index (deltas also found by item_id)."""

    def __init__(self, on_event: OnEvent | None) -> None:
        self.items: dict[int, dict[str, Any]] = {}
        self.by_id: dict[str, int] = {}
        self.calls: dict[int, int] = {}
        """output_index of a function_call → its position among the turn's calls."""
        self.on_event = on_event

    def _index(self, data: Mapping[str, Any], new: bool) -> int:
        """The item an event is about: its output_index, else its item_id's, else a new item (for an
        item event) or the last one (for a delta)."""
        index = data.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        item_id = data.get("item_id")
        if isinstance(item_id, str) and item_id in self.by_id:
            return self.by_id[item_id]
        last = max(self.items, default=-1)
        return last + 1 if new or last < 0 else last

    def put(self, data: Mapping[str, Any]) -> None:
        """`response.output_item.added` / `.done`: the item as it is now."""
        item = data.get("item")
        if not isinstance(item, Mapping):
            return
        index = self._index({"output_index": data.get("output_index"), "item_id": item.get("id")}, new=True)
        new = dict(item)
        if new.get("type") == "function_call":
            old = self.items.get(index)
            if not isinstance(new.get("arguments"), str):
                new["arguments"] = old.get("arguments", "") if old else ""
            if index not in self.calls:
                self.calls[index] = len(self.calls)
                if self.on_event is not None:
                    self.on_event(StreamEvent("tool_call_started", index=self.calls[index],
                                              call_id=new.get("call_id"), name=new.get("name")))
        self.items[index] = new
        if isinstance(new.get("id"), str):
            self.by_id[new["id"]] = index

    def arguments(self, data: Mapping[str, Any], done: bool) -> None:
        index = self._index(data, new=False)
        item = self.items.get(index)
        if item is None:  # a delta before its item: keep it, the item's own events fill the rest
            item = self.items[index] = {"type": "function_call", "arguments": ""}
            if isinstance(data.get("item_id"), str):
                item["id"] = data["item_id"]
                self.by_id[data["item_id"]] = index
            self.calls.setdefault(index, len(self.calls))
        if done:
            if isinstance(data.get("arguments"), str):
                item["arguments"] = data["arguments"]
            return
        delta = data.get("delta")
        if isinstance(delta, str) and delta:
            item["arguments"] = str(item.get("arguments") or "") + delta
            if self.on_event is not None:
                self.on_event(StreamEvent("tool_call_arguments", delta, self.calls.get(index, 0), item.get("call_id")))

    def text(self, data: Mapping[str, Any], kind: str) -> None:
        """A text (or refusal) delta, added to its message item's content part."""
        delta = data.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        index = self._index(data, new=False)
        item = self.items.get(index)
        if item is None or item.get("type") != "message":
            item = self.items[index] = {"type": "message", "role": "assistant", "content": []}
            if isinstance(data.get("item_id"), str):
                item["id"] = data["item_id"]
                self.by_id[data["item_id"]] = index
        content = item["content"] = list(item.get("content") or [])
        at = data.get("content_index")
        at = at if isinstance(at, int) and not isinstance(at, bool) and 0 <= at < 1024 else len(content) - 1
        key = "refusal" if kind == "response.refusal.delta" else "text"
        while len(content) <= max(at, 0):
            content.append({"type": "refusal" if key == "refusal" else "output_text", key: ""})
        part = content[at] = dict(content[at])
        part[key] = str(part.get(key) or "") + delta
        if self.on_event is not None:
            self.on_event(StreamEvent("text", delta))

    def output(self) -> list[dict[str, Any]]:
        return [self.items[i] for i in sorted(self.items)]


class OpenAIResponsesClient(HttpModelClient):
    """A `ModelClient` for `/responses`."""

    format = "openai_responses"

    def __init__(self, config: ModelConfig, *, client: httpx.AsyncClient | None = None,
                 transport: Transport | None = None) -> None:
        self.config = config
        key = default_key(config.api_key, *KEY_VARIABLES)
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self.transport = transport or Transport(config, headers, client=client)
        self.url = join_url(config.base_url or DEFAULT_BASE_URL, "responses")
        self.label = f"model {config.name!r}"
        self.store = bool(config.options.get("store", False))
        self._tools: tuple[Sequence[dict[str, Any]], list[dict[str, Any]]] | None = None

    # -- the request ------------------------------------------------------------------------------
    def tools(self, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The flat tools of a snapshot's tools array, converted once per array (the loop reuses it)."""
        cached = self._tools
        if cached is None or cached[0] is not tools:
            cached = self._tools = (tools, [flat_tool(t) for t in tools])
        return cached[1]

    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "input": request.messages}
        if request.instructions:
            body["instructions"] = request.instructions
        if request.tools:
            body["tools"] = self.tools(request.tools)
            choice = request.tool_choice
            if isinstance(choice, Mapping):
                body["tool_choice"] = {"type": "function", "name": choice.get("name")}
            elif choice != "auto":
                body["tool_choice"] = choice
        limit = request.max_output_tokens or self.config.max_output_tokens
        if limit:
            body["max_output_tokens"] = limit
        body["store"] = False
        body["include"] = ["reasoning.encrypted_content"]
        if request.stream:
            body["stream"] = True
        effort = effort_of(request.reasoning) if self.config.reasoning else None
        if effort:
            body["reasoning"] = {"effort": effort}
        return self.with_options(body, request)

    # -- the answer -------------------------------------------------------------------------------
    def decode(self, data: Any) -> ModelTurn:
        """A non-streamed answer (a Response object)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("output"), list):
            raise ModelError(errors.BAD_RESPONSE, f"{self.label} answered without an output list: {str(data)[:200]}")
        self._check_failed(data)
        return self._turn(data["output"], data, data)

    def _check_failed(self, response: Mapping[str, Any]) -> None:
        if response.get("status") == "failed" or isinstance(response.get("error"), Mapping):
            err = response.get("error") if isinstance(response.get("error"), Mapping) else {}
            raise ModelError(errors.HTTP_ERROR, f"{self.label}: the response failed: "
                             f"{err.get('message', response.get('status'))} ({err.get('code', 'no code')}); run again")

    def _turn(self, output: list[Any], response: Mapping[str, Any], raw: Any) -> ModelTurn:
        try:
            calls = runtime_calls(output, "openai_responses")
        except TooldeckError as exc:
            raise model_error(exc, self.label) from None
        items = sendable(decode_items(output, "openai_responses"), FAMILY, self.label)
        text = output_text(output)
        stop: StopReason = "tool_calls" if calls else "end_turn"
        if response.get("status") == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            stop = INCOMPLETE.get(reason, "other") if isinstance(reason, str) else "other"
        return ModelTurn(text, calls, items, usage_of(response.get("usage")) or Usage(), stop, raw)

    async def _stream(self, body: dict[str, Any], on_event: OnEvent | None) -> ModelTurn:
        out = _Output(on_event)
        final: Mapping[str, Any] | None = None
        chunks: list[Any] = []
        async with aclosing(self.transport.stream_sse(self.url, body)) as events:
            async for event in events:
                data = load_json(event.data, self.label)
                chunks.append(data)
                if not isinstance(data, Mapping):
                    continue
                kind = data.get("type") or event.event
                if kind in ("response.output_item.added", "response.output_item.done"):
                    out.put(data)
                elif kind in ("response.output_text.delta", "response.refusal.delta"):
                    out.text(data, kind)
                elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                    piece = data.get("delta")
                    if on_event is not None and isinstance(piece, str) and piece:
                        on_event(StreamEvent("reasoning", piece))
                elif kind == "response.function_call_arguments.delta":
                    out.arguments(data, done=False)
                elif kind == "response.function_call_arguments.done":
                    out.arguments(data, done=True)
                elif kind in ("response.completed", "response.incomplete", "response.failed"):
                    final = data.get("response") if isinstance(data.get("response"), Mapping) else {}
                    if kind == "response.failed":
                        self._check_failed({**final, "status": "failed"})
                elif kind == "error":
                    raise ModelError(errors.HTTP_ERROR, f"{self.label} sent an error in its stream: "
                                     f"{data.get('message', data)} ({data.get('code', 'no code')}); run again")
        if final is None:
            raise ModelError(errors.BAD_RESPONSE, f"{self.label}: the stream ended without response.completed after "
                             f"{len(chunks)} event(s); run again")
        output = out.output()
        if not output and isinstance(final.get("output"), list):
            output = list(final["output"])
        return self._turn(output, final, chunks)

    # -- the conversation --------------------------------------------------------------------------
    def user_message(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": text}]

    def assistant_message(self, turn: ModelTurn) -> list[dict[str, Any]]:
        """The turn's items (reasoning with its encrypted_content, messages) then its function calls, as
        replay renders them; without `id`s when the model does not store responses."""
        rendered = [i for i in openai_responses.render([replay_turn(turn, FAMILY)])
                    if i.get("type") != "function_call_output"]
        if turn.text and not any(i.get("type") == "message" for i in turn.provider_items):
            at = next((k for k, i in enumerate(rendered) if i.get("type") == "function_call"), len(rendered))
            rendered.insert(at, {"role": "assistant", "content": turn.text})
        if not self.store:
            for item in rendered:
                item.pop("id", None)
        return rendered

    def tool_results(self, turn: ModelTurn, results: Sequence[AgentToolResult],
                     notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        out = [i for i in openai_responses.render([replay_turn(turn, FAMILY, results)])
               if i.get("type") == "function_call_output"]
        out.extend({"role": "user", "content": note} for note in notes)
        return out

