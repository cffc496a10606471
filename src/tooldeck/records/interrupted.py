"""The result an interrupted call gets: on recovery, on resume, and in every replay.

A call that was admitted (`started`) and whose result never arrived may or may not have run: it is
`outcome_unknown` and is never executed again. A call that was only `requested` never reached
dispatch (the runtime records `started` before anything runs), so it is known not to have run.
"""

from __future__ import annotations

from typing import Any

from tooldeck.core.arguments import MISSING, ToolArguments
from tooldeck.core.errors import INVALID_ARGUMENTS, OUTCOME_UNKNOWN
from tooldeck.core.rawvalue import RawObject

INTERRUPTED = "tool.interrupted"
CANCELLED = "tool.cancelled"
"""An `outcome_unknown` call whose turn was cancelled (the host cancelled the call, or an MCP client of
`tooldeck serve` sent `notifications/cancelled`) before its result arrived."""


def _label(call_name: str) -> str:
    return f"`{call_name}`" if call_name else "This call"


def unknown_outcome_text(call_name: str) -> str:
    return (f"{_label(call_name)} was interrupted before its result arrived: it may or may not have run. "
            "It will not be retried. Check the current state before repeating it.")


def cancelled_text(call_name: str) -> str:
    return (f"{_label(call_name)} was cancelled by the client before its result arrived: it may or may not have "
            "run. It will not be retried. Check the current state before repeating it.")


def not_run_text(call_name: str) -> str:
    return (f"{_label(call_name)} was interrupted before it ran; nothing was executed. "
            "Call it again if it is still needed.")


def interrupted_outcome(call_name: str, status: str, raw_arguments: str | RawObject | None = None
                        ) -> tuple[str, str, str, dict[str, Any]]:
    """(final status, error code, text, structured) for an open call in `status`. A call whose raw
    arguments are not a JSON object could never have run: it gets the invalid-arguments error."""
    arguments = ToolArguments.decode(MISSING if raw_arguments is None else raw_arguments)
    if not arguments.is_valid:
        text = arguments.invalid_message(call_name or None)
        return "failed", INVALID_ARGUMENTS, text, {"error": {"code": INVALID_ARGUMENTS, "message": text}}
    if status == "requested":
        text = not_run_text(call_name)
        return "failed", INTERRUPTED, text, {"error": {"code": INTERRUPTED, "message": text}, "executed": False}
    text = unknown_outcome_text(call_name)
    return "outcome_unknown", OUTCOME_UNKNOWN, text, {"error": {"code": OUTCOME_UNKNOWN, "message": text},
                                                      "executed": None}
