"""Gemini `generateContent` / `streamGenerateContent?alt=sse`, streaming and not.

`base_url` defaults to `https://generativelanguage.googleapis.com/v1beta`; the model is a path segment
(`models/<model>:generateContent`), the key goes in `x-goog-api-key` (`GEMINI_API_KEY`, else
`GOOGLE_API_KEY`). The snapshot's tools array is already Gemini's (`[{"functionDeclarations": […]}]`).

A streamed answer is a series of whole `GenerateContentResponse` chunks: text parts arrive in pieces
(joined while the kind of part — thought or not — stays the same and no signature closed it), each
`functionCall` arrives whole in one part. Gemini sends calls without ids: decoding synthesises
stable ones (`protocols.gemini.synthesize_id`, seeded by the response id and the client's turn count),
which go back on both the `functionCall` and its `functionResponse`.

Thought signatures: a part's `thoughtSignature` stays on it. A call's goes back beside its
`functionCall` in the same part (the call's provider data), the signatures of text and thought parts
with those parts (the turn's provider items, sent before the calls): Gemini 3 answers 400 to a
history whose current turn dropped them. Usage: `promptTokenCount` (cached tokens included),
`candidatesTokenCount` + `thoughtsTokenCount`, `cachedContentTokenCount`.
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
from tooldeck.protocols import decode_items, gemini, runtime_calls

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
FAMILY = gemini.FAMILY
FILTERED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"})
CHOICE_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}


def usage_of(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    output = usage_int(data.get("candidatesTokenCount")) + usage_int(data.get("thoughtsTokenCount"))
    return Usage(usage_int(data.get("promptTokenCount")), output, usage_int(data.get("cachedContentTokenCount")))


def stop_reason(reason: Any, has_calls: bool) -> StopReason:
    if reason in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "tool_calls" if has_calls else "end_turn"
    if reason == "MAX_TOKENS":
        return "length"
    return "content_filter" if reason in FILTERED else "other"


def _candidate(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    cands = data.get("candidates")
    if isinstance(cands, list) and cands and isinstance(cands[0], Mapping):
        return cands[0]
    return None


class _Parts:
    """The model's parts across stream chunks: text pieces joined, calls whole, signatures kept in place."""

    def __init__(self, on_event: OnEvent | None) -> None:
        self.parts: list[dict[str, Any]] = []
        self.calls = 0
        self.on_event = on_event

    def add(self, part: Mapping[str, Any]) -> None:
        emit = self.on_event
        if isinstance(part.get("functionCall"), Mapping):
            self.parts.append(dict(part))
            if emit is not None:
                fc = part["functionCall"]
                emit(StreamEvent("tool_call_started", index=self.calls, call_id=fc.get("id"), name=fc.get("name")))
            self.calls += 1
            return
        text = part.get("text")
        last = self.parts[-1] if self.parts else None
        joinable = (last is not None and isinstance(last.get("text"), str) and "thoughtSignature" not in last
                    and bool(last.get("thought")) == bool(part.get("thought")))
        if isinstance(text, str) and joinable:
            last["text"] += text  # type: ignore[index]
            if "thoughtSignature" in part:
                last["thoughtSignature"] = part["thoughtSignature"]  # type: ignore[index]
        elif set(part) == {"thoughtSignature"} and last is not None and "functionCall" not in last \
                and "thoughtSignature" not in last:
            last["thoughtSignature"] = part["thoughtSignature"]  # a signature closing the text before it
        else:
            self.parts.append(dict(part))
        if emit is not None and isinstance(text, str) and text:
            emit(StreamEvent("reasoning" if part.get("thought") else "text", text))


