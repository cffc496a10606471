"""Profile: which tools an invocation may use, under which limits. Loadable from TOML or JSON."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from tooldeck.conversation.settings import ConversationSettings
from tooldeck.core.errors import ProfileError
from tooldeck.core.ids import ToolId
from tooldeck.core.preconditions import Requires, RequiresError, parse_requires
from tooldeck.core.typed_config import Config, ConfigError, Field, config_class, field_validator

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
    # the conversation's fixed tools (snapshot/deferred.py FIXED_IDS; ask_user only with an answerer)
    "builtin:reasoning_guide",
    "builtin:write_todo",
    "builtin:ask_user",
    "builtin:write_result",
    "builtin:chat_history",
)
DEFAULT_ALLOW: tuple[str, ...] = (*DEFAULT_BUILTINS, "extension/*", "script/*", "mcp/*")


# -- builtin families (issue 17 item 1) ---------------------------------------------------------------
BuiltinFamily = Literal["tauritavern", "agenvoy", "both"]
TAURITAVERN_FILE_TOOLS: tuple[str, ...] = tuple(t for t in DEFAULT_BUILTINS if t.startswith(
    ("builtin:workspace.list_", "builtin:workspace.search_", "builtin:workspace.read_", "builtin:workspace.write_",
     "builtin:workspace.apply_", "builtin:workspace.remove_", "builtin:workspace.restore_", "builtin:workspace.shell")))
"""The `workspace_*` file tools and the shell: the TauriTavern form of the workspace engine."""
AGENVOY_FILE_TOOLS: tuple[str, ...] = (
    "builtin:find_files", "builtin:read_files", "builtin:edit_file", "builtin:remove_file",
    "builtin:restore_file", "builtin:file_history", "builtin:run_command",
)
"""The same engine in Agenvoy's form (builtins/agenvoy_files/)."""


def family_allow(family: str) -> list[str]:
    """The default `allow` list of a family: its file tools, then the builtins both families share."""
    shared = [t for t in DEFAULT_BUILTINS if t not in TAURITAVERN_FILE_TOOLS]
    files = {"tauritavern": TAURITAVERN_FILE_TOOLS, "agenvoy": AGENVOY_FILE_TOOLS,
             "both": TAURITAVERN_FILE_TOOLS + AGENVOY_FILE_TOOLS}[family]
    return [*files, *shared, "extension/*", "script/*", "mcp/*"]


def excluded_by_family(family: str, tool_id: str) -> bool:
    """Whether the Profile's family leaves this tool out of the catalog (whatever `allow` says)."""
    if family == "both":
        return False
    other = AGENVOY_FILE_TOOLS if family == "tauritavern" else TAURITAVERN_FILE_TOOLS
    return tool_id in other


def is_pattern(entry: str) -> bool:
    return any(c in entry for c in "*?[")


def matches(pattern: str, tool_id: str) -> bool:
    return pattern == tool_id or (is_pattern(pattern) and fnmatch.fnmatchcase(tool_id, pattern))


@config_class
class DescriptionOverride(Config):
    description: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)


@config_class
class WorkspaceRoots(Config):
    """The top-level roots of a run's workspace, each one path segment. Anything else is hidden."""

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


@config_class
class ArgumentRule(Config):
    """A permission for the calls of `tool` whose arguments match (policy/rules.py; docs/configuration.md)."""

    tool: str
    permission: Permission
    command: str | None = None
    """A shell command pattern for the tool's `command` argument: `git diff:*` (these words, then anything)
    or a glob over the words (`rm -rf *`); matched against every simple command of the parsed line."""
    path: str | None = None
    """A glob over the workspace paths in the arguments (`path`, `paths`, `file`, `output_file`, …)."""
    host: str | None = None
    """A glob over the host of the URLs in the arguments (`url`, `urls`)."""
    match: dict[str, str] = Field(default_factory=dict)
    """JSON pointer → glob over the value there (`{"/repo" = "acme/*"}`)."""

    @field_validator("tool")
    @classmethod
    def _tool_is_id_or_pattern(cls, tool: str) -> str:
        if not is_pattern(tool):
            ToolId.parse(tool)
        return tool

    @field_validator("command")
    @classmethod
    def _command_pattern(cls, command: str | None) -> str | None:
        if command is not None:
            from tooldeck.policy.rules import CommandPattern

            CommandPattern.parse(command)
        return command

    @field_validator("match")
    @classmethod
    def _pointers(cls, match: dict[str, str]) -> dict[str, str]:
        from tooldeck.policy.rules import parse_pointer

        for pointer in match:
            parse_pointer(pointer)
        return match


@config_class
class HookSpec(Config):
    """An executable hook (policy/hooks_exec.py; docs/configuration.md "Hooks")."""

    event: Literal["pre_call", "post_call"]
    command: list[str]
    """The program and its arguments (no shell); a relative path with a slash (`./check.sh`) is the home's."""
    tool: str = "*"
    """The tools it hooks: a tool id or a glob."""
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    name: str | None = None
    """How messages and records name it (default: the command)."""

    @field_validator("command")
    @classmethod
    def _command(cls, command: list[str]) -> list[str]:
        if not command or not command[0]:
            raise ValueError("a hook's command needs at least the program, e.g. [\"./check.sh\"]")
        if any("\0" in part for part in command):
            raise ValueError("a hook's command cannot hold a NUL character")
        return command

    @field_validator("tool")
    @classmethod
    def _tool(cls, tool: str) -> str:
        if not is_pattern(tool):
            ToolId.parse(tool)
        return tool


