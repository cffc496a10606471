"""Builtin tools. Each module exports `TOOLS: list[BuiltinTool]`; add a module here to register it.

The core families (the default Profile's builtins) load with every Runtime. The optional families
load only when a Profile the Runtime serves allows one of their tools (`OPTIONAL_FAMILIES` names their
ids without importing them), so `tooldeck call dice_roll` does not import the network, media, chat,
secrets, schedules or Agenvoy file modules it never offers.
"""

from __future__ import annotations

import importlib

from tooldeck.builtins.registry import BuiltinTool

CORE_FAMILIES: tuple[str, ...] = (
    "dice", "workspace_files", "workspace_edit", "workspace_control", "shell", "background",
    # the conversation's fixed tools (Agenvoy's fixed set beside find_tools / run_tool: snapshot/deferred.py)
    "reasoning_guide", "todo", "ask_user", "write_result", "chat_history",
)
OPTIONAL_FAMILIES: dict[str, tuple[str, ...]] = {
    "calculate": ("builtin:calculate",),
    "net": ("builtin:http_request",),
    "net_download": ("builtin:download_file",),
    "net_fetch": ("builtin:fetch_page",),
    "net_search": ("builtin:search_web",),
    "error_memory": ("builtin:error_history", "builtin:write_error"),
    "open_file": ("builtin:open_file",),
    "secrets": ("builtin:store_secret",),
    "public_api": ("builtin:public_api_list",),
    "html_template": ("builtin:html_template",),
    "media": ("builtin:generate_image", "builtin:generate_audio"),
    "chatbots": ("builtin:list_chatbot", "builtin:send_to_chatbot"),
    "schedules": ("builtin:schedules",),
    # the conversation tools (docs/conversation.md)
    "chat": ("builtin:chat.search", "builtin:chat.read_messages"),
    "worldinfo": ("builtin:worldinfo.read_activated",),
    # delegation (TauriTavern) and subagents (Agenvoy): docs/agent.md, "Delegation and subagents"
    "delegate": ("builtin:agent.delegate", "builtin:agent.await"),
    "delegate_return": ("builtin:agent.handoff", "builtin:task.return"),
    "subagents": ("builtin:subagents", "builtin:background.subagents"),
    # Agenvoy's file family (issue 17 item 1), offered per the Profile's `builtins` key
    "agenvoy_files": ("builtin:find_files", "builtin:read_files", "builtin:edit_file", "builtin:remove_file",
                      "builtin:restore_file", "builtin:file_history", "builtin:run_command"),
}
"""Optional family module → the ids of its tools (tests/core/test_builtin_families.py holds it to the modules)."""


def family_tools(name: str) -> list[BuiltinTool]:
    module = importlib.import_module(f"tooldeck.builtins.{name}")
    tools = module.tools() if name == "agenvoy_files" else module.TOOLS
    return list(tools)


def core_builtins() -> list[BuiltinTool]:
    return [tool for name in CORE_FAMILIES for tool in family_tools(name)]


def default_builtins() -> list[BuiltinTool]:
    """Every builtin tool, core and optional."""
    return [*core_builtins(), *(tool for name in OPTIONAL_FAMILIES for tool in family_tools(name))]
