"""OpenAI Chat Completions answers in the shapes the API sends (for the mock provider's scripts)."""

from __future__ import annotations

from typing import Any

from tests.agent.mock_provider import Reply

Call = tuple[str, str, Any]
"""(id, name, arguments text)."""


def usage(prompt: int = 10, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0}}


def completion(text: str | None = None, calls: list[Call] = (), finish: str | None = None,  # type: ignore[assignment]
               use: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, n, a in calls]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "mock",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish or ("tool_calls" if calls else "stop")}],
            "usage": use or usage()}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def usage_chunk(use: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mock", "choices": [],
            "usage": use}


def stream(text: str | None = None, calls: list[Call] = (), finish: str | None = None,  # type: ignore[assignment]
           use: dict[str, Any] | None = None, pieces: int = 1, **kw: Any) -> Reply:
    """A streamed answer: the text in `pieces` deltas, each call's arguments in `pieces` deltas (all calls'
    first deltas carry id and name), then the finish chunk and the usage chunk."""
    chunks: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
    if text:
        for part in split(text, pieces):
            chunks.append(chunk({"content": part}))
    for index, (cid, name, args) in enumerate(calls):
        parts = split(args, pieces)
        chunks.append(chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                             "function": {"name": name, "arguments": parts[0] if parts else ""}}]}))
        for part in parts[1:]:
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, finish or ("tool_calls" if calls else "stop")))
    chunks.append(usage_chunk(use or usage()))
    return Reply.sse(chunks, **kw)


def split(text: str, pieces: int) -> list[str]:
    if not text:
        return [""]
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i:i + size] for i in range(0, len(text), size)]