@config_class
class Profile(Config):
    """Entries of `allow`, `deny`, `permissions` and `max_calls_per_tool` are tool ids or globs
    (`extension/*`, `mcp/*:search_*`). `allow` is ordered: bindings follow it. Frozen: change one with
    `profile.replace(key=value)`; `profile.fields_set` names the keys given explicitly."""

    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW))
    deny: list[str] = Field(default_factory=list)
    descriptions: dict[str, DescriptionOverride] = Field(default_factory=dict)
    permissions: dict[str, Permission] = Field(default_factory=dict)
    default_permission: Permission = "allow"
    annotation_defaults: bool = True
    """Annotations set defaults: a destructive tool asks (unless `permissions` names it), a read-only MCP tool
    is concurrency-safe. False: a destructive tool gets `default_permission`, MCP tools run one at a time."""
    serial: list[str] = Field(default_factory=list)
    """Tools (ids or globs) whose calls never run together with other calls of their turn."""
    rules: list[ArgumentRule] = Field(default_factory=list)
    """Argument rules: a permission for the calls whose arguments match (policy/rules.py)."""
    hooks: list[HookSpec] = Field(default_factory=list)
    """Executable pre- and post-call hooks (policy/hooks_exec.py), in the order they run."""
    max_calls_per_invocation: int = Field(default=80, ge=1)
    max_calls_per_tool: dict[str, int] = Field(default_factory=dict)
    max_identical_calls: int = Field(default=3, ge=0)
    """Identical calls (same tool, same arguments, same result) allowed in a row in a run; the next one is
    refused with `tool.repeated_call`, as is an A-B-A-B cycle (repeats.py). 0: no detection."""
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
    public_api_list_url: str | None = None
    """`public_api_list`'s endpoint (Agenvoy's Public API List format); None: https://public-api-list.agenvoy.com/."""
    workspace: WorkspaceRoots = Field(default_factory=WorkspaceRoots)
    requires: dict[str, Any] = Field(default_factory=dict)
    """Preconditions per tool id or glob (core/preconditions.py), on top of the tool's own; every match applies."""
    # -- builtin families (issue 17 item 1, docs/workspace.md "Agenvoy's file family") --
    # -- secret redaction (issue 19 item 6, policy/redact.py, docs/configuration.md "Secret redaction") --
    redact: bool = True
    """Replace the values of the secrets tooldeck knows (`${VAR}` / `${secret:NAME}` of the configs, model keys,
    OAuth tokens, stored secrets) in every result before the model, the records or a spill file see them."""
    redact_formats: bool = False
    """Also replace well-known credential formats (AWS keys, GitHub and Slack tokens, sk-… keys, private key
    blocks, JWTs, Authorization headers) wherever they appear; off by default (see the docs for why)."""
    redact_patterns: list[str] = Field(default_factory=list)
    """More RE2 patterns to replace (a pattern with a capturing group replaces that group only)."""
    redact_ignore: list[str] = Field(default_factory=list)
    """Names of known secrets (variables, stored secrets) whose values are left as they are."""
    builtins: BuiltinFamily = "tauritavern"
    """Which file-tool family is in the catalog: TauriTavern's `workspace_*`, Agenvoy's `find_files` …, or both."""
    host_commands: bool = False
    """Whether `run_command` may run a command on the host (`sandbox: false`); each such call is `ask`."""
    # -- conversation (docs/conversation.md#profile-keys) --
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    """The chat bound to the run and its world info, for `chat_search`, `chat_read_messages`,
    `worldinfo_read_activated`."""

    @classmethod
    def prepare(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Without an explicit `allow`, the default list holds the chosen family's file tools."""
        if "allow" not in values and values.get("builtins") in ("agenvoy", "both"):
            return {**values, "allow": family_allow(values["builtins"])}
        return values

    @field_validator("allow", "deny", "pinned", "serial")
    @classmethod
    def _entries_are_ids_or_patterns(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if not is_pattern(entry):
                ToolId.parse(entry)
        return entries

    @field_validator("redact_patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        if patterns:
            from tooldeck.policy.redact import compile_pattern

            for pattern in patterns:
                compile_pattern(pattern)
        return patterns

    @field_validator("requires")
    @classmethod
    def _requires_parse(cls, table: dict[str, Any]) -> dict[str, Requires]:
        out: dict[str, Requires] = {}
        for key, value in table.items():
            if not is_pattern(key):
                ToolId.parse(key)
            if isinstance(value, Requires):  # already parsed: a `replace()` copy
                out[key] = value
                continue
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

    @field_validator("rules")
    @classmethod
    def _rules_have_a_condition(cls, rules: list[ArgumentRule]) -> list[ArgumentRule]:
        for i, rule in enumerate(rules):
            if rule.command is None and rule.path is None and rule.host is None and not rule.match:
                raise ValueError(f"rule {i} has no condition (command, path, host or match); a permission for "
                                 "every call of a tool goes in `permissions`")
        return rules

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
            return cls.from_mapping(data)
        except ConfigError as exc:
            raise ProfileError("profile.invalid", f"{source}: {exc.summary()}") from exc

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
        return any(matches(p, tool_id) for p in self.deny) or excluded_by_family(self.builtins, tool_id)

    def timeout_for(self, tool_id: str) -> float:
        return self.first_match(self.tool_timeouts, tool_id) or self.tool_timeout_s

