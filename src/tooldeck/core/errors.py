"""Error types and the stable error codes of tooldeck."""

from __future__ import annotations


class TooldeckError(Exception):
    """A fault with a stable dotted code. Raised for bad input to the library itself."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class ToolIdError(TooldeckError, ValueError):
    """A serialised ToolId is malformed."""


class SnapshotError(TooldeckError, ValueError):
    """A snapshot failed validation."""


class ProfileError(TooldeckError, ValueError):
    """A Profile is malformed or names something it cannot."""


class HostFault(TooldeckError):
    """A fault of the host (storage, I/O, runtime state) that no model can fix: it propagates out of
    `Invocation.arun` to the caller instead of becoming a tool result."""


class ToolCallError(Exception):
    """Raised by a tool handler for a failure the model can fix.

    The runtime turns it into a recoverable error result with this code and message.
    """

    def __init__(self, code: str, message: str, structured: object | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.structured = structured


# Codes the gate, dispatch and projection produce (documented in docs/errors.md).
INVALID_ARGUMENTS = "tool.invalid_arguments"
UNKNOWN_TOOL = "tool.unknown_tool"
BUDGET_EXHAUSTED = "tool.budget_exhausted"
PERMISSION_DENIED = "tool.permission_denied"
CHOICE_VIOLATION = "tool.choice_violation"
TIMEOUT = "tool.timeout"
EXECUTION_FAILED = "tool.execution_failed"
OUTCOME_UNKNOWN = "tool.outcome_unknown"
TOOL_UNAVAILABLE = "tool.unavailable"
SCHEMA_REQUIRED = "tool.schema_required"
USE_RUN_TOOL = "tool.use_run_tool"
REPEATED_CALL = "tool.repeated_call"
RULE_DENIED = "tool.rule_denied"
HOST_FAULT = "tool.host_fault"
"""In the records only: a host fault stopped the call (the host got the exception)."""
INVALID_TOOL_CALL = "model.invalid_tool_call"
