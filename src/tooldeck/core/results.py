"""Results: what a handler returns (ToolOutput) and what the model and records get (AgentToolResult)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

ERROR_MARKER = "## Tool error"


@dataclass(frozen=True, slots=True)
class ToolEffect:
    """A side effect a tool hands to the runtime to record and expose to the host
    (a file written, a commit requested, a finish)."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.data}


MODEL_IMAGE_MAX_BYTES = 3 * 1024 * 1024 + 768 * 1024
"""3.75 MiB: the largest image sent to a model provider (Anthropic refuses an image whose base64 text is over
5 MiB, the strictest of the four; OpenAI and Gemini take more)."""
IMAGE_ROOT = "tool-results/images"
"""Where a tool keeps the copy of an image it shows the model, in the workspace, named by its content."""
IMAGE_SUFFIXES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


@dataclass(frozen=True, slots=True)
class ToolImage:
    """An image a result shows the model beside its text (`read_files` of a PNG): `path` is the workspace copy
    under `tool-results/images/`; `data` the bytes, which the providers send as image content (`protocols/*`)."""

    path: str
    mime: str
    data: bytes = field(repr=False)
    """(The records keep `image_ref(image)` among the result's resource refs, never the bytes.)"""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "mime": self.mime, "bytes": len(self.data)}


def image_path(mime: str, digest: str) -> str:
    """The workspace path of an image's copy: `tool-results/images/<sha256>.<ext>` (same bytes, same file)."""
    return f"{IMAGE_ROOT}/{digest}.{IMAGE_SUFFIXES.get(mime, 'img')}"


IMAGE_REF = "image:"
"""A resource ref `image:<path>` says the result showed the model the image at <path> (`image_ref`)."""


def image_ref(image: ToolImage) -> str:
    """The resource ref the records keep for an image the model got: `image:<mime>:<path>`."""
    return f"{IMAGE_REF}{image.mime}:{image.path}"


def parse_image_ref(ref: str) -> tuple[str, str] | None:
    """(MIME type, path) of an `image_ref`, or None for any other ref."""
    if not ref.startswith(IMAGE_REF):
        return None
    mime, sep, path = ref[len(IMAGE_REF):].partition(":")
    return (mime, path) if sep and mime in IMAGE_SUFFIXES and path else None


@dataclass(slots=True)
class ToolOutput:
    """What a tool handler produces. `raw` is the source's own result, kept for audit."""

    content: str
    structured: Any = None
    is_error: bool = False
    error_code: str | None = None
    resource_refs: Sequence[str] = ()
    effects: Sequence[ToolEffect] = ()
    raw: Any = None
    may_have_executed: bool = False
    """For errors: whether the operation may have run (timeouts, lost connections)."""
    redacted: tuple[str, Any] | None = None
    """(content, structured) the records and the host's events keep instead of the real ones, which only the
    model gets (a secret the user typed: builtins/ask_user.py). Such a result is never spilled to a file."""
    images: Sequence[ToolImage] = ()
    """Images the model gets beside the text, each at most `MODEL_IMAGE_MAX_BYTES` (see `ToolImage`)."""

    @classmethod
    def error(cls, code: str, message: str, structured: Any = None, **kw: Any) -> ToolOutput:
        if structured is None:
            structured = {"error": {"code": code, "message": message}}
        return cls(content=message, structured=structured, is_error=True, error_code=code, **kw)


@dataclass(frozen=True, slots=True)
class Redaction:
    """What secret redaction (policy/redact.py) took out of a result: markers per label, and the source's raw
    result as the records keep it (redacted too)."""

    counts: dict[str, int]
    raw: Any = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())


_JSON_TYPES = frozenset((int, float, bool, list, dict, type(None)))


def as_output(value: Any) -> ToolOutput:
    """What a tool returned → its output: a ToolOutput as is, a string as the content, anything else
    shown as JSON and kept as the structured value (a pydantic model as its JSON dump)."""
    kind = type(value)
    if kind is ToolOutput:
        return value
    if kind is str:
        return ToolOutput(value, None, False, None, (), (), value)
    if kind is int:  # an int's str() is its JSON text
        return ToolOutput(_plain_text(value), value, False, None, (), (), value)
    if kind not in _JSON_TYPES:  # exact types first: isinstance on pydantic's metaclass is slow
        if isinstance(value, ToolOutput):
            return value
        if isinstance(value, str):
            return ToolOutput(value, raw=value)
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            value = dump(mode="json")
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = _plain_text(value)
    return ToolOutput(text, structured=value, raw=value)


def _plain_text(value: Any) -> str:
    try:
        return str(value)
    except ValueError:  # an int longer than sys.get_int_max_str_digits()
        size = f" of {value.bit_length()} bits" if isinstance(value, int) else ""
        return f"<{type(value).__name__}{size}: too long to show as text>"


@dataclass(slots=True)
class AgentToolResult:
    call_id: str
    tool_id: str | None
    content: str
    structured: Any = None
    is_error: bool = False
    error_code: str | None = None
    resource_refs: list[str] = field(default_factory=list)
    redacted: tuple[str, Any] | None = None
    """`ToolOutput.redacted`: what the records and the host's events show instead of `content` / `structured`."""
    images: list[ToolImage] = field(default_factory=list)
    """`ToolOutput.images`: sent to the model beside `content` in each provider's shape (`protocols/*`)."""
    redaction: Redaction | None = None
    """The secrets projection replaced in this result (content, structured and raw alike), or None."""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "call_id": self.call_id,
            "tool_id": self.tool_id,
            "content": self.content,
            "structured": self.structured,
            "is_error": self.is_error,
            "error_code": self.error_code,
            "resource_refs": list(self.resource_refs),
        }
        if self.images:  # references only: the bytes are in the workspace copy
            out["images"] = [i.to_dict() for i in self.images]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentToolResult:
        return cls(
            call_id=data["call_id"],
            tool_id=data.get("tool_id"),
            content=data.get("content", ""),
            structured=data.get("structured"),
            is_error=bool(data.get("is_error")),
            error_code=data.get("error_code"),
            resource_refs=list(data.get("resource_refs") or []),
        )

    def model_text(self) -> str:
        """The text a provider without an error flag gets: errors carry a visible marker."""
        if self.is_error:
            return f"{ERROR_MARKER}\n\n{self.content.strip()}"
        return self.content


def recoverable_error(
    call_id: str, tool_id: str | None, code: str, message: str, structured: Any = None
) -> AgentToolResult:
    if structured is None:
        structured = {"error": {"code": code, "message": message}}
    return AgentToolResult(call_id, tool_id, message, structured, True, code, [])
