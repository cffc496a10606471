"""Why an MCP server could not be used: `classify(exc, evidence, target, stage) -> Failure`.

The one place where a failure to start, reach, greet or list a server becomes a stable `mcp.*` code,
a cause and the user's next step (worded in `causes.py`). It is a table, `RULES`, read top to
bottom, first match wins. A rule looks at facts, never at message text: the exception types in the
whole chain (exception groups, causes, contexts), the MCP error code, and what the connection
observed (`Evidence`: the HTTP status and `WWW-Authenticate` of the replies, stdout lines that are
not MCP, the end of stderr). The order is the precedence: what the server said (an HTTP status,
stray output) explains a failure better than the generic error the SDK made of it, and a process
that could not be created at all explains it better than anything after.

Calls on a live session keep their own outcome classes (`outcomes.py`); only the HTTP refusal of a
call's credentials is classified here too.
"""

from __future__ import annotations

import errno
import logging
import socket
import ssl
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION

from tooldeck.sources.mcp import causes, causes_auth
from tooldeck.sources.mcp import errors as codes
from tooldeck.sources.mcp.challenge import bearer
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.evidence import Evidence, clean_line
from tooldeck.sources.mcp.failures import Facts, Failure, Stage, Target, describe, exception_chain

log = logging.getLogger("tooldeck.mcp")


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    when: Callable[[Facts], bool]
    say: Callable[[Facts], causes.Said]
    transient: bool = False
    """Trying again later may help without a fix (what the model is told)."""


def _status(low: int, high: int) -> Callable[[Facts], bool]:
    return lambda f: not f.stdio and f.reply is not None and low <= f.reply.status <= high


def _challenge_error(name: str) -> Callable[[Facts], bool]:
    return lambda f: f.challenge is not None and f.challenge.params.get("error") == name


def _cwd_missing(f: Facts) -> bool:
    return f.stdio and f.target.cwd is not None and any(
        isinstance(e, OSError) and e.filename == f.target.cwd for e in f.chain)


def _not_mcp(f: Facts) -> bool:
    if f.stdio:
        return f.stage == "connect" and bool(f.evidence.noise)
    return (f.reply is not None and not f.reply.speaks_mcp) or f.mcp_code == PARSE_ERROR


def _oauth_flow_failed(f: Facts) -> bool:
    if "mcp.client.auth" not in sys.modules:  # no OAuth code ran in this process: keep the SDK's auth unloaded
        return False
    from mcp.client.auth import OAuthFlowError

    return f.first(OAuthFlowError) is not None


_CLOSED_STREAM = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError)

