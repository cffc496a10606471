"""What became of an MCP tool call that raised: `classify_call(facts) -> CallOutcome`.

The one place where an exception out of `tools/call` becomes one of the outcome classes of
`outcomes.py`. It is a table, `CALL_RULES`, read top to bottom, first match wins. A rule looks at
the exception's type, its MCP error code, its cause and what the connection observed (the HTTP reply
to the call), never at message text, but for the one row where the SDK gives nothing else (marked).

The order is the precedence, and it encodes what tooldeck knows about the request:

- not sent: the connection was gone before the request was written, or no connection to the server could be
  made for its HTTP POST (`ConnectFailed`, from `raw_relay.RequestNotSent`): safe to repeat;
- an answer: the HTTP server refused the call's credentials (401/403: the tool did not run), a
  JSON-RPC error (`mcp.server_error`), an answer that is not a valid tool result
  (`mcp.unsupported_response`);
- outcome unknown: the request was, or may have been, written and no answer came: the SDK's request
  timeout, tooldeck's own outer timeout, a closed connection, any other failure of the transport. A
  request that may have reached the server is never reported as not sent.

A rule may also name a failure of the server to record (a connection that ended, refused
credentials). Cancellation is not an outcome: `asyncio.CancelledError` is not an `Exception`, it
propagates and never reaches this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from tooldeck.core.results import ToolOutput
from tooldeck.sources.mcp.errors import AUTH_FORBIDDEN, AUTH_REQUIRED
from tooldeck.sources.mcp.evidence import HttpReply
from tooldeck.sources.mcp.failures import ConnectFailed, Failure, Stage, describe
from tooldeck.sources.mcp.outcomes import connect_failed, outcome_unknown, refused, server_error, unsupported


@dataclass(slots=True)
class CallFacts:
    """Everything a rule may look at."""

    exc: Exception
    server: str
    tool: str
    timeout: float
    """The call timeout given to the SDK (seconds)."""
    reply: HttpReply | None
    """The HTTP reply that explains the failure (`Evidence.decisive_reply`); None for stdio or none."""
    diagnose: Callable[[BaseException, Stage], Failure]
    """What an exception means for the server, with the evidence its connection gathered (`classify.py`)."""
    connected: bool = False
    """The call's connection was still up after the exception (`ServerConnection.alive`)."""
    _failure: Failure | None = field(default=None, repr=False)

    @property
    def mcp_code(self) -> int | None:
        return self.exc.code if isinstance(self.exc, MCPError) else None

    def session_failure(self) -> Failure:
        """The server's failure this exception stands for (computed once: it reads the server's stderr log)."""
        if self._failure is None:
            self._failure = self.diagnose(self.exc, "session")
        return self._failure


@dataclass(frozen=True, slots=True)
class CallOutcome:
    rule: str
    output: ToolOutput
    failure: Failure | None = None
    """A failure of the server this outcome reveals, to keep on its state (`health.failed`)."""
    persist: bool = False
    """Write that failure to disk too (it outlives the session: refused credentials)."""


Then = tuple[ToolOutput, Failure | None, bool]


@dataclass(frozen=True, slots=True)
class CallRule:
    name: str
    when: Callable[[CallFacts], bool]
    then: Callable[[CallFacts], Then]


def _mcp_code(code: int) -> Callable[[CallFacts], bool]:
    return lambda f: f.mcp_code == code


def _no_answer(f: CallFacts) -> Then:
    return outcome_unknown(f.server, f.tool, f"no answer came within {f.timeout:g} s"), None, False


def _connection_gone(f: CallFacts) -> Then:
    assert isinstance(f.exc, ConnectFailed)
    return connect_failed(f.server, f.tool, f.exc.failure), f.exc.failure, False


def _answer_abandoned(f: CallFacts) -> Then:
    assert isinstance(f.exc, MCPError)
    why = f"its answer did not come through: {f.exc.error.message[:300].rstrip('. ')}"
    return outcome_unknown(f.server, f.tool, why), None, False


def _connection_closed(f: CallFacts) -> Then:
    lost = f.session_failure()
    return (outcome_unknown(f.server, f.tool, f"the connection closed before the answer came ({lost.summary})"),
            lost, False)


