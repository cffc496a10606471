"""`tooldeck mcp login SERVER`: the OAuth authorization-code flow with a browser and a loopback redirect.

A listener on 127.0.0.1 (an ephemeral port, or `oauth.callback_port`) takes the redirect; the
authorization URL is handed to `show` (the CLI prints it, and opens a browser when asked); the SDK's
provider (`auth.TooldeckOAuth`) discovers the servers, registers the client if needed, sends PKCE and
`resource`, exchanges the code and stores the tokens (`tokens.TokenFile`). What sets the flow off is
the server's own 401 during an MCP session opened up to `tools/list` (some servers ask only after
`initialize`); a server that answers without asking for a token is reported as such (`NotNeeded`),
nothing is stored. Scopes a server asked for with `insufficient_scope` since the last login (kept by
the runtime in the token file) are requested on top of the ones the 401 names.

A client registered by an earlier login is reused when its redirect URI is this login's (the same
port: the listener tries the previous port first); otherwise the client registers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from mcp import Client
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult

from tooldeck.sources.mcp.auth import TooldeckOAuth, provider_for, tokens_of
from tooldeck.sources.mcp.client import CLIENT_INFO
from tooldeck.sources.mcp.config import Endpoint, OAuthPlan, ServerConfig
from tooldeck.sources.mcp.evidence import Evidence
from tooldeck.sources.mcp.tokens import AuthState, TokenFile, token_path
from tooldeck.sources.mcp.transport import open_transport

CALLBACK_PATH = "/callback"
_MAX_REQUEST = 16 * 1024
_DONE_PAGE = ("<!doctype html><title>tooldeck</title><p>{text}</p><p>You can close this window and return to "
              "the terminal.</p>")


class NotNeeded(Exception):
    """The server answered without asking for a token: there is nothing to log in to."""


@dataclass(slots=True)
class Callback:
    """The loopback redirect target: one `GET /callback?code=…&state=…` completes `result`."""

    server: asyncio.Server
    port: int
    result: asyncio.Future[AuthorizationCodeResult]

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def wait(self) -> AuthorizationCodeResult:
        return await self.result


@dataclass(frozen=True, slots=True)
class Redirect:
    """What one request to the loopback listener means (`read_redirect`)."""

    status: int
    """The HTTP status to answer the browser with: 200 (signed in), 400 (an error or no code), 404."""
    text: str
    result: AuthorizationCodeResult | None = None
    error: str | None = None
    """The authorization server's `error` (and description), which ends the login."""


def read_redirect(request_line: str) -> Redirect:
    """The request line of a browser's request (`GET /callback?code=…&state=… HTTP/1.1`) → what it means.
    Total: any text gives a `Redirect`, never an exception."""
    parts = request_line.split(" ")
    if len(parts) != 3 or parts[0] != "GET":
        return Redirect(404, "Not the sign-in redirect.")
    try:
        target = urlsplit(parts[1])
    except ValueError:
        return Redirect(404, "Not the sign-in redirect.")
    if target.path != CALLBACK_PATH:
        return Redirect(404, "Not the sign-in redirect.")
    query = {k: v[0] for k, v in parse_qs(target.query).items()}
    if "error" in query:
        why = f"the authorization server answered error={query['error']}" + (
            f": {query['error_description']}" if query.get("error_description") else "")
        return Redirect(400, f"Sign-in failed: {why}", error=why)
    if not query.get("code"):
        return Redirect(400, "This redirect carries no authorization code.")
    return Redirect(200, "Signed in.", AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                                                iss=query.get("iss")))


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                  result: asyncio.Future[AuthorizationCodeResult]) -> None:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
        writer.close()
        return
    redirect = read_redirect(head.split(b"\r\n", 1)[0].decode("latin-1"))
    if not result.done():
        if redirect.error is not None:
            result.set_exception(OAuthFlowError(redirect.error))
        elif redirect.result is not None:
            result.set_result(redirect.result)
    await _answer(writer, redirect.status, redirect.text)


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = _DONE_PAGE.format(text=html.escape(text)).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                 f"{len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


