"""Deferred schema loading: a fixed tools array (`find_tools`, `run_tool`, the conversation's fixed
tools, pinned tools) and a per-turn context text that lists every other tool by name.

The conversation's fixed tools (`FIXED_IDS`, Agenvoy's fixed set: `reasoning_guide`, `write_todo`,
`chat_history`, `ask_user`, `write_result`) stay in the array with full schemas in every deferred mode,
right after the meta-tools and in that order whatever the Profile's `allow` order, before the
Profile's `pinned` tools: each one that the invocation binds (allowed, not denied, its condition met).

Modes (Profile.loading):
- `eager`: every schema in the tools array.
- `deferred`: the array holds only `find_tools`, `run_tool` and the pinned tools, so it is
  byte-identical on every turn whatever tools come and go; the others are listed by name in
  `turn_context()` and called through `run_tool(name, args)` after `find_tools` fetched their schema.
- `names_only`: every tool is in the array by name and description only (no parameters); a tool's
  first call before its schema was fetched returns the schema instead of running.

With `Profile.native_search` and a provider that has its own tool search (Anthropic, OpenAI
Responses), the array instead carries every tool marked `defer_loading` plus the provider's
search tool, and calls go straight to the tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tooldeck.naming import MCP_PREFIX, MCP_SEPARATOR
from tooldeck.snapshot.render import render_tool, wrap_tools_array
from tooldeck.snapshot.snapshot import Binding

FIND_TOOLS = "find_tools"
RUN_TOOL = "run_tool"
FIND_TOOLS_ID = "builtin:find_tools"
RUN_TOOL_ID = "builtin:run_tool"
META_IDS = frozenset((FIND_TOOLS_ID, RUN_TOOL_ID))
FIXED_IDS: tuple[str, ...] = ("builtin:reasoning_guide", "builtin:write_todo", "builtin:chat_history",
                              "builtin:ask_user", "builtin:write_result")
"""The conversation's fixed tools, in the order they follow find_tools / run_tool in the array."""
NATIVE_SEARCH_PROVIDERS = frozenset(("anthropic", "openai"))
STUB_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
ANTHROPIC_SEARCH_TOOL = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
OPENAI_SEARCH_TOOL = {"type": "tool_search"}


def uses_meta_tools(loading: str, native_search: bool, provider: str) -> bool:
    return loading != "eager" and not (native_search and provider in NATIVE_SEARCH_PROVIDERS)


def meta_ids_for(loading: str) -> tuple[str, ...]:
    return (FIND_TOOLS_ID, RUN_TOOL_ID) if loading == "deferred" else (FIND_TOOLS_ID,)


def fixed_bindings(bindings: Sequence[Binding]) -> list[Binding]:
    """The invocation's bindings of the fixed tools, in `FIXED_IDS` order."""
    by_id = {b.tool_id: b for b in bindings if b.tool_id in FIXED_IDS}
    return [by_id[tid] for tid in FIXED_IDS if tid in by_id]


def _render(bindings: Iterable[Binding], provider: str, stub: bool = False) -> list[dict[str, Any]]:
    return [render_tool(b.call_name, b.descriptor.description, STUB_SCHEMA if stub else b.descriptor.input_schema,
                        provider) for b in bindings]


def tools_array(provider: str, loading: str, meta: Sequence[Binding], pinned: Sequence[Binding],
                listed: Sequence[Binding]) -> list[dict[str, Any]]:
    """The provider-ready array for the meta-tool modes."""
    entries = _render([*meta, *pinned], provider)
    if loading == "names_only":
        entries += _render(listed, provider, stub=True)
    return wrap_tools_array(entries, provider)


def native_search_array(provider: str, pinned: Sequence[Binding], listed: Sequence[Binding]) -> list[dict[str, Any]]:
    """Every tool in the array with `defer_loading: true` plus the provider's own search tool."""
    if provider == "anthropic":
        out: list[dict[str, Any]] = [dict(ANTHROPIC_SEARCH_TOOL), *_render(pinned, provider)]
        for entry in _render(listed, provider):
            out.append({**entry, "defer_loading": True})
        return out
    out = [dict(OPENAI_SEARCH_TOOL)]
    for b, deferred in [*((b, False) for b in pinned), *((b, True) for b in listed)]:
        entry = {"type": "function", "name": b.call_name, "description": b.descriptor.description,
                 "parameters": dict(b.descriptor.input_schema)}
        if deferred:
            entry["defer_loading"] = True
        out.append(entry)
    return out


def group_names(names: Iterable[str]) -> list[str]:
    """Sorted names with MCP tools grouped by server: `mcp__github__{create_issue, list_issues}`."""
    plain: list[str] = []
    servers: dict[str, list[str]] = {}
    for name in names:
        if name.startswith(MCP_PREFIX) and MCP_SEPARATOR in name[len(MCP_PREFIX):]:
            server, tool = name[len(MCP_PREFIX):].split(MCP_SEPARATOR, 1)
            servers.setdefault(server, []).append(tool)
        else:
            plain.append(name)
    out = sorted(plain)
    for server in sorted(servers):
        tools = sorted(servers[server])
        inner = tools[0] if len(tools) == 1 else "{" + ", ".join(tools) + "}"
        out.append(f"{MCP_PREFIX}{server}{MCP_SEPARATOR}{inner}")
    return out


def turn_context(loading: str, listed_names: Iterable[str]) -> str:
    names = group_names(listed_names)
    if not names:
        return ""
    if loading == "deferred":
        return "Tools (call through run_tool; fetch schemas with find_tools): " + ", ".join(names)
    return "Tools (fetch a schema with find_tools before the first call, then call the tool by name): " + ", ".join(
        names)
