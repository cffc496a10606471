"""`tools/list` on a live session, every page: `list_tools(client, timeout) -> Listing`.

- At most `MAX_PAGES` pages, each within `timeout`; reading stops once more than `MAX_TOOLS` tools
  are in (a note says what was left unread). The catalog validates what it gets (`catalog.py`).
- Tools come back as raw MCP objects with wire field names.
- One bad tool makes the SDK reject its whole page; that page is then read raw, so only the bad tool
  is dropped (by the catalog, with a diagnostic), and the SDK still learns the valid tools' output
  schemas for the calls that follow.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp import Client
from pydantic import ValidationError

from tooldeck.sources.mcp.catalog import MAX_PAGES, MAX_TOOLS


@dataclass(slots=True)
class Listing:
    tools: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    protocol_version: str | None = None
    server_info: dict[str, Any] | None = None
    instructions: str | None = None


class ListingFailed(Exception):
    pass


async def list_tools(client: Client, timeout: float) -> Listing:
    tools: list[dict[str, Any]] = []
    notes: list[str] = []
    cursor: str | None = None
    for _page in range(MAX_PAGES):
        async with asyncio.timeout(timeout):
            page, cursor = await _list_page(client, cursor, timeout)
        tools.extend(page)
        if not cursor:
            break
        if len(tools) > MAX_TOOLS:
            notes.append(f"the server lists more than {MAX_TOOLS} tools; later pages were not read")
            break
    else:
        notes.append(f"the listing has more than {MAX_PAGES} pages; later pages were not read")
    info = client.server_info
    return Listing(tools, notes, client.protocol_version,
                   info.model_dump(mode="json", by_alias=True, exclude_none=True) if info else None,
                   client.instructions)


async def _list_page(client: Client, cursor: str | None, timeout: float) -> tuple[list[dict[str, Any]], str | None]:
    try:
        result = await client.list_tools(cursor=cursor)
    except ValidationError:
        # One bad tool makes the SDK reject the whole page; read it raw so only that tool is dropped.
        return await _list_page_raw(client, cursor, timeout)
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools], result.next_cursor


async def _list_page_raw(client: Client, cursor: str | None,
                         timeout: float) -> tuple[list[dict[str, Any]], str | None]:
    """The page as raw JSON through the session's own dispatcher (mcp 2.3 has no public raw request; the
    private names are looked up, and a missing one fails the listing as invalid, not the process)."""
    session = client.session
    stamp = getattr(session, "_stamp", None)
    dispatcher = getattr(session, "_dispatcher", None)
    if stamp is None or dispatcher is None:  # pragma: no cover - only if the SDK internals move
        raise ListingFailed("the server's tools/list result is not valid MCP")
    data: dict[str, Any] = {"method": "tools/list"}
    if cursor:
        data["params"] = {"cursor": cursor}
    opts: dict[str, Any] = {"timeout": timeout}
    stamp(data, opts)
    raw = await dispatcher.send_raw_request("tools/list", data.get("params") or None, opts)
    tools = raw.get("tools") if isinstance(raw, dict) else None
    if not isinstance(tools, list):
        raise ListingFailed("the server's tools/list result has no `tools` array")
    valid: list[types.Tool] = []
    for tool in tools:
        with contextlib.suppress(ValidationError, TypeError):
            valid.append(types.Tool.model_validate(tool, by_name=False))
    absorb = getattr(session, "_absorb_tool_listing", None)
    if absorb is not None:  # so output-schema checks of later calls need no second listing
        with contextlib.suppress(Exception):
            absorb(types.ListToolsResult(tools=valid), complete=False)
    next_cursor = raw.get("nextCursor")
    return tools, next_cursor if isinstance(next_cursor, str) and next_cursor else None
