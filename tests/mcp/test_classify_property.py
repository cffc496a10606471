"""`classify` is total: any exception tree (groups, causes, contexts) with any evidence gives a documented
failure code and one clean line of cause and advice, and no rule trips over it; failures survive a JSON
round trip (the record on disk); every failure code is documented in docs/mcp.md."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import re
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import mcp_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from tooldeck.sources.mcp import errors
from tooldeck.sources.mcp.classify import RULES, classify
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.evidence import Evidence, HttpReply, clean_line
from tooldeck.sources.mcp.failures import Failure, Target

ROOT = Path(__file__).resolve().parents[2]
FAILURE_CODES = {rule.code for rule in RULES}
SECRET = "S3CR3T"  # in a URL's user info, query and fragment, and in the arguments: never in failure text
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_FACTORIES: list[Callable[[], BaseException]] = [
    lambda: FileNotFoundError(errno.ENOENT, "No such file or directory", "/opt/bin/uvx"),
    lambda: FileNotFoundError(errno.ENOENT, "No such file or directory", "/srv/work"),
    lambda: PermissionError(errno.EACCES, "Permission denied", "/opt/bin/server"),
    lambda: OSError(errno.ENOEXEC, "Exec format error", "/opt/bin/script"),
    lambda: OSError(errno.E2BIG, "Argument list too long"),
    lambda: OSError("no errno at all"),
    lambda: ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"),
    lambda: ConnectionResetError(errno.ECONNRESET, "reset"),
    lambda: BrokenPipeError(errno.EPIPE, "Broken pipe"),
    lambda: socket.gaierror(-2, "Name or service not known"),
    lambda: ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"),
    lambda: ssl.SSLCertVerificationError(1, "certificate verify failed"),
    lambda: TimeoutError("no MCP handshake within 3 s"),
    lambda: httpx2.ConnectTimeout("timed out"),
    lambda: httpx2.ReadTimeout("timed out"),
    lambda: httpx2.ConnectError("All connection attempts failed"),
    lambda: httpx2.RemoteProtocolError("Server disconnected without sending a response."),
    lambda: MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"),
    lambda: MCPError(mcp_types.INTERNAL_ERROR, "Server returned an error response"),
    lambda: MCPError(mcp_types.METHOD_NOT_FOUND, "Not Found"),
    lambda: MCPError(mcp_types.PARSE_ERROR, "Failed to parse JSON response"),
    lambda: MCPError(mcp_types.UNSUPPORTED_PROTOCOL_VERSION, "unsupported", {"supported": ["2099-01-01"]}),
    lambda: MCPError(mcp_types.UNSUPPORTED_PROTOCOL_VERSION, "unsupported", "not a dict"),
    lambda: McpConfigError(errors.CONFIG_ENV_MISSING, "mcp.json: server 'x' args[0]: variable X is not set"),
    lambda: anyio.EndOfStream(),
    lambda: anyio.BrokenResourceError(),
    lambda: anyio.ClosedResourceError(),
    lambda: asyncio.CancelledError(),
    lambda: ValueError("line one\nline two\x1b[31m red"),
    lambda: RuntimeError(""),
    lambda: KeyError("k"),
]


def _link(pair: tuple[BaseException, BaseException, bool]) -> BaseException:
    outer, inner, as_cause = pair
    if as_cause:
        outer.__cause__ = inner
    else:
        outer.__context__ = inner
    return outer


_leaves = st.sampled_from(_FACTORIES).map(lambda make: make())
_trees = st.recursive(_leaves, lambda children: st.one_of(
    st.lists(children, min_size=1, max_size=3).map(lambda members: BaseExceptionGroup("group", members)),
    st.tuples(children, children, st.booleans()).map(_link),
), max_leaves=6)

_statuses = st.one_of(st.sampled_from([200, 202, 301, 302, 307, 400, 401, 403, 404, 405, 410, 429, 500, 501, 502, 503]),
                      st.integers(100, 599))
_content_types = st.one_of(st.sampled_from(["application/json", "text/event-stream", "text/html; charset=utf-8", ""]),
                           st.text(max_size=40))
_challenges = st.one_of(
    st.sampled_from(['Bearer error="invalid_token", resource_metadata="http://h/.well-known/x"',
                     'Bearer error="insufficient_scope", scope="a b"', "Basic realm=x", ""]),
    st.text(max_size=120))
_methods = st.sampled_from(["initialize", "server/discover", "tools/list", "tools/call", ""])
_locations = st.one_of(st.text(max_size=60), st.just(f"https://login.example/cb?code={SECRET}"))
_replies = st.builds(HttpReply, method=_methods, url=st.text(max_size=40), status=_statuses,
                     reason=st.text(max_size=30), content_type=_content_types, www_authenticate=_challenges,
                     location=_locations)
_lines = st.text(max_size=80)
_evidence = st.builds(Evidence, replies=st.lists(_replies, max_size=4), noise=st.lists(_lines, max_size=3),
                      stderr=st.lists(_lines, max_size=5))
_urls = st.one_of(st.sampled_from(["http://127.0.0.1:8000/mcp", "https://tools.example/mcp", "http://[oops/mcp",
                                   "http://h:99999/mcp", "https://", f"https://me:{SECRET}@tools.example/mcp",
                                   f"http://127.0.0.1:9/mcp?api_key={SECRET}#{SECRET}",
                                   f"http://[::1]:8000/mcp?token={SECRET}", f"http://[oops/mcp?k={SECRET}"]),
                  st.text(max_size=40).map(lambda rest: "http://" + rest))
_targets = st.builds(
    Target, name=st.text(min_size=1, max_size=30), source=st.sampled_from(["/h/mcp.json", "/h/tooldeck.toml",
                                                                           "/h/mcp.json + /h/tooldeck.toml"]),
    transport=st.sampled_from(["stdio", "http"]),
    command_line=st.one_of(st.text(max_size=40), st.just(f"server --api-key {SECRET}")),
    command=st.one_of(st.none(), st.sampled_from(["uvx", "/opt/bin/uvx", "node"]), st.text(max_size=20)),
    cwd=st.one_of(st.none(), st.just("/srv/work")), url=st.one_of(st.none(), _urls), authorization=st.booleans(),
    connect_timeout_s=st.floats(0.01, 600), log_path=st.one_of(st.none(), st.just("/h/mcp/logs/x.log")))


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@settings(derandomize=True, max_examples=1500, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(exc=_trees, evidence=_evidence, target=_targets, stage=st.sampled_from(["connect", "list", "session"]))
def test_any_failure_classifies_cleanly(exc: BaseException, evidence: Evidence, target: Target, stage: str) -> None:
    handler = _Errors()
    logger = logging.getLogger("tooldeck.mcp")
    logger.addHandler(handler)
    try:
        failure = classify(exc, evidence, target, stage)  # type: ignore[arg-type]
    finally:
        logger.removeHandler(handler)
    assert not handler.records, [r.getMessage() for r in handler.records]  # no rule raised
    assert failure.code in FAILURE_CODES and failure.server == clean_line(target.name, 200)
    for text in (failure.summary, failure.advice, failure.text):
        assert text and not _CONTROL.search(text), text
        assert SECRET not in text, text
    assert Failure.from_dict(json.loads(json.dumps(failure.to_dict()))) == failure


def test_every_failure_code_is_documented() -> None:
    documented = set(re.findall(r"`(mcp\.[a-z_]+)`", (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")))
    assert documented >= FAILURE_CODES, sorted(FAILURE_CODES - documented)
    declared = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str) and v.startswith("mcp.")}
    assert documented >= declared, sorted(declared - documented)


def test_rules_cover_the_codes_once_and_end_with_a_catch_all() -> None:
    codes = [rule.code for rule in RULES]
    assert len(codes) == len(set(codes))
    assert codes[-1] == errors.SERVER_UNAVAILABLE
