"""How a Runtime picks up MCP servers: one call in `Runtime.__init__`; the manager is then a source like any
other (the gate hook and `close` come through the `ToolSource` port).

The MCP SDK (about half a second of imports) is loaded only when the home dir declares MCP servers or
the host passed an MCP source in; the configuration models (pydantic) only when a config file exists:
a home without `tooldeck.toml` / `mcp.json` costs two `stat`s.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tooldeck.runtime import Runtime
    from tooldeck.sources.mcp.manager import McpManager

_MANAGER_MODULE = "tooldeck.sources.mcp.manager"
# `config.TOML_FILE` and `config.JSON_FILE`, named here so that a home without them never imports config.py
CONFIG_FILES = ("tooldeck.toml", "mcp.json")


def attach_mcp(runtime: Runtime) -> McpManager | None:
    """The runtime's MCP manager: a source passed in by the host, else one built from the home dir's
    `tooldeck.toml` / `mcp.json` and added to the catalog; None when no MCP server is configured."""
    existing = runtime.catalog.source("mcp")
    if existing is not None:
        # an McpManager exists only once its module is loaded: another "mcp" source needs no SDK import
        manager_module = sys.modules.get(_MANAGER_MODULE)
        if manager_module is None:
            return None
        return existing if isinstance(existing, manager_module.McpManager) else None
    home = runtime.home
    if not any((home / name).is_file() for name in CONFIG_FILES):
        return None
    from tooldeck.sources.mcp import config

    mcp_config = config.load(home)
    if mcp_config is None:  # a tooldeck.toml without [mcp]
        return None
    from tooldeck.sources.mcp.manager import McpManager

    manager = McpManager(home, mcp_config)
    runtime.catalog.add_source(manager)
    return manager
