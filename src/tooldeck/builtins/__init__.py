"""Builtin tools. Each module exports `TOOLS: list[BuiltinTool]`; add a module here to register it."""

from __future__ import annotations

from tooldeck.builtins.registry import BuiltinTool


def default_builtins() -> list[BuiltinTool]:
    from tooldeck.builtins import (
        background,
        calculate,
        dice,
        error_memory,
        net,
        net_download,
        net_fetch,
        net_search,
        open_file,
        shell,
        workspace_control,
        workspace_edit,
        workspace_files,
    )

    return [*dice.TOOLS, *workspace_files.TOOLS, *workspace_edit.TOOLS, *workspace_control.TOOLS,
            *shell.TOOLS, *background.TOOLS, *calculate.TOOLS, *net.TOOLS,
            *net_download.TOOLS, *net_fetch.TOOLS,
            *net_search.TOOLS, *error_memory.TOOLS,
            *open_file.TOOLS,
            *_conversation_tools()]


def _conversation_tools() -> list[BuiltinTool]:  # the conversation tools (docs/conversation.md)
    from tooldeck.builtins import chat, chat_history, worldinfo

    return [*chat.TOOLS, *chat_history.TOOLS, *worldinfo.TOOLS]
