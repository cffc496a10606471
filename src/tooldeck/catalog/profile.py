"""Profile: which tools an invocation may use, under which limits. Loadable from TOML or JSON."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tooldeck.conversation.settings import ConversationSettings
from tooldeck.core.errors import ProfileError
from tooldeck.core.ids import ToolId
from tooldeck.core.preconditions import Requires, RequiresError, parse_requires

Permission = Literal["allow", "ask", "deny"]
LoadingMode = Literal["eager", "deferred", "names_only"]

DEFAULT_BUILTINS: tuple[str, ...] = (
    "builtin:workspace.list_files",
    "builtin:workspace.search_files",
    "builtin:workspace.read_file",
    "builtin:workspace.write_file",
    "builtin:workspace.apply_patch",
    "builtin:workspace.remove_file",
    "builtin:workspace.restore_file",
    "builtin:workspace.shell",
    "builtin:workspace.commit",
    "builtin:workspace.finish",
    "builtin:background.command",
    "builtin:background.tasks",
    "builtin:dice.roll",
)
DEFAULT_ALLOW: tuple[str, ...] = (*DEFAULT_BUILTINS, "extension/*", "script/*", "mcp/*")


def is_pattern(entry: str) -> bool:
    return any(c in entry for c in "*?[")


def matches(pattern: str, tool_id: str) -> bool:
    return pattern == tool_id or (is_pattern(pattern) and fnmatch.fnmatchcase(tool_id, pattern))


class DescriptionOverride(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)


class WorkspaceRoots(BaseModel):
    """The top-level roots of a run's workspace, each one path segment. Anything else is hidden."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    writable: list[str] = Field(default_factory=lambda: ["output", "scratch", "plan", "summaries", "persist"])
    read_only: list[str] = Field(default_factory=lambda: ["tool-results", "skills"])
    body_file: str = "output/main.md"

    @field_validator("writable", "read_only")
    @classmethod
    def _one_segment(cls, roots: list[str]) -> list[str]:
        for root in roots:
            if not root or "/" in root or "\\" in root or root in (".", "..") or "\0" in root:
                raise ValueError(f"workspace root {root!r} must be one path segment")
        return roots


class Profile(BaseModel):
    """Entries of `allow`, `deny`, `permissions` and `max_calls_per_tool` are tool ids or globs
    (`extension/*`, `mcp/*:search_*`). `allow` is ordered: bindings follow it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW))
    deny: list[str] = Field(default_factory=list)
    descriptions: dict[str, DescriptionOverride] = Field(default_factory=dict)
    permissions: dict[str, Permission] = Field(default_factory=dict)
    default_permission: Permission = "allow"
    max_calls_per_invocation: int = Field(default=80, ge=1)
    max_calls_per_tool: dict[str, int] = Field(default_factory=dict)
    result_inline_limit: int = Field(default=50_000, ge=1)
    preview_chars: int = Field(default=3_000, ge=1)
    loading: LoadingMode = "eager"
    pinned: list[str] = Field(default_factory=list)
    """Tools kept in the tools array with full schemas in the deferred modes (ids or globs)."""
    native_search: bool = False
    """In the deferred modes, use the provider's own tool search where it has one (Anthropic, OpenAI Responses)."""
    tool_timeout_s: float = Field(default=60.0, gt=0)
    tool_timeouts: dict[str, float] = Field(default_factory=dict)
    max_concurrency: int = Field(default=8, ge=1)
    trace_content: bool = False
    """Put argument values and results on OpenTelemetry tool spans (docs/tracing.md); off: names and ids only."""
    shell_timeout_s: float = Field(default=30.0, gt=0)
    net_allow: list[str] = Field(default_factory=list)
    """Destinations the network tools may reach although the SSRF guard refuses them (net/guard.py): host
    names or globs, IP addresses, CIDR networks."""
    search_web_url: str | None = None
    """`search_web`'s web endpoint (DuckDuckGo's HTML results format); None: DuckDuckGo's own."""
    search_news_url: str | None = None
    """`search_web`'s news endpoint (Google News' RSS search format); None: Google News' own."""
    workspace: WorkspaceRoots = Field(default_factory=WorkspaceRoots)
    requires: dict[str, Any] = Field(default_factory=dict)
    """Preconditions per tool id or glob (core/preconditions.py), on top of the tool's own; every match applies."""
    # -- conversation (docs/conversation.md#profile-keys) --
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    """The chat bound to the run and its world info, for `chat_search`, `chat_read_messages`,
    `worldinfo_read_activated`."""

    @field_validator("allow", "deny", "pinned")
    @classmethod
    def _entries_are_ids_or_patterns(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if not is_pattern(entry):
                ToolId.parse(entry)
        return entries

    @field_validator("requires")
    @classmethod
    def _requires_parse(cls, table: dict[str, Any]) -> dict[str, Requires]:
        out: dict[str, Requires] = {}
        for key, value in table.items():
            if not is_pattern(key):
                ToolId.parse(key)
            try:
                out[key] = parse_requires(value, f"requires[{key!r}]")
            except RequiresError as exc:
                raise ValueError(str(exc)) from None
        return out

    def requires_for(self, tool_id: str) -> Requires | None:
        """Every `requires` entry that names `tool_id` (exactly or by glob), merged; `None` when none does."""
        found: Requires | None = None
        for pattern, value in self.requires.items():
            if pattern == tool_id or matches(pattern, tool_id):
                found = value if found is None else found.merged(value)
        return found

    @field_validator("max_calls_per_tool")
    @classmethod
    def _budgets_positive(cls, budgets: dict[str, int]) -> dict[str, int]:
        for key, value in budgets.items():
            if value < 1:
                raise ValueError(f"max_calls_per_tool[{key!r}] must be at least 1")
        return budgets

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ProfileError("profile.unreadable", f"cannot read profile {p}: {exc.strerror}") from exc
        try:
            data: Any = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            kind = p.suffix[1:] or "JSON"
            raise ProfileError("profile.unparsable", f"profile {p} is not valid {kind}: {exc}") from exc
        return cls.parse(data, source=str(p))

    @classmethod
    def parse(cls, data: Any, source: str = "profile") -> Profile:
        if isinstance(data, dict) and "profile" in data and isinstance(data["profile"], dict):
            data = data["profile"]
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
            raise ProfileError("profile.invalid", f"{source}: {problems}") from exc

    def first_match(self, table: dict[str, Any], tool_id: str) -> Any:
        if tool_id in table:
            return table[tool_id]
        for pattern, value in table.items():
            if matches(pattern, tool_id):
                return value
        return None

    def permission_for(self, tool_id: str) -> Permission:
        return self.first_match(self.permissions, tool_id) or self.default_permission

    def is_denied(self, tool_id: str) -> bool:
        return any(matches(p, tool_id) for p in self.deny)

    def timeout_for(self, tool_id: str) -> float:
        return self.first_match(self.tool_timeouts, tool_id) or self.tool_timeout_s
