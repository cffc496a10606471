"""A server's failure as this process knows it: `failed(...)` and `recovered(...)`.

- The last failure lives on the server's state (`ServerState.failure`) until the next success clears
  it; it is what diagnostics, `tooldeck mcp list` and the unknown-tool message report.
- It is logged on `tooldeck.mcp` at warning level once per change (code and cause), and the return to
  working once, at info level.
- Unless told otherwise it is written to `<home>/mcp/failures/<registration-id>.json`, so another
  process that tried nothing yet reports it too; a success removes the file. A file that cannot be
  written or removed is logged, never raised: the failure itself is what must be reported.
"""

from __future__ import annotations

import logging

from tooldeck.sources.mcp import failure_store
from tooldeck.sources.mcp.failures import Failure
from tooldeck.sources.mcp.state import McpDirs, ServerState

log = logging.getLogger("tooldeck.mcp")


def failed(dirs: McpDirs, state: ServerState, failure: Failure, *, persist: bool = True) -> None:
    """Keep, log (once per change) and, with `persist`, write a server's failure."""
    state.failure = failure
    key = (failure.code, failure.summary)
    if state.logged != key:
        state.logged = key
        log.warning("%s [%s] %s", failure.text, failure.code, failure.advice)
    if persist:
        try:
            failure_store.save(dirs.failures, state.rid, state.config.endpoint_key(), failure)
        except OSError as exc:
            log.warning("MCP server `%s`: the failure record could not be written (%s); other processes will not "
                        "see it", state.config.name, exc)


def recovered(dirs: McpDirs, state: ServerState) -> None:
    """The server works again (it listed its tools): forget its failure, here and on disk."""
    if state.logged is not None:
        log.info("MCP server `%s` works again: %d tools listed", state.config.name,
                 len(state.catalog.tools) if state.catalog else 0)
    had = state.failure is not None
    state.failure, state.logged = None, None
    if had:
        try:
            failure_store.clear(dirs.failures, state.rid)
        except OSError as exc:
            log.warning("MCP server `%s`: the stale failure record could not be removed (%s)", state.config.name,
                        exc)