class GeminiClient(HttpModelClient):
    """A `ModelClient` for the Gemini API."""

    format = "gemini"

    def __init__(self, config: ModelConfig, *, client: httpx.AsyncClient | None = None,
                 transport: Transport | None = None) -> None:
        self.config = config
        key = default_key(config.api_key, *KEY_VARIABLES)
        headers = {"x-goog-api-key": key} if key else {}
        self.transport = transport or Transport(config, headers, client=client)
        model = config.model.removeprefix("models/")
        base = join_url(config.base_url or DEFAULT_BASE_URL, f"models/{model}")
        self.url = f"{base}:generateContent"
        self.stream_url = f"{base}:streamGenerateContent?alt=sse"
        self.label = f"model {config.name!r}"
        self.turns = 0
        """Model turns this client decoded: part of the seed of synthesised call ids."""

    # -- the request ------------------------------------------------------------------------------
    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": request.messages}
        if request.instructions:
            body["systemInstruction"] = {"parts": [{"text": request.instructions}]}
        if request.tools:
            body["tools"] = list(request.tools)
            choice = request.tool_choice
            if isinstance(choice, Mapping):
                body["toolConfig"] = {"functionCallingConfig": {"mode": "ANY",
                                                                "allowedFunctionNames": [choice.get("name")]}}
            elif choice != "auto" and choice in CHOICE_MODES:
                body["toolConfig"] = {"functionCallingConfig": {"mode": CHOICE_MODES[choice]}}
        limit = request.max_output_tokens or self.config.max_output_tokens
        if limit:
            body["generationConfig"] = {"maxOutputTokens": limit}
        effort = effort_of(request.reasoning) if self.config.reasoning else None
        if effort:
            body.setdefault("generationConfig", {})["thinkingConfig"] = {"thinkingBudget": thinking_budget(effort)}
        return self.with_options(body, request)

    # -- the answer -------------------------------------------------------------------------------
    def decode(self, data: Any) -> ModelTurn:
        """A non-streamed answer (a GenerateContentResponse)."""
        if not isinstance(data, Mapping):
            raise ModelError(errors.BAD_RESPONSE, f"{self.label} answered with no response object: {str(data)[:200]}")
        self._blocked(data)
        cand = _candidate(data)
        content = cand.get("content") if cand is not None else None
        parts = content.get("parts") if isinstance(content, Mapping) else None
        return self._turn(parts if isinstance(parts, list) else [], cand.get("finishReason") if cand else None,
                          data.get("usageMetadata"), data.get("responseId"), data)

    def _blocked(self, data: Mapping[str, Any]) -> None:
        if isinstance(data.get("error"), Mapping):
            err = data["error"]
            raise ModelError(errors.HTTP_ERROR, f"{self.label} sent an error: {err.get('message', err)} "
                             f"({err.get('status', 'no status')}); run again")

    def _turn(self, parts: list[Any], reason: Any, usage: Any, response_id: Any, raw: Any,
              blocked: bool = False) -> ModelTurn:
        self.turns += 1
        seed = f"{response_id if isinstance(response_id, str) else ''}:{self.turns}"
        try:
            calls = runtime_calls(parts, "gemini", id_seed=seed)
        except TooldeckError as exc:
            raise model_error(exc, self.label) from None
        text = "".join(p["text"] for p in parts
                       if isinstance(p, Mapping) and isinstance(p.get("text"), str) and not p.get("thought"))
        stop = "content_filter" if blocked else stop_reason(reason, bool(calls))
        items = sendable(decode_items(parts, "gemini"), FAMILY, self.label)
        return ModelTurn(text, calls, items, usage_of(usage) or Usage(), stop, raw)

    async def _stream(self, body: dict[str, Any], on_event: OnEvent | None) -> ModelTurn:
        parts = _Parts(on_event)
        reason: Any = None
        usage: Any = None
        response_id: Any = None
        blocked = False
        chunks: list[Any] = []
        async with aclosing(self.transport.stream_sse(self.stream_url, body)) as events:
            async for event in events:
                data = load_json(event.data, self.label)
                chunks.append(data)
                if not isinstance(data, Mapping):
                    continue
                self._blocked(data)
                response_id = data.get("responseId", response_id)
                usage = data.get("usageMetadata") or usage
                feedback = data.get("promptFeedback")
                if isinstance(feedback, Mapping) and feedback.get("blockReason"):
                    blocked = True
                cand = _candidate(data)
                if cand is None:
                    continue
                content = cand.get("content")
                for part in (content.get("parts") or ()) if isinstance(content, Mapping) else ():
                    if isinstance(part, Mapping):
                        parts.add(part)
                reason = cand.get("finishReason") or reason
        if not chunks:
            raise ModelError(errors.BAD_RESPONSE, f"{self.label}: the stream ended without a response; run again")
        return self._turn(parts.parts, reason, usage, response_id, chunks, blocked)

    # -- the conversation --------------------------------------------------------------------------
    def user_message(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "parts": [{"text": text}]}]

    def assistant_message(self, turn: ModelTurn) -> list[dict[str, Any]]:
        """The model's parts as replay renders them: its text and thought parts (with their signatures),
        then each functionCall with its thoughtSignature beside it in the same part."""
        content = gemini.render([replay_turn(turn, FAMILY)])[0]
        parts = content["parts"]
        if turn.text and not any(isinstance(i.get("text"), str) and not i.get("thought")
                                 for i in turn.provider_items):
            at = next((k for k, p in enumerate(parts) if "functionCall" in p), len(parts))
            parts.insert(at, {"text": turn.text})
        return [content] if parts else []

    def tool_results(self, turn: ModelTurn, results: Sequence[AgentToolResult],
                     notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        content = gemini.render([replay_turn(turn, FAMILY, results)])[1]
        content["parts"].extend({"text": note} for note in notes)
        return [content]

