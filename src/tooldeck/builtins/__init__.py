"""Builtin tools. Each module exports `TOOLS: list[BuiltinTool]`; add a module here to register it."""

from __future__ import annotations

from tooldeck.builtins.registry import BuiltinTool


def default_builtins() -> list[BuiltinTool]:
    from tooldeck.builtins import (
        background,
        calculate,
        chatbots,
        dice,
        error_memory,
        html_template,
        media,
        net,
        net_download,
        net_fetch,
        net_search,
        open_file,
        public_api,
        schedules,
        secrets,
        shell,
        workspace_control,
        workspace_edit,
        workspace_files,
    )

    tools = [*dice.TOOLS, *workspace_files.TOOLS, *workspace_edit.TOOLS, *workspace_control.TOOLS,
             *shell.TOOLS, *background.TOOLS, *calculate.TOOLS, *net.TOOLS,
             *net_download.TOOLS, *net_fetch.TOOLS,
             *net_search.TOOLS, *error_memory.TOOLS,
             *open_file.TOOLS, *secrets.TOOLS, *public_api.TOOLS, *html_template.TOOLS,
             *media.TOOLS, *chatbots.TOOLS, *schedules.TOOLS, *_agenvoy_files()]
    # the conversation's fixed tools (Agenvoy's fixed set beside find_tools / run_tool: snapshot/deferred.py)
    from tooldeck.builtins import ask_user, reasoning_guide, todo, write_result

    tools += [*reasoning_guide.TOOLS, *todo.TOOLS, *ask_user.TOOLS, *write_result.TOOLS]
    return tools


def _agenvoy_files() -> list[BuiltinTool]:
    # Agenvoy's file family (issue 17 item 1); in the catalog beside the workspace_* tools, offered per
    # the Profile's `builtins` key.
    from tooldeck.builtins import agenvoy_files

    return agenvoy_files.tools()
