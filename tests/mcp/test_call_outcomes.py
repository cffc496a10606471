"""Every row of the call outcome table (`sources/mcp/call_outcome.py`), one test each: with a real server
that produces it where one can, else with exceptions of the real SDK and transport types. Then a
property: message text never decides an outcome, but in the one row that says so.

Which row decided is read from the debug line `calls.py` logs (`... outcome <rule> (<code>)`), so a
test cannot pass through a neighbouring row that happens to give the same result (the SDK's request
timeout and tooldeck's own timeout give the same text).
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import errors, transport
from tooldeck.sources.mcp.call_outcome import CALL_RULES, CallFacts, classify_call
from tooldeck.sources.mcp.classify import classify
from tooldeck.sources.mcp.evidence import Evidence, HttpReply
from tooldeck.sources.mcp.failures import ConnectFailed, Failure, Stage, Target

from .conftest import PYTHON, call, fixture_server, pid_gone, poll, write_mcp_json, write_toml

RAW_RESULTS = Path(__file__).parent / "fixtures" / "raw_results.py"
UNKNOWN = "The MCP tool may have executed; this call will not be retried."
ROWS = ["connection_gone", "answer_abandoned", "connection_closed", "request_timeout", "credentials_refused",
        "server_error", "outer_timeout", "invalid_result", "structured_invalid", "structured_missing",
        "transport_failed"]
CALL_CODES = {errors.NOT_SENT, errors.CALL_OUTCOME_UNKNOWN, errors.SERVER_ERROR, errors.UNSUPPORTED_RESPONSE,
              errors.AUTH_REQUIRED, errors.AUTH_FORBIDDEN}


def test_every_row_has_its_test_here() -> None:
    assert [rule.name for rule in CALL_RULES] == ROWS


@pytest.fixture
def debug_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The test's log with `tooldeck.mcp` at debug level (where `calls.py` says which rule decided)."""
    caplog.set_level(logging.DEBUG, logger="tooldeck.mcp")
    return caplog