@contextlib.asynccontextmanager
async def callback_listener(ports: list[int]) -> AsyncIterator[Callback]:
    """Listen on 127.0.0.1, on the first of `ports` that is free (0: any)."""
    result: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()
    server: asyncio.Server | None = None
    error: OSError | None = None
    for port in ports:
        try:
            server = await asyncio.start_server(lambda r, w: _handle(r, w, result), "127.0.0.1", port,
                                                limit=_MAX_REQUEST)
            break
        except OSError as exc:
            error = exc
    if server is None:
        raise error or OSError("no port to listen on")
    bound = server.sockets[0].getsockname()[1]
    try:
        yield Callback(server, bound, result)
    finally:
        server.close()
        await server.wait_closed()


def _previous_port(plan: OAuthPlan) -> int | None:
    info = tokens_of(plan).read().get("client_info")
    uris = info.get("redirect_uris") if isinstance(info, dict) else None
    if isinstance(uris, list) and uris and isinstance(uris[0], str):
        parts = urlsplit(uris[0])
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    return None


async def login(plan: OAuthPlan, show: Callable[[str], Awaitable[None]], *, timeout: float = 300.0) -> AuthState:
    """Run the browser flow for `plan` and store the tokens. Raises NotNeeded, OAuthFlowError, TimeoutError, or
    what the server's failure was (`first_cause` gives the exception that explains it)."""
    file = tokens_of(plan)
    previous = _previous_port(plan)
    ports = [plan.callback_port] if plan.callback_port else [p for p in (previous, 0) if p is not None]
    async with callback_listener(ports) as callback:
        if previous != callback.port and not plan.client_id:
            file.update(client_info=None)  # registered for another redirect URI: register again
        wanted = file.read().get("wanted_scope")
        file.update(tokens=None, expires_at=None)  # a login starts from no token
        provider = TooldeckOAuth(plan, redirect_uri=callback.redirect_uri, browser=show, callback=callback.wait,
                                 extra_scope=wanted if isinstance(wanted, str) else None)
        # The session a connection would open, up to the tool listing: some servers let `initialize` through
        # and ask for the token on the first request after it.
        transport = open_transport(Endpoint(plan.transport, url=plan.url), None, 30.0, Evidence(), auth=provider)
        async with asyncio.timeout(timeout), Client(transport, client_info=CLIENT_INFO) as client:
            await client.list_tools()
    state = file.state()
    if not state.logged_in:
        raise NotNeeded(f"{plan.url} answered without asking for a token")
    file.update(wanted_scope=None)
    return state


def first_cause(exc: BaseException) -> BaseException:
    """The exception that explains a failed login: an OAuth error inside the SDK's exception groups, else the
    first leaf."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for inner in e.exceptions:
                walk(inner)
        else:
            leaves.append(e)

    walk(exc)
    return next((e for e in leaves if isinstance(e, OAuthFlowError)), leaves[0] if leaves else exc)


async def client_credentials_login(plan: OAuthPlan) -> AuthState:
    """A token by a grant that needs no person (client credentials, identity assertion), got by opening a session
    as a connection would."""
    transport = open_transport(Endpoint(plan.transport, url=plan.url), None, 30.0, Evidence(),
                               auth=provider_for(plan))
    async with Client(transport, client_info=CLIENT_INFO) as client:
        await client.list_tools()
    return tokens_of(plan).state()


def sign_in_state(home: Path, server: ServerConfig) -> AuthState | None:
    """What `tooldeck mcp list` shows of a server's sign-in; None when OAuth does not apply to it."""
    if not server.uses_oauth or server.url is None:
        return None
    return TokenFile(token_path(home, server.name), server.url).state()


def logout(plan: OAuthPlan) -> bool:
    """Forget the server's tokens and client registration. True when something was stored."""
    return tokens_of(plan).remove()
