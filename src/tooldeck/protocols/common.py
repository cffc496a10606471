"""Provider-neutral shapes shared by the wire modules: one model turn of tool calls with their
results (what replay renders), a decoded call (what decoding produces), and a rule violation.

A turn may carry provider items (`ReplayTurn.items`: reasoning items, thinking blocks, text parts
that must travel back before its calls) and a call its provider data (`ReplayCall.provider_data`:
e.g. Gemini's `thoughtSignature`). Both are provider-native and belong to one provider family
(`ReplayTurn.source`, e.g. "anthropic"); a format renders them only for its own family and drops
them otherwise (`protocols/items.py`)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from tooldeck.core.arguments import MISSING, ToolArguments
from tooldeck.core.errors import INVALID_TOOL_CALL, TooldeckError
from tooldeck.core.jsonvalue import json_text
from tooldeck.core.results import ERROR_MARKER, ToolImage

TEMPLATE_TOKEN = "<|"


@dataclass(frozen=True, slots=True)
class ReplayCall:
    """One call and its one result, ready for any provider (ids and names already final)."""

    id: str
    name: str
    arguments: dict[str, Any]
    content: str
    is_error: bool = False
    provider_data: dict[str, Any] | None = None
    """Provider-native keys that go beside the call in its wire object (of the turn's `source` family)."""
    images: tuple[ToolImage, ...] = ()
    """Images of the result, sent beside its text in the format's own shape (`AgentToolResult.images`)."""

    def arguments_json(self) -> str:
        """The arguments as a JSON text, exact (integers beyond 64 bits included)."""
        return json_text(self.arguments)

    def marked_text(self) -> str:
        """The result text for providers without an error flag (same rule as AgentToolResult.model_text)."""
        if self.is_error:
            return f"{ERROR_MARKER}\n\n{self.content.strip()}"
        return self.content


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types all four providers take."""


def image_base64(image: ToolImage) -> str:
    return base64.b64encode(image.data).decode("ascii")


def data_url(image: ToolImage) -> str:
    return f"data:{image.mime};base64,{image_base64(image)}"


def image_label(call: ReplayCall, n: int) -> str:
    """The text before an image sent outside its call's result (Chat, Gemini): which call and which copy."""
    return f"[image {n} of the result of {call.name} (call {call.id}): {call.images[n - 1].path}]"


@dataclass(frozen=True, slots=True)
class ReplayTurn:
    """One assistant turn: its tool calls in the order the model sent them, each with its result."""

    calls: tuple[ReplayCall, ...]
    items: tuple[dict[str, Any], ...] = ()
    """Provider-native items of the assistant turn, in the order the model sent them, before its calls."""
    source: str | None = None
    """The provider family (`protocols.items.FAMILIES`) the items and the calls' provider data come from."""


@dataclass(frozen=True, slots=True)
class Violation:
    """A message list breaks a provider rule that would make the request fail (HTTP 400)."""

    code: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.code} at {self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class DecodedCall:
    """A tool call parsed from a provider response: arguments decoded, the wire value kept verbatim."""

    id: str
    name: str
    arguments: ToolArguments
    raw: Any
    """The wire arguments exactly as received (a JSON string, an object, or MISSING)."""
    synthesized_id: bool = False
    provider_data: dict[str, Any] | None = None
    """Provider-native keys of the call that must travel back with it (Gemini `thoughtSignature`,
    a Responses `function_call` item's own `id`), verbatim; None when there are none."""

    def to_call(self) -> dict[str, Any]:
        """The runtime call `{"id", "name", "arguments"}` (and `"provider_data"` when there is some);
        `arguments` is the raw wire value, so the records keep it verbatim and the gate decodes it
        through ToolArguments itself."""
        call: dict[str, Any] = {"id": self.id, "name": self.name}
        if self.raw is not MISSING:
            call["arguments"] = self.raw
        if self.provider_data:
            call["provider_data"] = self.provider_data
        return call


def clean_name(name: Any, where: str) -> str:
    """The model's call name with leaked chat-template tokens (from `<|` on) cut off."""
    if not isinstance(name, str):
        raise TooldeckError(INVALID_TOOL_CALL, f"{where} has no function name; the model must name the tool it "
                            "calls (ask it to retry the turn)")
    cut = name.split(TEMPLATE_TOKEN, 1)[0].strip()
    if not cut:
        raise TooldeckError(INVALID_TOOL_CALL, f"{where} has an empty function name ({name!r}); ask the model to "
                            "retry the turn")
    return cut


def require_id(call_id: Any, where: str) -> str:
    if not isinstance(call_id, str) or not call_id.strip():
        raise TooldeckError(INVALID_TOOL_CALL, f"{where} has no call id; the provider must send one to pair the "
                            "result with the call (ask the model to retry the turn)")
    return call_id


def decoded(call_id: str, name: str, raw: Any, synthesized: bool = False,
            provider_data: dict[str, Any] | None = None) -> DecodedCall:
    return DecodedCall(call_id, name, ToolArguments.decode(raw), raw, synthesized, provider_data)