def _decided(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The rules that decided the calls made so far in a test, in order (from `calls.py`'s debug line)."""
    return [r.getMessage().rsplit(": outcome ", 1)[1].split(" ", 1)[0] for r in caplog.records
            if r.name == "tooldeck.mcp" and ": outcome " in r.getMessage()]


@pytest.fixture(scope="module")
def rt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    home = tmp_path_factory.mktemp("outcomes")
    write_mcp_json(home, {"fx": fixture_server(),
                          "raw": {"command": PYTHON, "args": [str(RAW_RESULTS)], "protocol": "legacy"}})
    write_toml(home, "[mcp.servers.fx]\ncall_timeout_s = 1.0\n")
    runtime = Runtime(home, records=True)
    yield runtime
    runtime.close()


def _never(exc: BaseException, stage: Stage) -> Failure:
    raise AssertionError(f"this row must not ask what {exc!r} means for the server")


def _facts(exc: Exception, diagnose: Any = _never, reply: HttpReply | None = None,
           connected: bool = False) -> CallFacts:
    return CallFacts(exc, "fx", "echo", 5.0, reply, diagnose, connected=connected)


# -- not sent ---------------------------------------------------------------------------------------


def test_connection_gone(tmp_path: Path) -> None:
    """Constructed: the session ends between the connect and the write only in a race no real server can
    be made to win every time. The failure is what `classify` makes of the SDK's closed connection."""
    failure = classify(MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"), Evidence(),
                       Target("fx", "mcp.json", "stdio", log_path=str(tmp_path / "fx.log")), "session")
    outcome = classify_call(_facts(ConnectFailed(failure)))
    assert outcome.rule == "connection_gone"
    assert outcome.output.error_code == errors.NOT_SENT and "Nothing was run." in outcome.output.content
    error = outcome.output.structured["error"]
    assert error["reason"] == "connect_failed" and error["cause"] == failure.to_dict()
    assert (outcome.failure, outcome.persist) == (failure, False)


# -- sent, no answer --------------------------------------------------------------------------------


def test_answer_abandoned(tmp_path: Path, http_fixture: str, monkeypatch: pytest.MonkeyPatch,
                          debug_log: pytest.LogCaptureFixture) -> None:
    """On streamable HTTP the SDK's client answers a call whose event went over the bound with a "connection
    closed" error of its own while the connection stays up. That call's outcome is unknown, with the SDK's reason;
    the server is not reported stopped (before: "the connection closed", and `mcp.connection_lost` on the server)."""
    monkeypatch.setattr(transport, "MAX_MESSAGE_BYTES", 1 << 20)
    write_mcp_json(tmp_path, {"web": {"type": "http", "url": http_fixture, "protocol": "legacy"}})
    with Runtime(tmp_path, records=False) as rt:
        inv = rt.invocation()
        result = call(inv, "mcp__web__big", {"chars": 2_000_000})
        assert _decided(debug_log) == ["answer_abandoned"]
        assert result.error_code == "mcp.call_outcome_unknown", result.content
        assert "its answer did not come through: SSE stream failed: Server-sent event exceeded the 1048576 byte " \
               "limit. The MCP tool may have executed" in result.content
        assert "connection closed" not in result.content
        assert rt.mcp is not None
        [status] = rt.mcp.status()
        assert status.failure is None and status.state == "connected"
        assert call(inv, "mcp__web__echo", {"message": "after"}).content == "Echo: after"


def test_connection_closed(rt: Runtime, debug_log: pytest.LogCaptureFixture) -> None:
    """The server process exits in the middle of the call."""
    inv = rt.invocation()
    crashed = call(inv, "mcp__fx__crash", call_id="closed_1")
    assert _decided(debug_log) == ["connection_closed"]
    assert crashed.error_code == errors.CALL_OUTCOME_UNKNOWN and UNKNOWN in crashed.content
    assert "was sent, but the connection closed before the answer came (" in crashed.content
    [record] = [c for c in rt.recorder.history(inv.id).calls if c.call_id == "closed_1"]  # type: ignore[attr-defined]
    assert record.status == "outcome_unknown"
    status = next(s for s in rt.mcp.status() if s.name == "fx")  # type: ignore[union-attr]
    assert status.failure is not None and status.failure.code == errors.PROCESS_EXITED  # kept on the state …
    assert not (rt.home / "mcp" / "failures" / f"{status.registration_id}.json").exists()  # … not on disk
    assert call(inv, "mcp__fx__echo", {"message": "again"}).content == "Echo: again"  # a new process


def test_request_timeout(rt: Runtime, tmp_path: Path, debug_log: pytest.LogCaptureFixture) -> None:
    """The SDK's own request timeout; the server is told, and stops the tool (seen from inside it)."""
    marker = tmp_path / "cancelled"
    hung = call(rt.invocation(), "mcp__fx__hang", {"marker": str(marker)})
    assert _decided(debug_log) == ["request_timeout"]
    assert hung.error_code == errors.CALL_OUTCOME_UNKNOWN and "no answer came within 1 s" in hung.content
    # the fixture creates the file, then writes it: wait for the text, not only the name
    assert poll(lambda: marker.exists() and marker.read_text() == "cancelled"), "the server never saw the cancel"


def test_outer_timeout(tmp_path: Path, debug_log: pytest.LogCaptureFixture) -> None:
    """A server that stops reading its input: the request cannot be written whole, so the SDK's clock
    (which starts after the write) never ends the call, nor can its courtesy cancel get through; tooldeck's
    own timeout does, and says the tool may have run."""
    write_mcp_json(tmp_path, {"frozen": fixture_server("--probes"), "other": fixture_server()})
    write_toml(tmp_path, "[mcp.servers.frozen]\ncall_timeout_s = 1.0\n")
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        pid = int(call(inv, "mcp__frozen__pid").content)
        assert call(inv, "mcp__frozen__freeze", {"seconds": 120}).error_code == errors.CALL_OUTCOME_UNKNOWN
        big = call(inv, "mcp__frozen__echo", {"message": "x" * 1_000_000})  # far more than a pipe holds
        assert _decided(debug_log) == ["request_timeout", "outer_timeout"]
        assert big.error_code == errors.CALL_OUTCOME_UNKNOWN and UNKNOWN in big.content
        assert "no answer came within 1 s" in big.content and big.structured["error"]["code"] == big.error_code
        # The MCP loop is not held up by the frozen server.
        assert call(inv, "mcp__other__echo", {"message": "free"}).content == "Echo: free"
    assert pid_gone(pid), "closing the runtime did not stop the frozen server"


# -- an answer --------------------------------------------------------------------------------------


def test_credentials_refused(auth_fixture: tuple[str, Path], tmp_path: Path,
                             debug_log: pytest.LogCaptureFixture) -> None:
    """The token is revoked in the middle of a session: HTTP 401 to the call, the tool did not run, and
    the failure is written for other processes."""
    url, revoked = auth_fixture
    write_mcp_json(tmp_path, {"remote": {"url": url, "headers": {"Authorization": "Bearer s3cret"}}})
    try:
        with Runtime(tmp_path) as rt:
            inv = rt.invocation()
            assert call(inv, "mcp__remote__echo", {"message": "before"}).content == "Echo: before"
            revoked.touch()
            result = call(inv, "mcp__remote__echo", {"message": "after"})
            rid = rt.mcp.status()[0].registration_id  # type: ignore[union-attr]
    finally:
        revoked.unlink(missing_ok=True)
    assert _decided(debug_log) == ["credentials_refused"]
    assert result.error_code == errors.AUTH_REQUIRED and "The tool did not run." in result.content
    record = json.loads((tmp_path / "mcp" / "failures" / f"{rid}.json").read_text())
    assert Failure.from_dict(record["failure"]).code == errors.AUTH_REQUIRED


def test_server_error(rt: Runtime, debug_log: pytest.LogCaptureFixture) -> None:
    rpc = call(rt.invocation(), "mcp__fx__rpc_error")
    assert _decided(debug_log) == ["server_error"]
    assert rpc.error_code == errors.SERVER_ERROR
    assert rpc.structured["error"]["server_error"] == {"code": -32602, "message": "the fixture rejects this request",
                                                       "data": {"hint": "none"}}


@pytest.mark.parametrize(("tool", "rule", "detail"), [
    ("not_a_result", "invalid_result", "(ValidationError: 1 validation error for CallToolResult)"),
    ("wrong_structure", "structured_invalid", "(Invalid structured content returned by tool wrong_structure: "
                                              "'seven' is not of type 'integer'"),
    ("no_structure", "structured_missing", "(Tool no_structure has an output schema but did not return structured "
                                           "content)"),
])
def test_an_answer_that_is_not_a_tool_result(rt: Runtime, debug_log: pytest.LogCaptureFixture,
                                             tool: str, rule: str, detail: str) -> None:
    """A hand-written server (no SDK to stop it) answers with results the client rejects: the tool ran."""
    result = call(rt.invocation(), f"mcp__raw__{tool}")
    assert _decided(debug_log) == [rule]
    assert result.error_code == errors.UNSUPPORTED_RESPONSE
    assert result.content.startswith(f"MCP server `raw` answered the call to `{tool}`, but the answer is not a "
                                     f"valid MCP tool result {detail}")


# -- anything else ----------------------------------------------------------------------------------


@pytest.mark.parametrize("exc", [
    anyio.BrokenResourceError(),
    anyio.EndOfStream(),
    httpx2.RemoteProtocolError("Server disconnected without sending a response."),
    ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
], ids=type)
def test_transport_failed(exc: Exception) -> None:
    """Constructed: exceptions the SDK's transports let through (no real server makes them reach the call
    reliably, since the SDK maps what it sees to `CONNECTION_CLOSED`)."""
    outcome = classify_call(_facts(exc))
    assert outcome.rule == "transport_failed" and outcome.failure is None
    assert outcome.output.error_code == errors.CALL_OUTCOME_UNKNOWN
    assert f"was sent, but the transport failed ({type(exc).__name__}" in outcome.output.content


# -- message text never decides ---------------------------------------------------------------------


def _schema_mismatch(text: str) -> RuntimeError:
    try:
        jsonschema.validate({"n": "seven"}, {"properties": {"n": {"type": "integer"}}})
    except jsonschema.ValidationError as error:
        try:
            raise RuntimeError(text) from error
        except RuntimeError as exc:
            return exc
    raise AssertionError("unreachable")


def _invalid_result() -> ValidationError:
    try:
        mcp_types.CallToolResult.model_validate({"content": "not a list"})
    except ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


def _failure(exc: BaseException, stage: Stage) -> Failure:
    return classify(exc, Evidence(), Target("fx", "mcp.json", "http", url="http://127.0.0.1:9/mcp"), stage)


_MAKERS = {
    "connection_gone": lambda text: ConnectFailed(_failure(OSError(text), "connect")),
    "answer_abandoned": lambda text: MCPError(mcp_types.CONNECTION_CLOSED, text),
    "connection_closed": lambda text: MCPError(mcp_types.CONNECTION_CLOSED, text),
    "request_timeout": lambda text: MCPError(mcp_types.REQUEST_TIMEOUT, text),
    "server_error": lambda text: MCPError(mcp_types.INTERNAL_ERROR, text),
    "outer_timeout": lambda text: TimeoutError(text),
    "invalid_result": lambda text: _invalid_result(),
    "structured_invalid": _schema_mismatch,
    "transport_failed": lambda text: RuntimeError(text),
}
_TEXTS = st.one_of(st.text(max_size=80), st.sampled_from([
    "Invalid structured content returned by tool x", "has an output schema", "Connection closed", "timed out",
    "Request 'tools/call' timed out", "structured content", "output schema", "HTTP 401"]))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(row=st.sampled_from(sorted(_MAKERS)), text=_TEXTS)
def test_message_text_never_decides(row: str, text: str) -> None:
    """Whatever an exception's message says, its type, code and cause decide; only the row that must read
    text (`structured_missing`) does, and only for a bare RuntimeError."""
    if "did not return structured content" in text:
        text = "-"
    outcome = classify_call(_facts(_MAKERS[row](text), _failure, connected=row == "answer_abandoned"))
    assert outcome.rule == row
    assert outcome.output.error_code in CALL_CODES and outcome.output.is_error

