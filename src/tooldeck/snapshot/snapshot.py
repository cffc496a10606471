"""The frozen, versioned tool snapshot of one invocation."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.errors import SnapshotError
from tooldeck.naming import PROTOCOLS
from tooldeck.snapshot.render import render_tool, wrap_tools_array

SCHEMA_VERSION = 1
LOADING_MODES = ("eager", "deferred", "names_only")


@dataclass(frozen=True, slots=True)
class Binding:
    descriptor: ToolDescriptor
    call_name: str
    max_calls: int | None = None

    @property
    def tool_id(self) -> str:
        return str(self.descriptor.id)

    def to_dict(self) -> dict[str, Any]:
        return {"descriptor": self.descriptor.to_dict(), "call_name": self.call_name, "max_calls": self.max_calls}


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: str
    provider: str
    bindings: tuple[Binding, ...]
    max_calls_per_invocation: int
    loading: str = "eager"
    tools: tuple[dict[str, Any], ...] = field(default=())
    """The rendered tools array (provider shape), frozen with the snapshot."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Data that later layers freeze with the snapshot (e.g. the deferred listing)."""

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def build(
        cls,
        provider: str,
        bindings: list[Binding],
        max_calls_per_invocation: int,
        loading: str = "eager",
        snapshot_id: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Snapshot:
        if tools is None:
            entries = [render_tool(b.call_name, b.descriptor.description, b.descriptor.input_schema, provider)
                       for b in bindings]
            tools = wrap_tools_array(entries, provider)
        return cls(
            id=snapshot_id or f"snap_{uuid.uuid4().hex}",
            provider=provider,
            bindings=tuple(bindings),
            max_calls_per_invocation=max_calls_per_invocation,
            loading=loading,
            tools=tuple(tools),
            extra=dict(extra or {}),
        )

    def validate(self) -> None:
        if not self.id:
            raise SnapshotError("tool.snapshot_id_empty", "snapshot id is empty")
        if self.provider not in PROTOCOLS:
            raise SnapshotError("tool.snapshot_provider_invalid", f"unknown provider {self.provider!r}")
        if self.loading not in LOADING_MODES:
            raise SnapshotError("tool.snapshot_loading_invalid", f"unknown loading mode {self.loading!r}")
        if self.max_calls_per_invocation < 1:
            raise SnapshotError("tool.snapshot_budget_invalid", "max_calls_per_invocation must be at least 1")
        ids: set[str] = set()
        names: set[str] = set()
        for b in self.bindings:
            if not b.call_name:
                raise SnapshotError("tool.snapshot_alias_empty", f"{b.tool_id} has an empty call name")
            if b.max_calls is not None and b.max_calls < 1:
                raise SnapshotError("tool.snapshot_tool_budget_invalid", f"{b.tool_id} has a call budget below 1")
            if b.tool_id in ids:
                raise SnapshotError("tool.snapshot_duplicate_id", f"{b.tool_id} is bound twice")
            folded = b.call_name.casefold()
            if folded in names:
                raise SnapshotError("tool.snapshot_duplicate_alias", f"call name {b.call_name!r} is used twice")
            ids.add(b.tool_id)
            names.add(folded)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "id": self.id,
            "provider": self.provider,
            "loading": self.loading,
            "max_calls_per_invocation": self.max_calls_per_invocation,
            "bindings": [b.to_dict() for b in self.bindings],
            "tools": list(self.tools),
            "extra": dict(self.extra),
        }

    def to_json(self) -> str:
        return orjson.dumps(self.to_dict()).decode()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Snapshot:
        known = {"schema_version", "id", "provider", "loading", "max_calls_per_invocation", "bindings", "tools",
                 "extra"}
        unknown = set(data) - known
        if unknown:
            raise SnapshotError("tool.snapshot_schema_unsupported", f"unknown snapshot fields: {sorted(unknown)}")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise SnapshotError(
                "tool.snapshot_schema_unsupported",
                f"snapshot schema version {data.get('schema_version')!r} is not supported (expected {SCHEMA_VERSION})",
            )
        try:
            bindings = [
                Binding(ToolDescriptor.from_dict(b["descriptor"]), b["call_name"], b.get("max_calls"))
                for b in data["bindings"]
            ]
            return cls(
                id=data["id"],
                provider=data["provider"],
                bindings=tuple(bindings),
                max_calls_per_invocation=int(data["max_calls_per_invocation"]),
                loading=data.get("loading", "eager"),
                tools=tuple(data.get("tools") or ()),
                extra=dict(data.get("extra") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise SnapshotError("tool.snapshot_schema_unsupported", f"malformed snapshot: {exc}") from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise SnapshotError("tool.snapshot_schema_unsupported", f"snapshot is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise SnapshotError("tool.snapshot_schema_unsupported", "snapshot JSON must be an object")
        return cls.from_dict(data)

    def by_name(self) -> dict[str, Binding]:
        return {b.call_name: b for b in self.bindings}
