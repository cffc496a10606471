"""The results of MCP calls that did not produce a tool result: not sent, server error, outcome unknown.

Outcome classes (TauriTavern §7):
- known response: a tool result (`isError` → `mcp.tool_error`), a JSON-RPC error (`mcp.server_error`)
  or an invalid reply (`mcp.unsupported_response`); all recoverable.
- not sent: no request left tooldeck (`mcp.not_sent`, with the server's failure as `cause` when it
  could not be connected); recoverable and safe to repeat.
- refused: the HTTP server refused the call's credentials (`mcp.auth_required`, `mcp.auth_forbidden`);
  the tool did not run.
- outcome unknown: the request was sent and no answer came (`mcp.call_outcome_unknown`); the tool may
  have run, the call is never retried, and the records mark it `outcome_unknown`.
"""

from __future__ import annotations

from typing import Any

from tooldeck.core.results import ToolOutput
from tooldeck.sources.mcp.errors import CALL_OUTCOME_UNKNOWN, NOT_SENT, SERVER_ERROR, UNSUPPORTED_RESPONSE
from tooldeck.sources.mcp.failures import Failure

OUTCOME_UNKNOWN_SENTENCE = "The MCP tool may have executed; this call will not be retried."


def not_sent(server: str, tool: str, reason: str, detail: str, advice: str,
             cause: dict[str, Any] | None = None) -> ToolOutput:
    """`cause`: the server's failure (`Failure.to_dict()`) when the connection could not be made."""
    message = f"No request was sent to MCP server `{server}` for `{tool}`: {detail}. Nothing was run. {advice}"
    error: dict[str, Any] = {"code": NOT_SENT, "message": message, "reason": reason, "server": server, "tool": tool}
    if cause is not None:
        error["cause"] = cause
    return ToolOutput.error(NOT_SENT, message, {"error": error})


def connect_failed(server: str, tool: str, failure: Failure) -> ToolOutput:
    """Not sent: the server could not be connected, or its session was gone before the request was written."""
    return not_sent(server, tool, "connect_failed", f"the server {failure.summary}", failure.model_advice(),
                    cause=failure.to_dict())


def refused(server: str, tool: str, failure: Failure) -> ToolOutput:
    """The server refused the call's credentials (HTTP 401/403) before the tool ran."""
    message = (f"MCP server `{server}` refused the call to `{tool}`: it {failure.summary}. The tool did not run. "
               f"{failure.model_advice()}")
    structured = {"error": {"code": failure.code, "message": message, "server": server, "tool": tool,
                            "cause": failure.to_dict()}}
    return ToolOutput.error(failure.code, message, structured)


def outcome_unknown(server: str, tool: str, why: str) -> ToolOutput:
    message = (f"The call to `{tool}` on MCP server `{server}` was sent, but {why}. {OUTCOME_UNKNOWN_SENTENCE} "
               "Check the state it would change before calling it again.")
    structured = {"error": {"code": CALL_OUTCOME_UNKNOWN, "message": message, "server": server, "tool": tool,
                            "cause": why}}
    return ToolOutput.error(CALL_OUTCOME_UNKNOWN, message, structured, may_have_executed=True)


def server_error(server: str, tool: str, code: int, text: str, data: Any) -> ToolOutput:
    message = f"MCP server `{server}` returned an error for `{tool}` (JSON-RPC {code}): {text}"
    if data is not None:
        shown = data if isinstance(data, str) else repr(data)
        message += f"\n\n## Error details\n\n{shown[:2000]}"
    structured = {"error": {"code": SERVER_ERROR, "message": message,
                            "server_error": {"code": code, "message": text, "data": data}}}
    return ToolOutput.error(SERVER_ERROR, message, structured, raw={"error": {"code": code, "message": text,
                                                                              "data": data}})


def unsupported(server: str, tool: str, detail: str) -> ToolOutput:
    message = (f"MCP server `{server}` answered the call to `{tool}`, but the answer is not a valid MCP tool "
               f"result ({detail}). The tool may have run; check before repeating it.")
    structured = {"error": {"code": UNSUPPORTED_RESPONSE, "message": message,
                            "unsupported_response": {"message": detail}}}
    return ToolOutput.error(UNSUPPORTED_RESPONSE, message, structured)
