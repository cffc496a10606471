"""The shapes the agent loop and its providers share: a model's configuration, a request, the turn a
model answers with, its usage, the stream events of the live view, and the `ModelClient` port.

A `ModelClient` speaks one wire format (`format`, a `tooldeck.protocols` format name). It encodes a
`ModelRequest` (instructions, the conversation in that provider's own message shape, `inv.tools()` as
the snapshot rendered them, the tool choice, limits), sends it, and decodes the answer into a
`ModelTurn`. Its message builders grow the conversation in the same shape, so the loop never knows a
provider's messages: `user_message`, `assistant_message` (the turn as the provider must see it again,
with its `provider_items` and each call's `provider_data`), `tool_results` (a turn's results, plus any
user notes such as background reports, in the order and grouping the provider requires).

Calls in a `ModelTurn` are runtime call dicts `{"id", "name", "arguments"}` as
`protocols.runtime_calls` makes them (`arguments` is the raw wire value, kept verbatim for the
records), with an optional `"provider_data"` key for what must travel back with that call (Gemini's
`thoughtSignature`). `provider_items` are provider-native items that must travel back with the turn
(Responses reasoning items with `encrypted_content`, Anthropic thinking/redacted_thinking blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from tooldeck.core.results import AgentToolResult

StopReason = Literal["end_turn", "tool_calls", "length", "content_filter", "other"]
STOP_REASONS: tuple[StopReason, ...] = ("end_turn", "tool_calls", "length", "content_filter", "other")

ToolChoice = str | dict[str, str]
"""`auto` | `none` | `required` | `{"name": <call name>}` (the gate's own choice values)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model turn, or summed over a run (`a + b`).

    `input_tokens` counts every input token, cached ones included; `cached_tokens` is the part read
    from the provider's prompt cache, `cache_write_tokens` the part written to it (Anthropic)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cached_tokens + other.cached_tokens, self.cache_write_tokens + other.cache_write_tokens)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens, "cache_write_tokens": self.cache_write_tokens}


@dataclass(slots=True)
class ModelTurn:
    """What the model answered in one turn, decoded from any wire format."""

    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Runtime call dicts `{"id", "name", "arguments"?, "provider_data"?}` in the order the model sent them."""
    provider_items: list[dict[str, Any]] = field(default_factory=list)
    """Provider-native items that must be sent back with this turn (reasoning, thinking blocks), and the
    turn's text parts where the format keeps them (Chat `text` parts): the loop records them with the
    turn (`Invocation.arun(provider_items=…)`) so replay sends them back (`protocols/items.py`)."""
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "end_turn"
    raw: Any = None
    """The decoded response body (non-streaming) or the list of stream chunks, for debugging."""


StreamEventKind = Literal["text", "reasoning", "tool_call_started", "tool_call_arguments"]


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """A piece of a turn while it streams, for a live view. `text`: a text delta (`kind` text or
    reasoning) or an arguments delta (`tool_call_arguments`); `index`: the call's position in the turn;
    `call_id` / `name`: set on `tool_call_started` (and on later events when the provider repeats them)."""

    kind: StreamEventKind
    text: str = ""
    index: int = 0
    call_id: str | None = None
    name: str | None = None


OnEvent = Callable[[StreamEvent], None]


@dataclass(slots=True)
class ModelRequest:
    """One model turn to send, in the client's own message shape."""

    messages: list[dict[str, Any]]
    tools: Sequence[dict[str, Any]] = ()
    """`inv.tools()` as is: the snapshot's tools array, never modified (a provider that needs another
    shape, e.g. the Responses API's flat functions, converts a copy)."""
    instructions: str | None = None
    tool_choice: ToolChoice = "auto"
    max_output_tokens: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """Extra top-level body fields (temperature, reasoning effort …), merged last."""
    stream: bool = True
    reasoning: str | None = None
    """The reasoning effort, low | medium | high (None: the provider's default), in each provider's wire
    form (agent/providers/reasoning.py) unless the model is configured with `reasoning = false`."""


@dataclass(slots=True)
class ModelConfig:
    """One model as `[models.<name>]` of tooldeck.toml (or flags) configure it. The key never leaves
    this object: it is not in its repr, not in the records, not in any message."""

    name: str
    provider: str
    """A `tooldeck.protocols` format (or alias): openai, openai_responses, anthropic, gemini."""
    model: str
    base_url: str | None = None
    """None → the provider's default endpoint. Ollama / vLLM / llama.cpp: their OpenAI-compatible URL."""
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 600.0
    """Seconds for the whole read of one response (a stream's gap between chunks)."""
    connect_timeout: float = 10.0
    max_retries: int = 4
    """Retries on 429 / 5xx / connection errors (attempts = max_retries + 1)."""
    retry_base_delay: float = 0.5
    retry_max_delay: float = 30.0
    """Cap of one wait: backoff is capped at it, and a `retry-after` beyond it fails at once."""
    max_output_tokens: int | None = None
    max_turns: int | None = None
    max_tokens_per_run: int | None = None
    stream: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    reasoning: bool = True
    """Whether a request's reasoning effort is sent to this model (false for a model that rejects it)."""

    def public(self) -> dict[str, Any]:
        """What may be recorded or printed (no key, no headers)."""
        return {"name": self.name, "provider": self.provider, "model": self.model, "base_url": self.base_url}


@runtime_checkable
class ModelClient(Protocol):
    """One model over one wire format. Implementations: `agent/providers/*`."""

    format: str
    """The `tooldeck.protocols` format name: openai, openai_responses, anthropic, gemini."""
    config: ModelConfig

    async def complete(self, request: ModelRequest, on_event: OnEvent | None = None) -> ModelTurn:
        """Send one turn and decode the answer; `on_event` sees the stream as it arrives. Raises
        `ModelError` (`model.*`); cancelling the awaiting task closes the HTTP request."""
        ...

    def user_message(self, text: str) -> list[dict[str, Any]]:
        """The messages that carry a user's text."""
        ...

    def assistant_message(self, turn: ModelTurn) -> list[dict[str, Any]]:
        """The messages that carry `turn` back to the provider: text, calls (arguments that are not a
        JSON object as `{}`, as replay does), provider_items and each call's provider_data."""
        ...

    def tool_results(self, turn: ModelTurn, results: Sequence[AgentToolResult],
                     notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The messages that answer `turn`'s calls with `results` (same order, one each), followed by
        `notes` (user text for the next turn: background reports) where the provider allows them."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client."""
        ...


__all__ = ["STOP_REASONS", "ModelClient", "ModelConfig", "ModelRequest", "ModelTurn", "OnEvent", "StopReason",
           "StreamEvent", "ToolChoice", "Usage"]
