"""ToolDescriptor: what a source says about one tool."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tooldeck.core.ids import ToolId
from tooldeck.core.preconditions import Probes, Requires, unmet

Scene = Literal["chat", "session"]
ALL_SCENES: frozenset[Scene] = frozenset(("chat", "session"))


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """What a tool says about itself. `destructive` (a call may destroy something it cannot give back) makes
    the tool's default permission `ask` unless the Profile says otherwise (`permissions`,
    `annotation_defaults`; docs/configuration.md). MCP tools take theirs from the server's `readOnlyHint`
    (read-only MCP tools are concurrency-safe: the server runs them), `destructiveHint`, `idempotentHint`
    and `openWorldHint`."""

    read_only: bool = False
    mutating: bool = False
    control: bool = False
    idempotent: bool = False
    concurrency_safe: bool = False
    destructive: bool = False
    open_world: bool = False
    """the tool reaches beyond the host (the web, other people's systems)"""

    def to_dict(self) -> dict[str, bool]:
        return {
            "read_only": self.read_only,
            "mutating": self.mutating,
            "control": self.control,
            "idempotent": self.idempotent,
            "concurrency_safe": self.concurrency_safe,
            "destructive": self.destructive,
            "open_world": self.open_world,
        }

    @classmethod
    def from_mcp(cls, hints: Mapping[str, Any] | None) -> ToolAnnotations:
        """An MCP tool's annotations (wire names). Only a hint the server states counts: an absent
        `destructiveHint` is not taken as the spec's default (true), or every unannotated tool would ask."""
        hints = hints or {}
        read_only = hints.get("readOnlyHint") is True
        return cls(read_only=read_only, mutating=not read_only, concurrency_safe=read_only,
                   destructive=not read_only and hints.get("destructiveHint") is True,
                   idempotent=hints.get("idempotentHint") is True, open_world=hints.get("openWorldHint") is True)

    def flags(self) -> list[str]:
        """The set flags, for listings (`read_only`, `destructive`, …)."""
        return [name for name, value in self.to_dict().items() if value]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ToolAnnotations:
        data = data or {}
        return cls(**{k: bool(data.get(k, False)) for k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class AvailabilityContext:
    """What an availability condition may look at when an invocation is prepared."""

    scene: Scene
    headless: bool
    provider: str
    run_id: str
    probes: Probes | None = field(default=None, compare=False)
    """How `requires` reads the environment and PATH (catalog/probes.py); without them such a condition fails."""
    home: Path | None = field(default=None, compare=False)
    """The runtime's home, for conditions that read its configuration (e.g. `[models]` of tooldeck.toml)."""
    can_ask: bool = False
    """Someone can answer `ask_user` in this invocation (it has an answerer: builtins/ask_user.py)."""


_NO_PROBES = Probes(lambda _name: False, lambda _name: False)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a tool is left out of an invocation (`reason`), and whether its condition raised."""

    reason: str
    raised: bool = False


Availability = Callable[[AvailabilityContext], bool]


@dataclass(frozen=True, slots=True)
class ToolDescriptor:
    id: ToolId
    description: str
    input_schema: Mapping[str, Any]
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    scenes: frozenset[Scene] = ALL_SCENES
    available: Availability | None = None
    """A Python tool's `is_enabled(ctx)`: asked once per invocation before the snapshot freezes."""
    requires: Requires | None = None
    """Declarative preconditions (tool.json `requires`; core/preconditions.py)."""
    parts: tuple[tuple[str, Requires], ...] = ()
    """Named parts of the tool with preconditions of their own (the skills `run_skill` lists): a part whose
    conditions fail is taken out of the invocation's descriptor by `without_parts`."""
    without_parts: Callable[[ToolDescriptor, frozenset[str]], ToolDescriptor] | None = field(default=None,
                                                                                            compare=False)
    model_name: str | None = None
    """The name the source wants the model to see before sanitising (e.g. an extension's `name`)."""
    short_name: str | None = None
    """A shorter name the tool takes instead of `model_name` when no other tool of the invocation claims it and
    it is a valid call name as it is (an MCP tool's upstream name in names mode `original`)."""
    materialize: Callable[[ToolDescriptor, Any], ToolDescriptor] | None = field(default=None, compare=False)
    """Rewrites the descriptor for the invocation's Profile (e.g. the workspace roots in its text)."""
    confirm_when: Callable[[Mapping[str, Any]], bool] | None = field(default=None, compare=False)
    """The tool's own default for calls that need confirmation (e.g. `http_request` with a method other than
    GET): a call whose arguments make it true is `ask` instead of `allow`, unless the Profile sets this
    tool's permission itself."""

    def is_available(self, ctx: AvailabilityContext) -> bool:
        return self.verdict(ctx) is None

    def is_conditional(self) -> bool:
        return self.available is not None or bool(self.requires)

    def part_verdicts(self, ctx: AvailabilityContext) -> dict[str, Verdict | None]:
        """`<tool id>#<part>` → why that part is left out (`None`: kept)."""
        probes = ctx.probes or _NO_PROBES
        out: dict[str, Verdict | None] = {}
        for name, requires in self.parts:
            reason = unmet(requires, ctx.headless, ctx.provider, probes)
            out[f"{self.id}#{name}"] = None if reason is None else Verdict(reason)
        return out

    def verdict(self, ctx: AvailabilityContext, extra: Requires | None = None) -> Verdict | None:
        """`None` when the tool is available to `ctx` (scene, `available`, `requires` and the Profile's `extra`),
        else why not. A condition that raises leaves the tool out; it never propagates."""
        if ctx.scene not in self.scenes:
            return Verdict(f"not offered in scene {ctx.scene} (scenes: {', '.join(sorted(self.scenes))})")
        if self.available is not None:
            name = getattr(self.available, "__name__", "is_enabled")
            try:
                ok = bool(self.available(ctx))
            except Exception as exc:  # a host's condition: its fault leaves the tool out, named in the reason
                return Verdict(f"{name}(ctx) raised {type(exc).__name__}: {exc}", raised=True)
            if not ok:
                return Verdict(f"{name}(ctx) answered false")
        requires = (self.requires or Requires()).merged(extra)
        if requires:
            reason = unmet(requires, ctx.headless, ctx.provider, ctx.probes or _NO_PROBES)
            if reason is not None:
                return Verdict(reason)
        return None

    def with_description(self, description: str, properties: Mapping[str, str] | None = None) -> ToolDescriptor:
        schema = self.input_schema
        if properties:
            props = dict(schema.get("properties") or {})
            for key, text in properties.items():
                props[key] = {**props[key], "description": text}
            schema = {**schema, "properties": props}
        return replace(self, description=description, input_schema=schema)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": str(self.id),
            "title": self.title,
            "description": self.description,
            "input_schema": self.input_schema,
            "annotations": self.annotations.to_dict(),
            "scenes": sorted(self.scenes),
        }
        if self.output_schema is not None:
            out["output_schema"] = self.output_schema
        if self.model_name is not None:
            out["model_name"] = self.model_name
        if self.short_name is not None:
            out["short_name"] = self.short_name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolDescriptor:
        return cls(
            id=ToolId.parse(data["id"]),
            title=data.get("title"),
            description=data.get("description") or "",
            input_schema=data.get("input_schema") or {"type": "object", "properties": {}},
            output_schema=data.get("output_schema"),
            annotations=ToolAnnotations.from_dict(data.get("annotations")),
            scenes=frozenset(data.get("scenes") or ALL_SCENES),
            model_name=data.get("model_name"),
            short_name=data.get("short_name"),
        )
