"""What each cause of an MCP server failure says: `(summary, advice)` for the rules of `classify.RULES`.

A summary follows "MCP server `NAME` " and names what went wrong with the evidence (command, URL,
HTTP status, challenge, the end of stderr); the advice is the user's next step and names the key to
change and the file it is in. Nothing here decides which cause applies. Server-provided text (a
challenge's description, a stdout or stderr line, a reason phrase) is quoted bounded and cleaned; it
is what the server would show the model anyway. The only I/O is one `os.path.exists`, which tells a
missing `#!` interpreter from a missing command.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl
from urllib.parse import urlsplit

import httpx2
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.evidence import HttpReply, clean_line, shown_url
from tooldeck.sources.mcp.failures import Facts, describe

Said = tuple[str, str]

_LAUNCHERS = {
    "uvx": "uv (it provides `uvx`: https://docs.astral.sh/uv/)", "uv": "uv (https://docs.astral.sh/uv/)",
    "npx": "Node.js (it provides `npx`: https://nodejs.org)", "node": "Node.js (https://nodejs.org)",
    "bunx": "Bun (https://bun.sh)", "bun": "Bun (https://bun.sh)", "deno": "Deno (https://deno.com)",
    "docker": "Docker (https://docs.docker.com/get-docker/)", "pipx": "pipx (https://pipx.pypa.io)",
}


def _where(f: Facts) -> str:
    return f"the entry of `{f.target.name}` in {f.target.source}"


def _refresh(f: Facts) -> str:
    return f"then run `tooldeck mcp refresh {f.target.name}`"


def _start(f: Facts) -> str:
    if f.stage == "list":
        return "could not list its tools"
    if f.stage == "session":
        return "stopped"
    return "could not start" if f.stdio else "could not be reached"


def _stderr(f: Facts) -> str:
    tail = f.evidence.stderr
    return f' (its stderr ends with: "{tail[-1]}")' if tail else " without writing anything to stderr"


def _url(f: Facts) -> str:
    return shown_url(f.target.url or "?")


def _hostname(f: Facts) -> str:
    try:
        return urlsplit(f.target.url or "").hostname or "?"
    except ValueError:  # the config checks only the scheme: `http://[oops` gets here
        return "?"


def _host(f: Facts) -> str:
    """`host:port` of the URL (the port the scheme implies when none is written)."""
    try:
        parts = urlsplit(f.target.url or "")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # an unparsable or out-of-range port
        return _url(f)
    return f"{parts.hostname or '?'}:{port}"


def _timeout(f: Facts) -> str:
    return f"{f.target.connect_timeout_s:g} s"


def _log(f: Facts) -> str:
    return f" Its stderr is logged in {f.target.log_path}." if f.target.log_path and f.stdio else ""


def env_missing(f: Facts) -> Said:
    error: McpConfigError = f.first(McpConfigError)
    return (f"{_start(f)}: {error.message}",
            f"Set the variable in the environment tooldeck runs in (or give it a default in {_where(f)}), "
            f"{_refresh(f)}.")


def cwd(f: Facts) -> Said:
    return (f"could not start: its working directory does not exist ({f.target.cwd})",
            f"Create the directory or fix `cwd` in {_where(f)} (a relative `cwd` is taken from the home dir).")


def command_missing(f: Facts) -> Said:
    error: FileNotFoundError = f.first(FileNotFoundError)
    path = str(error.filename or f.target.command or "")
    if os.sep in path and os.path.exists(path):
        return (f"could not start: {path} exists, but the interpreter named on its `#!` line was not found",
                f"Install that interpreter, or fix the `#!` line of {path}.")
    program = os.path.basename(path)
    install = f"Install {_LAUNCHERS[program]}, or" if program in _LAUNCHERS else "Install it, or"
    return (f"could not start: the command was not found ({path})",
            f"{install} set `command` to the program's full path in {_where(f)}; tooldeck looks commands up on "
            "the PATH of its own process.")


def not_executable(f: Facts) -> Said:
    error: OSError = f.first(PermissionError) or f.os_errno(errno.EACCES, errno.ENOEXEC)
    path = error.filename or f.target.command
    if error.errno == errno.ENOEXEC:
        return (f"could not start: {path} is not a program this system can run (a script needs a `#!` line)",
                f"Add a `#!` line to the script, or set `command` to its interpreter and the script in `args`, "
                f"in {_where(f)}.")
    return (f"could not start: the command is not executable ({path})",
            f"Make it executable (`chmod +x {path}`), or fix `command` in {_where(f)}.")


def spawn(f: Facts) -> Said:
    error: OSError = f.first(OSError)
    return (f"could not start: the process could not be created ({error.strerror or describe(error)})",
            f"Check `command`, `args` and `cwd` in {_where(f)}.")


def _status(reply: HttpReply | None) -> str:
    if reply is None:
        return "an HTTP error"
    return f"HTTP {reply.status}{' ' + clean_line(reply.reason, 80) if reply.reason else ''}"


def redirect(f: Facts) -> Said:
    location = shown_url(f.reply.location) if f.reply and f.reply.location else "another address"
    return (f"could not be reached: {_url(f)} redirects to {location} ({_status(f.reply)}), and tooldeck "
            "follows a redirect only within the same origin",
            f"If {location} is the server's MCP endpoint, set `url` to it in {_where(f)}.")


def not_found(f: Facts) -> Said:
    return (f"could not be reached: {_url(f)} answered {_status(f.reply)}",
            f"Check `url` in {_where(f)}: it must be the server's streamable-HTTP MCP endpoint (often ending in "
            "`/mcp`), or, for a server with the legacy SSE transport, its SSE endpoint (often `/sse`) with "
            "`\"type\": \"sse\"`.")


def server_error(f: Facts) -> Said:
    return (f"failed: {_url(f)} answered {_status(f.reply)}",
            f"The server, or a proxy in front of it, is failing: check its logs or status page, {_refresh(f)}.")


_HTTP_ADVICE = {
    400: "The server rejected the MCP request as malformed; check its documentation for required headers "
         "(`headers` in {where}) and protocol version.",
    405: "The URL does not accept MCP requests (POST): check `url` in {where}; tooldeck needs the server's "
         "streamable-HTTP endpoint, SSE-only servers are not supported.",
    501: "The URL does not accept MCP requests (POST): check `url` in {where}; tooldeck needs the server's "
         "streamable-HTTP endpoint, SSE-only servers are not supported.",
    406: "The server does not accept MCP's content types: check that `url` in {where} is an MCP endpoint.",
    415: "The server does not accept MCP's content types: check that `url` in {where} is an MCP endpoint.",
    429: "The server is rate-limiting tooldeck: wait, then run `tooldeck mcp refresh {name}`.",
}


def http_error(f: Facts) -> Said:
    template = _HTTP_ADVICE.get(f.reply.status if f.reply else 0,
                                "Check `url` and `headers` in {where} against the server's documentation.")
    return (f"refused the request: {_url(f)} answered {_status(f.reply)}",
            template.format(where=_where(f), name=f.target.name))


def not_mcp(f: Facts) -> Said:
    if f.stdio:
        ended = " and then exited" if f.mcp_code == CONNECTION_CLOSED else ""
        line = f.evidence.noise[0] if f.evidence.noise else "output"
        return (f"does not speak MCP: the process wrote \"{line}\" on stdout, which is not an MCP message{ended}",
                f"Check that `command` and `args` in {_where(f)} start the server in stdio mode (some servers need "
                "an argument such as `stdio` or `--transport stdio`) and that it logs to stderr, not stdout.")
    kind = clean_line(f.reply.content_type, 100) if f.reply and f.reply.content_type else "a body that is not JSON"
    return (f"is not an MCP endpoint: {_url(f)} answered with {kind} instead of MCP JSON",
            f"Check `url` in {_where(f)}: it must be the server's streamable-HTTP MCP endpoint (often ending in "
            "`/mcp`), not a web page.")


def message_too_large(f: Facts) -> Said:
    limit = f.evidence.message_too_large
    if f.stdio:
        return (f"wrote a line of more than {limit} bytes on stdout without its end (a message that large, or "
                "output that is not MCP), so tooldeck closed the connection",
                f"Check what the server writes on stdout (it must log to stderr); run its `command` and `args` from "
                f"{_where(f)} in a terminal to see it.{_log(f)}")
    return (f"answered with a message of more than {limit} bytes, so tooldeck stopped reading it and closed the "
            "connection",
            f"Check the server: one MCP message over {limit} bytes is not taken (a large file belongs in a resource, "
            "read in parts), and a body that never ends is a broken server.")


def exited(f: Facts) -> Said:
    when = " during startup" if f.stage == "connect" else ""
    return (f"{_start(f)}: the process exited{when}{_stderr(f)}",
            f"Run its `command` and `args` from {_where(f)} in a terminal to see why.{_log(f)}")


def dns(f: Facts) -> Said:
    error: socket.gaierror = f.first(socket.gaierror)
    return (f"could not be reached: the host name {_hostname(f)} could not be resolved ({error.strerror or error})",
            f"Check the host in `url` in {_where(f)}, and the network and DNS of the machine tooldeck runs on.")


def refused(f: Facts) -> Said:
    return (f"could not be reached: nothing accepts connections at {_host(f)} (connection refused)",
            f"Start the server, or fix the host and port of `url` in {_where(f)}.")


def tls(f: Facts) -> Said:
    error: ssl.SSLError = f.first(ssl.SSLError)
    if isinstance(error, ssl.SSLCertVerificationError):
        why = clean_line(getattr(error, "verify_message", None) or getattr(error, "reason", None) or str(error), 200)
        return (f"could not be reached: its TLS certificate was not accepted ({why})",
                "If the server uses a private or self-signed certificate authority, point SSL_CERT_FILE (or "
                "SSL_CERT_DIR) at its CA certificate in the environment tooldeck runs in; otherwise the server's "
                f"certificate must be fixed (it must be valid for the host in `url`, in {_where(f)}).")
    why = clean_line(str(getattr(error, "reason", None) or error), 200)  # `reason` only when ssl itself raised
    return (f"could not be reached: the TLS handshake with {_host(f)} failed ({why})",
            f"If the server speaks plain HTTP, use `http://` in `url`, in {_where(f)}; otherwise check its TLS setup.")


def timed_out(f: Facts) -> Said:
    if f.stdio:
        return (f"did not answer: the process started but did not complete the MCP handshake within "
                f"{_timeout(f)}{_stderr(f) if f.evidence.stderr else ''}",
                f"If it is slow to start (a first `uvx` or `npx` run downloads packages), raise `connect_timeout_s` "
                f"in {_where(f)}; otherwise run its `command` and `args` in a terminal and check that it serves MCP on "
                f"stdio.{_log(f)}")
    if f.first(httpx2.ConnectTimeout) is not None:
        return (f"could not be reached: no connection to {_host(f)} within {_timeout(f)}",
                f"Check that the server is up and reachable from this machine (a firewall may drop the "
                f"connection), {_refresh(f)}.")
    return (f"did not answer: {_url(f)} sent no MCP answer within {_timeout(f)}",
            f"Check that the server is up and not overloaded, or raise `connect_timeout_s` in {_where(f)}.")


def network(f: Facts) -> Said:
    error = f.first(httpx2.TransportError, OSError)
    return (f"could not be reached: the connection to {_host(f)} failed ({describe(error)})",
            f"Check that the server is running and reachable from this machine, {_refresh(f)}.")


def incompatible(f: Facts) -> Said:
    error: MCPError = f.first(MCPError)
    supported = error.data.get("supported") if isinstance(error.data, dict) else None
    offers = f" (it offers {', '.join(map(str, supported))})" if isinstance(supported, list) else ""
    return (f"shares no MCP protocol version with tooldeck{offers}",
            "Update the server or tooldeck so that they share a protocol version.")


def lost(f: Facts) -> Said:
    return (f"{_start(f)}: the connection closed{' during the MCP handshake' if f.stage == 'connect' else ''}",
            f"Check the server's logs, {_refresh(f)}.")


def listing(f: Facts) -> Said:
    if f.first(TimeoutError) is not None:
        why = f"tools/list did not answer within {_timeout(f)}"
    elif (error := f.first(MCPError)) is not None:
        why = f"tools/list failed (JSON-RPC {error.code}: {clean_line(error.message, 200)})"
    else:
        why = f"tools/list failed ({describe(f.exc)})"
    return (f"could not list its tools: {why}",
            f"The server started but did not list its tools; check its logs, {_refresh(f)}.{_log(f)}")


def handshake(f: Facts) -> Said:
    error: MCPError = f.first(MCPError)
    return (f"rejected the MCP handshake (JSON-RPC {error.code}: {clean_line(error.message, 200)})",
            f"Check the server's documentation and logs, {_refresh(f)}.{_log(f)}")


def unknown(f: Facts) -> Said:
    return (f"{_start(f)}: {describe(f.exc)}",
            f"Check the server and {_where(f)}, {_refresh(f)}.{_log(f)}")


