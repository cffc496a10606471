"""What a server's state means for the host and the model: its diagnostics, and why one of its call names
is not in a snapshot (the gate's unknown-tool message asks `explain_unknown`).

A model that calls `mcp__time__get_current_time` while server `time` cannot start must learn that the
server is down, and why, not that it misspelled a name; a server that was never tried says so, and
how to find out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from tooldeck.catalog.sources import Diagnostic
from tooldeck.naming import MCP_PREFIX, MCP_SERVER_SHARE, mcp_model_name
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp import pin_checks
from tooldeck.sources.mcp.errors import SERVER_NOT_DISCOVERED, SERVER_PAUSED
from tooldeck.sources.mcp.state import ServerState


def server_diagnostics(state: ServerState) -> list[Diagnostic]:
    c = state.config
    out: list[Diagnostic] = []
    if state.cache_problem is not None:
        out.append(state.cache_problem)
    if c.paused:
        out.append(Diagnostic(SERVER_PAUSED, f"MCP server `{c.name}` is paused in {c.source}; its tools are not "
                              "offered. Set `paused = false` to use them."))
        return out
    failure = state.failure
    if state.catalog is None:
        if failure is not None:
            out.append(Diagnostic(failure.code, f"{failure.full_text} Its tools are not offered until it works."))
        elif state.connecting:
            out.append(Diagnostic(SERVER_NOT_DISCOVERED, f"MCP server `{c.name}` is still starting; its tools are "
                                  "offered to invocations prepared after it has listed them."))
        else:
            out.append(Diagnostic(SERVER_NOT_DISCOVERED, f"MCP server `{c.name}` has not been tried yet (no "
                                  "connection was attempted), so its tools are unknown and not offered. Run "
                                  f"`tooldeck mcp refresh {c.name}` to connect it and see its tools or why it fails."))
        return out
    if failure is not None:
        cached = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(state.catalog.fetched_at))
        out.append(Diagnostic(failure.code, f"{failure.full_text} Its tools come from the catalog cached at "
                              f"{cached}."))
    out.extend(state.catalog.diagnostics)
    out.extend(pin_checks.diagnostics(state))
    return out


def _fold(name: str) -> str:
    return name.casefold().replace("-", "_")  # providers that forbid `-` get `_` (naming.sanitize)


def _segment(server: str) -> str:
    """The server part of the server's model-facing names (`mcp__<segment>__<tool>`)."""
    probe = mcp_model_name(server, "x")
    return _fold(probe[len(MCP_PREFIX):-len("__x")])


def owner(states: Iterable[ServerState], call_name: str) -> ServerState | None:
    """The server a model-facing call name belongs to, by its `mcp__<server>__` prefix (the server part may
    have been shortened to as few as 20 characters); the longest match wins."""
    folded = _fold(call_name)
    if not folded.startswith(MCP_PREFIX):
        return None
    rest = folded[len(MCP_PREFIX):]
    best: tuple[int, ServerState] | None = None
    for state in states:
        seg = _segment(state.config.label)
        shortest = min(len(seg), MCP_SERVER_SHARE)
        for cut in range(len(seg), shortest - 1, -1):
            if rest.startswith(seg[:cut] + "__"):
                if best is None or cut > best[0]:
                    best = (cut, state)
                break
    return best[1] if best is not None else None


def _catalog_tool(state: ServerState, call_name: str) -> str | None:
    """The native name of the cached tool this call name stands for (a clash suffix `__2` allowed)."""
    if state.catalog is None:
        return None
    folded = _fold(call_name)
    for tool in state.catalog.tools:
        model = _fold(mcp_model_name(state.config.label, tool["name"]))
        if folded == model or (folded.startswith(model + "__") and folded[len(model) + 2:].isdigit()):
            return str(tool["name"])
    return None


def explain_unknown(states: Iterable[ServerState], call_name: str,
                    permission: Callable[[ServerState, str], cfg.Permission]) -> str | None:
    """Why `call_name` is not available, when the reason is its MCP server's state; None otherwise (the
    gate then gives its usual message: the available names and the closest match)."""
    state = owner(states, call_name)
    if state is None:
        return None
    c = state.config
    head = f"`{call_name}` is not available: "
    if c.paused:
        return (f"{head}MCP server `{c.name}` is paused by the user; its tools cannot be called. Nothing was run. "
                "Use another tool, or ask the user to resume the server.")
    native = _catalog_tool(state, call_name)
    if native is not None:
        if permission(state, native) == "off":
            return (f"{head}the user turned this tool off (permission `off`). Nothing was run. Use another tool.")
        if not c.paused and pin_checks.withheld(state, native):
            return (f"{head}{pin_checks.withheld_reason(state, native)}. Nothing was run. Use another tool, or ask "
                    "the user to review the change.")
        return None  # cached tools are offered even while the server fails: its state is not why this one is missing
    failure = state.failure
    if state.connecting:
        last = f" (the last attempt failed: {failure.summary})" if failure is not None else ""
        return (f"{head}MCP server `{c.name}` is still starting, so its tools are not known yet{last}. Nothing was "
                "run. Try again in a moment, or use another tool.")
    if failure is not None:
        return f"{head}{failure.text} Nothing was run. {failure.model_advice()}"
    if state.catalog is None:
        return (f"{head}MCP server `{c.name}` has not been connected yet, so its tools are unknown. Nothing was "
                f"run. The user can run `tooldeck mcp refresh {c.name}` to connect it and see its tools or why it "
                "fails; use another tool meanwhile.")
    return None