RULES: tuple[Rule, ...] = (
    Rule(codes.CONFIG_ENV_MISSING, lambda f: f.first(McpConfigError) is not None, causes.env_missing),
    # A process that could not be created.
    Rule(codes.CWD_NOT_FOUND, _cwd_missing, causes.cwd),
    Rule(codes.COMMAND_NOT_FOUND, lambda f: f.stdio and f.first(FileNotFoundError) is not None,
         causes.command_missing),
    Rule(codes.COMMAND_NOT_EXECUTABLE, lambda f: f.stdio and (
        f.first(PermissionError) is not None or f.os_errno(errno.EACCES, errno.ENOEXEC) is not None),
         causes.not_executable),
    # tooldeck's OAuth flow failed (discovery, registration, the token endpoint: `auth.py`).
    Rule(codes.OAUTH_FAILED, _oauth_flow_failed, causes_auth.oauth_failed),
    # What an HTTP server answered (the SDK reduces it to a generic JSON-RPC error).
    Rule(codes.AUTH_REQUIRED, lambda f: _status(401, 401)(f) or _challenge_error("invalid_token")(f),
         causes_auth.auth_required),
    Rule(codes.AUTH_FORBIDDEN, lambda f: _status(403, 403)(f) or _challenge_error("insufficient_scope")(f),
         causes_auth.auth_forbidden),
    Rule(codes.HTTP_REDIRECT, _status(300, 399), causes.redirect),
    Rule(codes.HTTP_NOT_FOUND, lambda f: _status(404, 404)(f) or _status(410, 410)(f), causes.not_found),
    Rule(codes.HTTP_SERVER_ERROR, lambda f: _status(500, 599)(f) and f.reply is not None and f.reply.status != 501,
         causes.server_error, transient=True),
    Rule(codes.HTTP_ERROR, _status(400, 599), causes.http_error),  # 501 included: the URL takes no POST
    # Output that is not MCP; then a process that ended, or could not be created for another reason.
    Rule(codes.NOT_MCP, _not_mcp, causes.not_mcp),
    Rule(codes.MESSAGE_TOO_LARGE, lambda f: f.evidence.message_too_large is not None, causes.message_too_large),
    Rule(codes.PROCESS_EXITED, lambda f: f.stdio and (
        f.mcp_code == CONNECTION_CLOSED or f.first(*_CLOSED_STREAM) is not None), causes.exited),
    Rule(codes.SPAWN_FAILED, lambda f: f.stdio and f.stage == "connect" and f.first(OSError) is not None
         and f.first(TimeoutError) is None, causes.spawn),
    # The network below HTTP.
    Rule(codes.DNS_FAILED, lambda f: f.first(socket.gaierror) is not None, causes.dns),
    Rule(codes.CONNECTION_REFUSED, lambda f: f.first(ConnectionRefusedError) is not None, causes.refused,
         transient=True),
    Rule(codes.TLS_FAILED, lambda f: f.first(ssl.SSLError) is not None, causes.tls),
    # A live session whose listing failed, and time running out.
    Rule(codes.LISTING_FAILED, lambda f: f.stage == "list" and f.mcp_code != CONNECTION_CLOSED, causes.listing,
         transient=True),
    Rule(codes.CONNECT_TIMEOUT, lambda f: f.first(TimeoutError, httpx2.TimeoutException) is not None,
         causes.timed_out, transient=True),
    Rule(codes.NETWORK_ERROR, lambda f: not f.stdio and f.first(httpx2.TransportError, OSError) is not None,
         causes.network, transient=True),
    # What the MCP layer said.
    Rule(codes.PROTOCOL_INCOMPATIBLE, lambda f: f.mcp_code == UNSUPPORTED_PROTOCOL_VERSION, causes.incompatible),
    Rule(codes.CONNECTION_LOST, lambda f: f.mcp_code == CONNECTION_CLOSED, causes.lost, transient=True),
    Rule(codes.HANDSHAKE_FAILED, lambda f: f.stage == "connect" and f.first(MCPError) is not None, causes.handshake),
    Rule(codes.SERVER_UNAVAILABLE, lambda f: True, causes.unknown),
)


def classify(exc: BaseException, evidence: Evidence, target: Target, stage: Stage = "connect") -> Failure:
    """The failure a server's exception (with what its connection observed) stands for. Never raises."""
    reply = None if target.transport == "stdio" else evidence.decisive_reply()
    challenge = bearer(reply.www_authenticate) if reply is not None and reply.www_authenticate else None
    facts = Facts(exc, target, stage, evidence, exception_chain(exc), reply, challenge)
    for rule in RULES:
        try:
            if not rule.when(facts):
                continue
            summary, advice = rule.say(facts)
        except Exception:  # a bug in one rule must not hide the server's failure: log it, try the next rule
            log.exception("MCP server %s: failure rule %s raised while classifying %r", target.name, rule.code, exc)
            continue
        # The entry's own text (name, command, URL) is interpolated too: clean the whole, it reaches models.
        return Failure(rule.code, clean_line(target.name, 200), clean_line(summary, 2000), clean_line(advice, 4000),
                       rule.transient, _details(facts), time.time())
    raise AssertionError("unreachable: the last rule matches everything")  # pragma: no cover


def _details(f: Facts) -> dict[str, Any]:
    out: dict[str, Any] = {"stage": f.stage, "exception": describe(f.exc)}
    if f.reply is not None:
        out["http"] = f.reply.to_dict()
    if f.challenge is not None:
        out["challenge"] = {"scheme": f.challenge.scheme, "params": dict(f.challenge.params)}
        if "resource_metadata" in f.challenge.params:
            out["resource_metadata"] = f.challenge.params["resource_metadata"]
    if f.evidence.noise:
        out["stdout"] = list(f.evidence.noise)
    if f.evidence.stderr:
        out["stderr"] = list(f.evidence.stderr)
    if f.target.log_path and f.stdio:
        out["log"] = f.target.log_path
    return out
