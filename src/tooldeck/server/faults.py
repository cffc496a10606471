"""One place where an exception escaping an MCP request handler becomes a JSON-RPC error.

Tool errors never get here: the gate and dispatch turn them into results with `isError` (and an
`error_code`). What escapes is a fault of the host (`HostFault`, an `OSError` out of a builtin) or a bug.
The SDK's handshake-era dispatcher would answer those with JSON-RPC code **0** and the exception's own text
(which may hold paths); this middleware answers `-32603` (internal error) with a short message and
`data.code` (the fault's stable code, or `serve.internal_error`), and logs the traceback on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import ValidationError

from tooldeck.core.errors import TooldeckError

logger = logging.getLogger("tooldeck.serve")

SERVE_INTERNAL_ERROR = "serve.internal_error"


class FaultBoundary(ServerMiddleware[Any]):
    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except (MCPError, ValidationError):
            raise  # already a protocol error (ValidationError: the SDK's own invalid-params answer)
        except Exception as exc:
            if ctx.request_id is None:
                raise  # a notification has no answer; the SDK logs it
            raise internal_error(ctx.method, ctx.params, exc) from exc


def internal_error(method: str, params: Any, exc: BaseException) -> MCPError:
    code = exc.code if isinstance(exc, TooldeckError) else SERVE_INTERNAL_ERROR
    name = params.get("name") if isinstance(params, Mapping) else None
    what = f"{method} `{name}`" if method == "tools/call" and isinstance(name, str) else method
    logger.error("%s failed inside tooldeck serve (%s: %s)", what, type(exc).__name__, code, exc_info=exc)
    return MCPError(INTERNAL_ERROR, f"{what[:200]} failed inside tooldeck serve ({type(exc).__name__}, {code}); "
                                    "it is not a problem with the request. The details are in the server log.",
                    data={"code": code})