def _credentials_refused(f: CallFacts) -> bool:
    reply = f.reply
    return (isinstance(f.exc, MCPError) and reply is not None and reply.method == "tools/call"
            and reply.status in (401, 403) and f.session_failure().code in (AUTH_REQUIRED, AUTH_FORBIDDEN))


def _refused(f: CallFacts) -> Then:
    failure = f.session_failure()
    return refused(f.server, f.tool, failure), failure, True


def _server_error(f: CallFacts) -> Then:
    assert isinstance(f.exc, MCPError)
    return server_error(f.server, f.tool, f.exc.code, f.exc.error.message, f.exc.error.data), None, False


def _structured_invalid(f: CallFacts) -> bool:
    """The SDK checked `structuredContent` against the tool's `outputSchema` and it does not conform: a
    RuntimeError raised from jsonschema's ValidationError."""
    if not isinstance(f.exc, RuntimeError) or f.exc.__cause__ is None:
        return False
    from jsonschema.exceptions import ValidationError as SchemaMismatch  # loaded already: the SDK raised from it

    return isinstance(f.exc.__cause__, SchemaMismatch)


def _structured_missing(f: CallFacts) -> bool:
    # Text, because the SDK gives nothing else: mcp 2.3 `ClientSession.validate_tool_result` raises a bare
    # RuntimeError, with no cause and no code, when a tool with an `outputSchema` answers without
    # `structuredContent`. The test of this row sends exactly that from a real server, so an SDK that
    # rewords it fails the suite rather than turning the answer into "outcome unknown" unnoticed.
    return isinstance(f.exc, RuntimeError) and "did not return structured content" in str(f.exc)


def _unsupported(f: CallFacts) -> Then:
    detail = describe(f.exc) if isinstance(f.exc, ValidationError) else str(f.exc)
    return unsupported(f.server, f.tool, detail), None, False


def _transport_failed(f: CallFacts) -> Then:
    return outcome_unknown(f.server, f.tool, f"the transport failed ({describe(f.exc)})"), None, False


CALL_RULES: tuple[CallRule, ...] = (
    # Not sent: the session ended before the request was written, or its POST found no server to connect to.
    CallRule("connection_gone", lambda f: isinstance(f.exc, ConnectFailed), _connection_gone),
    # Sent, and the session ended or the SDK's clock ran out: the tool may have run. A "connection closed" while the
    # connection is still up is the SDK giving up on this one request (over streamable HTTP: its response stream
    # failed or ended without the answer, e.g. an event over the size bound); the server itself is fine.
    CallRule("answer_abandoned", lambda f: f.mcp_code == CONNECTION_CLOSED and f.connected, _answer_abandoned),
    CallRule("connection_closed", _mcp_code(CONNECTION_CLOSED), _connection_closed),
    CallRule("request_timeout", _mcp_code(REQUEST_TIMEOUT), _no_answer),
    # An answer: the HTTP server refused the credentials before the tool ran, or a JSON-RPC error.
    CallRule("credentials_refused", _credentials_refused, _refused),
    CallRule("server_error", lambda f: isinstance(f.exc, MCPError), _server_error),
    # tooldeck's own deadline (`deadline.Deadline`: call timeout + grace). The SDK's clock starts only once the
    # request is written, and its courtesy cancel after its own timeout is a write too: a server that
    # stops reading its input (a full pipe) blocks both, and only this timeout ends the call. The request
    # may be written in part or in full, so the outcome is unknown, never "not sent".
    CallRule("outer_timeout", lambda f: isinstance(f.exc, TimeoutError), _no_answer),
    # An answer that is not a valid tool result: the tool ran.
    CallRule("invalid_result", lambda f: isinstance(f.exc, ValidationError), _unsupported),
    CallRule("structured_invalid", _structured_invalid, _unsupported),
    CallRule("structured_missing", _structured_missing, _unsupported),
    # Anything else failed in the transport after the request may have left.
    CallRule("transport_failed", lambda f: True, _transport_failed),
)


def classify_call(facts: CallFacts) -> CallOutcome:
    """The outcome of a call that raised `facts.exc`. The last rule matches everything."""
    for rule in CALL_RULES:
        if rule.when(facts):
            output, failure, persist = rule.then(facts)
            return CallOutcome(rule.name, output, failure, persist)
    raise AssertionError("unreachable: the last rule matches everything")  # pragma: no cover

