"""What a call that did not return a value becomes (pure): a tool's exception, a host fault, a timeout."""

from __future__ import annotations

from typing import Any

from tooldeck.core.errors import EXECUTION_FAILED, HOST_FAULT, TIMEOUT, HostFault, ToolCallError
from tooldeck.core.results import ToolOutput
from tooldeck.gate import GateEntry


def failure(exc: Exception, entry: GateEntry, outputs: list[Any], index: int) -> ToolOutput:
    """A tool's exception as a result, except host faults: those propagate, once the call's slot in
    `outputs` holds its `tool.host_fault` outcome (for the records).

    An `OSError` escaping a builtin is a host fault too (builtins map every error the model can fix
    to a `ToolCallError`); from extension or MCP code it is that tool's failure, reported as a result.
    """
    if isinstance(exc, ToolCallError):
        return ToolOutput.error(exc.code, exc.message, exc.structured)
    if isinstance(exc, HostFault) or (isinstance(exc, OSError) and entry.binding.descriptor.id.kind == "builtin"):
        outputs[index] = host_fault(exc, entry)
        raise exc
    detail = str(exc) or type(exc).__name__
    return ToolOutput.error(
        EXECUTION_FAILED, f"`{entry.binding.call_name}` failed: {type(exc).__name__}: {detail}",
        {"error": {"code": EXECUTION_FAILED, "message": detail, "exception": type(exc).__name__}},
    )


def host_fault(exc: BaseException, entry: GateEntry, ran: bool = True) -> ToolOutput:
    """The outcome the records keep for a call a host fault stopped (the host gets the exception)."""
    b = entry.binding
    try:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except Exception:  # an exception whose str() fails
        detail = type(exc).__name__
    may_have_run = ran and b.descriptor.annotations.mutating
    if not ran:
        text = f"`{b.call_name}` was not run: the host failed while asking for confirmation ({detail})."
    else:
        text = f"`{b.call_name}` was stopped by a fault of the host, not of the call ({detail})."
    text += (" It may have executed; check the state before repeating it." if may_have_run else
             " Nothing was changed; call it again once the host works.")
    return ToolOutput.error(HOST_FAULT, text, {"error": {"code": HOST_FAULT, "message": detail,
                                                         "exception": type(exc).__name__}},
                            may_have_executed=may_have_run)


def timed_out(call_name: str, timeout_s: float, mutating: bool) -> ToolOutput:
    text = f"`{call_name}` did not finish within {timeout_s:g} s and was stopped."
    if mutating:
        text += " It may have executed; check the state before repeating it."
    else:
        text += " Try again with a smaller request, or continue without it."
    return ToolOutput.error(TIMEOUT, text, may_have_executed=mutating)
