"""ToolId: the stable, opaque identity of a tool across catalogs, profiles and records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tooldeck.core.errors import ToolIdError

SourceKind = Literal["builtin", "mcp", "extension", "script"]
_PREFIXED_KINDS = ("mcp", "extension", "script")


@dataclass(frozen=True, slots=True, order=True, eq=True)
class ToolId:
    """`<provider>:<native name>`, split at the first `:`.

    The provider is `builtin`, `mcp/<registration-id>`, `extension/<extension-id>` or
    `script/<dir-id>`. The native name may itself contain `:` and `.`.
    """

    provider: str
    name: str
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        # Ids are dict keys on the hot path (catalog lookups); hash once.
        object.__setattr__(self, "_hash", hash((self.provider, self.name)))
        self._validate()

    def __hash__(self) -> int:
        return self._hash

    def _validate(self) -> None:
        if not self.provider:
            raise ToolIdError("tool.provider_id_empty", "the provider part of a tool id is empty")
        if ":" in self.provider:
            raise ToolIdError("tool.provider_id_invalid", f"provider {self.provider!r} contains ':'")
        if not self.name:
            raise ToolIdError("tool.native_name_empty", "the native name part of a tool id is empty")

    @classmethod
    def parse(cls, text: str) -> ToolId:
        if not isinstance(text, str):
            raise ToolIdError("tool.id_invalid", f"a tool id must be a string, got {type(text).__name__}")
        provider, sep, name = text.partition(":")
        if not sep:
            raise ToolIdError("tool.id_invalid", f"{text!r} is not a tool id (expected '<provider>:<name>')")
        return cls(provider, name)

    @classmethod
    def builtin(cls, name: str) -> ToolId:
        return cls("builtin", name)

    @classmethod
    def mcp(cls, registration_id: str, name: str) -> ToolId:
        return cls(f"mcp/{_segment(registration_id, 'registration id')}", name)

    @classmethod
    def extension(cls, extension_id: str, name: str) -> ToolId:
        if not extension_id.strip() or not name.strip():
            raise ToolIdError("extension.tool_identity_required", "an extension tool needs an extension id and a name")
        return cls(f"extension/{_segment(extension_id, 'extension id')}", name)

    @classmethod
    def script(cls, dir_id: str, name: str) -> ToolId:
        return cls(f"script/{_segment(dir_id, 'script directory id')}", name)

    @property
    def kind(self) -> SourceKind:
        kind = _KINDS.get(self.provider)
        if kind is None:
            kind = _KINDS[self.provider] = _kind_of(self.provider)
        return kind

    @property
    def source_id(self) -> str:
        """The part after `kind/` (registration, extension or directory id); empty for builtins."""
        return self.provider.partition("/")[2]

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


_KINDS: dict[str, SourceKind] = {"builtin": "builtin"}


def _kind_of(provider: str) -> SourceKind:
    head, sep, _ = provider.partition("/")
    if sep and head in _PREFIXED_KINDS:
        return head  # type: ignore[return-value]
    raise ToolIdError("tool.provider_id_invalid", f"unknown tool provider {provider!r}")


def _segment(value: str, what: str) -> str:
    if not value or ":" in value:
        raise ToolIdError("tool.provider_id_invalid", f"{what} {value!r} must be non-empty and contain no ':'")
    return value
